// What the AVX-512 VNNI kernels of both grouped layouts share
// (grouped_gemm_avx512_vnni.cpp for Q8_0 / Q4_0, kquant_gemm_avx512_vnni.cpp
// for the K-quants): a zmm holds two column groups, group g in lanes 0-7 and
// its partner in 8-15.
//
// Included by those AVX-512 VNNI TUs only (both built with the same flags),
// so their inline copies are the same code.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/grouped_layout.hpp"

namespace swiglu::detail {

// 32 bytes of a group's record at p and the same 32 of its partner's at
// p + partner (0: a last group alone, whose upper lanes are then computed
// and never stored).
inline __m512i load_pair(const std::uint8_t* p, std::int64_t partner) {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + partner));
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

// 4 activation quants (inputs 4 i .. 4 i + 3) of an ActBlock or ActBlockK,
// broadcast to every column lane.
template <class Block>
inline __m512i broadcast4(const Block& a, int i) {
    std::int32_t v;
    std::memcpy(&v, a.qs + 4 * i, sizeof(v));
    return _mm512_set1_epi32(v);
}

// The 16 columns' f16 values (scales) at p and p + partner, as f32.
inline __m512 pair_f16(const std::uint8_t* p, std::int64_t partner) {
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + partner));
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1));
}

// Lanes 0-7 to columns [c0, c0 + 8) of one output row and lanes 8-15 to
// [c1, c1 + 8) (c1 = c0 + 8: one store of 16), clipped to n: a masked
// store touches no lane past it (the lanes of a last group alone, c1 >= n,
// are never stored).
inline void store_pair(__m512 v, float* row, std::int64_t c0, std::int64_t c1, std::int64_t n) {
    const auto lanes = [n](std::int64_t c) {
        const std::int64_t left = n - c;
        return left >= kGroupColumns ? 0xFFu : left > 0 ? (1u << left) - 1 : 0u;
    };
    if (c1 == c0 + kGroupColumns) {
        _mm512_mask_storeu_ps(row + c0, static_cast<__mmask16>(lanes(c0) | lanes(c1) << 8), v);
        return;
    }
    _mm512_mask_storeu_ps(row + c0, static_cast<__mmask16>(lanes(c0)), v);
    if (c1 < n)
        _mm512_mask_storeu_ps(row + c1 - kGroupColumns, static_cast<__mmask16>(lanes(c1) << 8), v);
}

}  // namespace swiglu::detail
