// Software prefetch for the grouped kernels' weight streams, the same on
// every ISA (SSE's prefetcht0). A decode streams each weight once, and with
// this much arithmetic per cache line the out-of-order window runs too few
// misses ahead to keep DRAM busy: one core read Q4_0 from DRAM at about
// 70 % of a plain read of the same buffer without it, 82-89 % with it
// (docs/measurements.md, "The grouped kernels ... alone").
//
// How far: what a stream consumes in about one DRAM latency under load.
// At DRAM's rate every format streams about the same bytes per stream (a
// core reads 4 of them side by side, whatever the record), so one distance
// in bytes serves them all; it was 1024 (Q8_0 2048, on the view that its
// twice as many bytes per instruction wanted twice the distance). 2048 for
// every format, against 1024, the block in one process switching call by
// call (medians of 12-30 rounds, llama7b unless named; 2 / 1 threads):
//   1 token   Q4_0 1.06-1.09x / 1.06-1.07x   Q4_K 1.03-1.04x / 1.04x
//             Q5_K 1.03x / 1.05x   Q6_K 0.99x / 1.01x
//             Q8_0 (its 2048 against 1536) 0.99x / 1.00x
//             mixtral's experts Q4_0 1.10x, OLMoE's 1.09x, qwen3moe's 1.06x
//   4 tokens  Q4_0 1.08x / 1.10x   Q6_K 1.06x;   16 tokens Q4_0 1.00x,
//             Q4_K 1.05x, Q6_K 1.14x;   128-512 tokens 0.98-1.04x (compute)
// on a quiet host (2-thread decode at 53-59 GB/s); with the bandwidth taken
// by other tenants (32-34 GB/s) both distances read the same (0.98-1.01x).
// 3072 and 4096 read level with 1024 or below it (Q8_0 0.91-0.96x), so
// 2048 is near the top of a broad peak, not its edge. Measured on Zen 5;
// the AVX2 Q4_0 kernel alone there 1.06x, on no AVX2-only CPU
// (docs/measurements.md, "One prefetch distance").
//
// Included by per-ISA TUs only; everything here is inline.
#pragma once

#include <xmmintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/grouped_layout.hpp"

namespace swiglu::detail {

constexpr std::int64_t kPrefetchDistance = 2048;

// Where a record's stream ends, and where the stream is that the next pass
// reads in its place. A pass reads a few column groups' streams side by
// side and the next pass the groups after them, so a prefetch at or past
// the end of its stream is taken `jump` bytes further on, into that stream.
// Each pass then starts on prefetched lines; before, each of its streams'
// first kPrefetchDistance bytes came from DRAM on demand, which short
// streams felt most: qwen3moe's and OLMoE's experts (Q4_0 streams of 3.5 and
// 9 KiB, K-quant streams of 3-8 super-blocks) decode 1.05-1.45x (Q4_0,
// Q8_0) and 1.2-1.85x (K formats) faster with it, llama7b's K formats
// 1.0-1.5x, its Q4_0 and Q8_0 within the noise
// (docs/measurements.md, "Prefetch across passes"). Past a tile's last pass
// the lines are some other tile's or no one's: a prefetch never faults.
struct PrefetchSpan {
    std::int64_t left;  // bytes from the record to its stream's end
    std::int64_t jump;  // from past the end to the next pass's stream
};

// Record b (of `record` bytes) of streams `stride` bytes long, the next pass
// starting `streams_on` streams after this one's.
inline PrefetchSpan next_pass_span(std::int64_t b, std::size_t record, std::int64_t stride,
                                   std::int64_t streams_on) {
    return {stride - b * static_cast<std::int64_t>(record), (streams_on - 1) * stride};
}

// The streams_on of next_pass_span for a pass of `streams` groups `step`
// apart (strided_passes below): the next pass's stream is the next group
// when strided, `streams` groups on when adjacent (step 1).
constexpr std::int64_t streams_to_next_pass(std::int64_t step, std::int64_t streams) {
    return step > 1 ? 1 : streams;
}

// Where a prefetch `at` bytes past a record goes.
inline const std::uint8_t* prefetch_target(const std::uint8_t* record, std::int64_t at,
                                           PrefetchSpan span) {
    return record + at + (at >= span.left ? span.jump : 0);
}

// Which column groups a pass reads side by side. A tile's groups lie one
// after another, each one stream (grouped_layout.hpp). Passes of `streams`
// adjacent groups (g, g + 1, ...) start `streams` new streams every pass,
// each a group long (Q4_0 18 KiB at k = 4096, Q4_K 19 KiB), and the next
// pass's streams sit `streams` groups on. Strided passes read groups i,
// i + step, i + 2 step, ... (step = groups / streams), and pass i + 1 reads
// the groups just after them, so each stream runs on through step groups'
// records, a quarter of the tile with 4 streams, and a prefetch past a
// group's end falls on the group the same stream reads next
// (next_pass_span with streams_on = 1). Which groups share a pass never
// changes what a column computes: the bits stay the same. Decode, the
// block in one process switching call by call (Zen 5; 2 / 1 threads):
// llama7b Q4_0 1.14x / 1.11x, Q4_K 1.10-1.13x / 1.00-1.06x, Q8_0 1.05x /
// 1.04x, Q5_K 0.96-1.05x / 0.87-1.04x, Q6_K 1.00-1.04x / 0.91-0.95x;
// qwen3moe's experts Q4_0 1.05x / 1.07x, Q4_K 1.20x / 1.14x, Q5_K 1.16x,
// Q6_K 1.10x / 1.07x. The kernels alone on one core: AVX-512 Q4_0 1.22x,
// Q8_0 1.11x, Q4_K 1.01x, Q5_K 0.98-1.06x, Q6_K 0.91-0.94x; AVX2 Q4_0
// 1.48x, Q8_0 1.15x, Q4_K 1.18x, Q6_K 1.04x. The AVX-512 passes over one
// pair (2 streams: Q8_0's 5-8 rows, Q5_K's and Q6_K's 3-6) strided too:
// llama7b Q8_0 at 5-8 tokens 1.01-1.10x (0.98x on one thread), Q6_K at
// 3-5 tokens 1.08-1.22x, Q5_K 1.03-1.04x; experts Q8_0 at 128 tokens
// 1.08x, Q6_K at 64 1.18x. One rule for every format: Q6_K loses ~7 % on
// one thread of a dense block at one token and gains on two and in
// experts (docs/measurements.md, "Strided passes").
// Calls pass(first, step) for each strided pass and returns the groups
// they cover (from 0); none when a step would be under 2 (adjacent passes
// then read the same groups).
template <class Pass>
inline std::int64_t strided_passes(std::int64_t groups, std::int64_t streams, Pass&& pass) {
    const std::int64_t step = groups / streams;
    if (step < 2) return 0;
    for (std::int64_t first = 0; first < step; ++first) pass(first, step);
    return step * streams;
}

// Every 64-byte line of the record kPrefetchDistance ahead in its stream
// (prefetch_target: or in the next pass's).
template <GroupedFormat kFormat>
inline void prefetch_ahead(const std::uint8_t* record, PrefetchSpan span) {
    for (std::size_t o = 0; o < record_bytes(kFormat); o += 64) {
        const std::int64_t at = kPrefetchDistance + static_cast<std::int64_t>(o);
        _mm_prefetch(reinterpret_cast<const char*>(prefetch_target(record, at, span)), _MM_HINT_T0);
    }
}

}  // namespace swiglu::detail
