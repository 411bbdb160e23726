// A decode row's share of a plain read of the same bytes, the two timed
// interleaved (interleaved_timing.hpp) so that the host's drift cancels.
//
// Why beside the row and not against the probe: the probe keeps the best
// of its rounds, and on a shared host the DRAM rate moves 40-80 % within an
// hour (docs/measurements.md), so a row's % of the probe swings with the
// moment the row ran, not with the code. Here each round times a batch of
// the row's calls and a batch of reads right after it: the ratio is the
// row's against what a plain read reached at that moment.
//
// The read: `threads` threads (the caller and threads kept for the
// purpose, so no thread is started per read) each read their slice of a
// window of the row's byte count with the probe's read kernel and its best
// stream count (read_probe.hpp), in a 1 GiB huge-page buffer; successive
// reads take successive windows, so no read finds its bytes in a cache.
#pragma once

#include <benchmark/benchmark.h>

#include <functional>

namespace swiglu_bench {

struct ReadShare {
    double pct = 0, pct_p10 = 0, pct_p90 = 0;  // 100 * our bytes/s / the read's
    double gbs = 0;                            // the read's own rate (median of its batches)
    bool noisy = false;                        // the ratios' spread stayed over 20 %
    double others = -1;                        // as PairTiming::others
};

// `ours`: one call of the row, reading `bytes` bytes of weights from DRAM
// on `threads` threads; `streams`: the read's streams per thread (the
// probe's best). Zero share (pct 0) when the buffer cannot be had or the
// window would not fit it.
ReadShare read_share(const std::function<void()>& ours, double bytes, int threads, int streams);

// read_share for a row, as its counters (none when it could not be had):
//   read_pct     100 * the row's bytes/s / the read's, from the median of
//                the rounds' time ratios (read_pct_p10, _p90: their spread;
//                read_noisy = 1 when it stayed over 20 %)
//   read_GBs     the read's own rate beside the row
void add_read_counters(benchmark::State& st, const std::function<void()>& ours, double bytes,
                       int threads);

}  // namespace swiglu_bench
