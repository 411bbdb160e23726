// What the AVX2 kernels of the grouped layouts share (grouped_gemm_avx2_fma.cpp
// for Q8_0 / Q4_0, kquant_gemm_avx2_fma.cpp for the K-quants): one vector
// per group of 8 columns, one 32-bit lane per column.
//
// Included by those AVX2 TUs only (both built with the same flags), so
// their inline copies are the same code.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/grouped_layout.hpp"

namespace swiglu::detail {

// Keeps a running sum in a register at this point: without it GCC computes
// every product of a block first (reassociating the chain of adds into a
// tree) and spills them to the stack.
inline void in_register(__m256i& v) { asm("" : "+x"(v)); }

inline __m256i load(const std::uint8_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// 4 activation quants (inputs 4 i .. 4 i + 3) of an ActBlock or ActBlockK,
// broadcast to every column lane.
template <class Block>
inline __m256i broadcast4(const Block& a, int i) {
    std::int32_t v;
    std::memcpy(&v, a.qs + 4 * i, sizeof(v));
    return _mm256_set1_epi32(v);
}

// Group g's 8 columns of one output row (fewer in a last, partial group).
inline void store_group(__m256 v, float* row, std::int64_t g, std::int64_t n) {
    const std::int64_t c0 = g * kGroupColumns;
    if (n - c0 >= kGroupColumns) {
        _mm256_storeu_ps(row + c0, v);
        return;
    }
    alignas(32) float lanes[kGroupColumns];
    _mm256_store_ps(lanes, v);
    std::memcpy(row + c0, lanes, static_cast<std::size_t>(n - c0) * sizeof(float));
}

}  // namespace swiglu::detail
