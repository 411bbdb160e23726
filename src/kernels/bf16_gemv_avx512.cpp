// The bf16 one-row kernel for AVX-512 (bf16_gemv.hpp). A column block's 4
// segments are read side by side, one 256-byte step (2 inputs x 64
// columns, 4 vectors) of each at a time: 4 DRAM streams per core, as the
// panel kernels' decode reads 4 panels, each line prefetched
// kPanelPrefetchBytes ahead. Each vector's lanes hold one column's 2
// inputs: shifted left 16 bits the even one is an f32, masked the odd
// one; 16 accumulators (4 segments x 4 vectors of 16 columns).
//
// GCC 12's _mm512_slli_epi32 starts from a deliberately undefined register
// and then warns that it "may be used uninitialized" once inlined (GCC bug
// 105593): silenced for this TU only.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "kernels/bf16_gemv.hpp"
#include "kernels/panel_gemm.hpp"

namespace swiglu::detail {

namespace {

constexpr int kVectors = static_cast<int>(kBf16Block / 16);
constexpr std::int64_t kStepElements = 2 * kBf16Block;  // one pair of inputs of a block
constexpr std::int64_t kBlockElements = kBf16Inputs * kBf16Block;

// One step (inputs i, i + 1 at x) of a segment whose step starts at w.
inline void step(const std::uint16_t* w, const std::uint16_t* x, __m512 (&acc)[kVectors]) {
    std::uint32_t pair;
    std::memcpy(&pair, x, sizeof(pair));
    const __m512i both = _mm512_set1_epi32(static_cast<int>(pair));
    const __m512i high = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
    const __m512 even = _mm512_castsi512_ps(_mm512_slli_epi32(both, 16));
    const __m512 odd = _mm512_castsi512_ps(_mm512_and_si512(both, high));
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
        _mm_prefetch(reinterpret_cast<const char*>(w + 32 * v) + kPanelPrefetchBytes, _MM_HINT_T0);
        const __m512i lanes = _mm512_loadu_si512(w + 32 * v);
        acc[v] = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(lanes, 16)), even, acc[v]);
        acc[v] = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(lanes, high)), odd, acc[v]);
    }
}

// One row over the column block at `block` (kb blocks of 32 inputs); x's
// last block comes from `x_last` (zero-padded) when k is not a multiple of
// 32.
void column_block(const std::uint16_t* block, std::int64_t kb, const std::uint16_t* x,
                  const std::uint16_t* x_last, float* y, std::int64_t columns) {
    std::int64_t b[kBf16Segments], end[kBf16Segments];
    for (int j = 0; j < kBf16Segments; ++j) {
        b[j] = bf16_segment_begin(kb, j);
        end[j] = bf16_segment_begin(kb, j + 1);
    }
    auto x_of = [&](std::int64_t blk) { return blk + 1 == kb ? x_last : x + blk * kBf16Inputs; };
    __m512 acc[kBf16Segments][kVectors];
#pragma GCC unroll 4
    for (int j = 0; j < kBf16Segments; ++j)
#pragma GCC unroll 4
        for (int v = 0; v < kVectors; ++v) acc[j][v] = _mm512_setzero_ps();
    // Blocks of all 4 segments side by side while each has one, then the
    // longer segments' last blocks (lengths differ by at most one).
    while (b[0] < end[0] && b[1] < end[1] && b[2] < end[2] && b[3] < end[3]) {
        const std::uint16_t* w[kBf16Segments];
        const std::uint16_t* xs[kBf16Segments];
#pragma GCC unroll 4
        for (int j = 0; j < kBf16Segments; ++j) {
            w[j] = block + b[j] * kBlockElements;
            xs[j] = x_of(b[j]);
            ++b[j];
        }
        for (std::int64_t p = 0; p < kBf16Inputs / 2; ++p)
#pragma GCC unroll 4
            for (int j = 0; j < kBf16Segments; ++j)
                step(w[j] + p * kStepElements, xs[j] + 2 * p, acc[j]);
    }
    for (int j = 0; j < kBf16Segments; ++j)
        for (; b[j] < end[j]; ++b[j]) {
            const std::uint16_t* w = block + b[j] * kBlockElements;
            const std::uint16_t* xs = x_of(b[j]);
            for (std::int64_t p = 0; p < kBf16Inputs / 2; ++p)
                step(w + p * kStepElements, xs + 2 * p, acc[j]);
        }
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
        const __m512 sum =
            _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(acc[0][v], acc[1][v]), acc[2][v]), acc[3][v]);
        const std::int64_t left = columns - 16 * v;
        if (left >= 16) {
            _mm512_storeu_ps(y + 16 * v, sum);
        } else if (left > 0) {
            _mm512_mask_storeu_ps(y + 16 * v, static_cast<__mmask16>((1u << left) - 1), sum);
        }
    }
}

void gemv(const std::uint16_t* tile, std::int64_t k, std::int64_t n, const std::uint16_t* x,
          std::int64_t ldx, std::int64_t rows, float* y, std::int64_t ldy) noexcept {
    const std::int64_t kp = bf16_padded_k(k), kb = kp / kBf16Inputs;
    for (std::int64_t r = 0; r < rows; ++r) {
        const std::uint16_t* xr = x + r * ldx;
        // x's last block, zero past k (its weights are zero there: 0 * 0,
        // never 0 * whatever lies past the row).
        alignas(64) std::uint16_t x_last[kBf16Inputs] = {};
        const std::int64_t last = (kb - 1) * kBf16Inputs;
        std::memcpy(x_last, xr + last, static_cast<std::size_t>(k - last) * sizeof(std::uint16_t));
        for (std::int64_t c0 = 0; c0 < n; c0 += kBf16Block)
            column_block(tile + c0 * kp, kb, xr, x_last, y + r * ldy + c0,
                         n - c0 < kBf16Block ? n - c0 : kBf16Block);
    }
}

}  // namespace

Bf16Gemv bf16_gemv_avx512() noexcept { return &gemv; }

}  // namespace swiglu::detail
