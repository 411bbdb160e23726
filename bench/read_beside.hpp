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
// window of the row's byte count, in a 1 GiB huge-page buffer, with the
// probe's read kernel at whichever of 1, 2 or 4 streams per thread reads
// that window fastest (read_probe.hpp). The reads take `windows` windows
// in turn, so that they come from DRAM: the MoE rows pass their number of
// draws (each call's experts were last read that many calls before, as the
// read's window was), the dense rows kFreshWindows (as many as fit in the
// buffer). A dense row re-reads its one set of weights. This host's L3
// holds part of a llama7b q4_0 block's 76 MB for a plain read (one 76 MB
// window read over and over ran at 1.6x the rate of fresh ones, 2 threads),
// but not measurably for our decode: the block against 2 or 4 copies of it
// called in turn, in one process, 0.96-1.04x (q4_0, 2 threads, 6 runs; q8_0,
// int8, q4_k 0.98-1.01x). So the dense rows are left re-reading one block
// (copies would cost the profile ~80 s of packing: docs/measurements.md,
// "2026-12-06 (twenty-first session)").
#pragma once

#include <benchmark/benchmark.h>

#include <functional>
#include <string>

namespace swiglu_bench {

struct ReadShare {
    double pct = 0, pct_p10 = 0, pct_p90 = 0;  // 100 * our bytes/s / the read's
    double gbs = 0;                            // the read's own rate (median of its batches)
    int streams = 0;                           // the read's streams per thread
    bool doubtful = false;                     // PairTiming::doubtful of the two
};

// As many windows as fit in the buffer.
inline constexpr int kFreshWindows = 0;

// `ours`: one call of the row, reading `bytes` bytes of weights from DRAM
// on `threads` threads; the reads cycle through `windows` windows of that
// size (kFreshWindows: as many as fit). Zero share (pct 0) when the buffer
// cannot be had or one window would not fit it.
ReadShare read_share(const std::function<void()>& ours, double bytes, int threads, int windows);

// read_share for a row, as its counters (none when it could not be had),
// measured once per `key` (Google Benchmark calls a row's function again
// while it sizes the iterations; the later calls reuse the first share):
//   read_pct     100 * the row's bytes/s / the read's, from the median of
//                the rounds' time ratios (read_pct_p10, _p90: their spread;
//                read_noisy = 1 when it stayed over 20 % or the host was
//                busy: ReadShare::doubtful)
//   read_GBs     the read's own rate beside the row; read_streams its
//                streams per thread
void add_read_counters(benchmark::State& st, const std::string& key,
                       const std::function<void()>& ours, double bytes, int threads, int windows);

}  // namespace swiglu_bench
