// Software prefetch for the grouped kernels' weight streams, the same on
// every ISA (SSE's prefetcht0). A decode streams each weight once, and with
// this much arithmetic per cache line the out-of-order window runs too few
// misses ahead to keep DRAM busy: one core read Q4_0 from DRAM at about
// 70 % of a plain read of the same buffer without it, 82-89 % with it
// (docs/measurements.md, "The grouped kernels ... alone"). Q8_0 has twice
// the bytes per instruction, so twice the distance.
//
// The K formats keep 1024 bytes, under one record (1184-1680): 1, 2 and 4
// records ahead gained nothing consistent (1 record: Q5_K and Q6_K faster on
// one thread, every format slower on two). llama7b, 1 token, GB/s on 1 / 2 threads,
// one run each, this VM (2 cores of an AMD EPYC, DRAM probe 39-44 / 78-81):
//   1024 bytes  Q4_K 31.6 / 42.0  Q5_K 24.1 / 46.3  Q6_K 18.1 / 39.5
//   1 record    Q4_K 26.6 / 31.2  Q5_K 27.9 / 35.7  Q6_K 22.4 / 34.2
//   2 records   Q4_K 30.7 / 34.7  Q5_K 28.0 / 32.3  Q6_K 19.8 / 30.2
//   4 records   Q4_K 22.7 / 35.6  Q5_K 20.3 / 30.6  Q6_K 18.0 / 30.1
//
// Included by per-ISA TUs only; everything here is inline.
#pragma once

#include <xmmintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/grouped_layout.hpp"

namespace swiglu::detail {

template <GroupedFormat kFormat>
constexpr std::size_t kPrefetchDistance = kFormat == GroupedFormat::q8_0 ? 2048 : 1024;

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

// Where a prefetch `at` bytes past a record goes.
inline const std::uint8_t* prefetch_target(const std::uint8_t* record, std::int64_t at,
                                           PrefetchSpan span) {
    return record + at + (at >= span.left ? span.jump : 0);
}

// Every 64-byte line of the record kPrefetchDistance ahead in its stream
// (prefetch_target: or in the next pass's).
template <GroupedFormat kFormat>
inline void prefetch_ahead(const std::uint8_t* record, PrefetchSpan span) {
    for (std::size_t o = 0; o < record_bytes(kFormat); o += 64) {
        const auto at = static_cast<std::int64_t>(kPrefetchDistance<kFormat> + o);
        _mm_prefetch(reinterpret_cast<const char*>(prefetch_target(record, at, span)), _MM_HINT_T0);
    }
}

}  // namespace swiglu::detail
