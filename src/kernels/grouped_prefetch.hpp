// Software prefetch for the grouped kernels' weight streams, the same on
// every ISA (SSE's prefetcht0). A decode streams each weight once, and with
// this much arithmetic per cache line the out-of-order window runs too few
// misses ahead to keep DRAM busy: one core read Q4_0 from DRAM at about
// 70 % of a plain read of the same buffer without it, 82-89 % with it
// (docs/measurements.md, "The grouped kernels ... alone"). Q8_0 has twice
// the bytes per instruction, so twice the distance.
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

// Every 64-byte line of the record kPrefetchDistance ahead in its stream.
template <GroupedFormat kFormat>
inline void prefetch_ahead(const std::uint8_t* record) {
    for (std::size_t o = 0; o < record_bytes(kFormat); o += 64)
        _mm_prefetch(reinterpret_cast<const char*>(record + kPrefetchDistance<kFormat> + o),
                     _MM_HINT_T0);
}

}  // namespace swiglu::detail
