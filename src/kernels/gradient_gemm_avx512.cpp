// The weight-gradient kernel for AVX-512 (F): a strip of 6 dW rows by up to
// 4 panels (64 columns) in 24 accumulators. Per token row: 4 panel loads, 6
// broadcasts and 24 fmas, so the FMA units, not the loads, set the pace
// (8 x 3 ran level with it; 12 x 2 spilled: docs/measurements.md, "the
// backward's weight gradients on our own kernel"). Bits as the scalar
// reference (gradient_gemm.hpp): one fma per token row, in order, per
// element.
#include <immintrin.h>

#include <type_traits>

#include "kernels/gradient_gemm.hpp"
#include "kernels/row_passes.hpp"

namespace swiglu::detail {

namespace {

constexpr int kStrip = static_cast<int>(kGradientStrip);

// One strip (its first `rows` rows valid) by G panels from column c0 of a
// tile `cols` wide.
template <int G>
void strip_panels(const float* strip, const float* panel, std::int64_t k, std::int64_t rows,
                  std::int64_t c0, std::int64_t cols, float* w, std::int64_t ldw, bool add) {
    const std::int64_t stride = k * kPanelColumns;
    __m512 acc[kStrip][G];
#pragma GCC unroll 6
    for (int r = 0; r < kStrip; ++r)
#pragma GCC unroll 4
        for (int q = 0; q < G; ++q) acc[r][q] = _mm512_setzero_ps();
    for (std::int64_t t = 0; t < k; ++t) {
        __m512 b[G];
#pragma GCC unroll 4
        for (int q = 0; q < G; ++q) b[q] = _mm512_loadu_ps(panel + q * stride + t * kPanelColumns);
        const float* s = strip + t * kStrip;
#pragma GCC unroll 6
        for (int r = 0; r < kStrip; ++r) {
            const __m512 a = _mm512_set1_ps(s[r]);
#pragma GCC unroll 4
            for (int q = 0; q < G; ++q) acc[r][q] = _mm512_fmadd_ps(a, b[q], acc[r][q]);
        }
    }
#pragma GCC unroll 4
    for (int q = 0; q < G; ++q) {
        const std::int64_t left = cols - c0 - q * kPanelColumns;
        const auto mask = static_cast<__mmask16>(left >= kPanelColumns ? 0xFFFF : (1u << left) - 1);
#pragma GCC unroll 6
        for (int r = 0; r < kStrip; ++r) {
            if (r >= rows) break;
            float* out = w + r * ldw + c0 + q * kPanelColumns;
            __m512 v = acc[r][q];
            if (add) v = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, out), v);
            _mm512_mask_storeu_ps(out, mask, v);
        }
    }
}

// dW's lines at rows [r0, r0 + 6) (clipped to `rows`), columns [c0, c0 +
// 64) (clipped to `cols`). Always inlined: GCC 12 deems a function that
// only prefetches const, and drops the calls to it.
[[gnu::always_inline]] inline void prefetch_tile(float* w, std::int64_t ldw, std::int64_t rows,
                                                 std::int64_t cols, std::int64_t r0,
                                                 std::int64_t c0) {
#pragma GCC unroll 6
    for (int r = 0; r < kStrip; ++r)
#pragma GCC unroll 4
        for (int q = 0; q < 4; ++q)
            if (r0 + r < rows && c0 + q * kPanelColumns < cols)
                _mm_prefetch(
                    reinterpret_cast<const char*>(w + (r0 + r) * ldw + c0 + q * kPanelColumns),
                    _MM_HINT_T0);
}

// Strip by strip (the strip stays in L1 while the tile's panels stream
// from L2), 4 panels at a time, then the rest together (row_passes over
// panels). Each step first prefetches the dW lines of the next step: dW is
// as large as the weights, read and written from DRAM, and a step computes
// long enough for them to arrive (written or added; docs/measurements.md,
// "Weight gradients on our own kernels").
void gemm(const float* strips, const float* panels, std::int64_t k, std::int64_t rows,
          std::int64_t cols, float* w, std::int64_t ldw, bool add) noexcept {
    const std::int64_t count = panel_count(cols), stride = k * kPanelColumns;
    auto step = [&](auto groups, std::int64_t r0, std::int64_t p) {
        constexpr int G = decltype(groups)::value;
        const std::int64_t next = p + G < count ? p + G : 0;
        prefetch_tile(w, ldw, rows, cols, next == 0 ? r0 + kGradientStrip : r0,
                      next * kPanelColumns);
        strip_panels<G>(strips + r0 * k, panels + p * stride, k,
                        rows - r0 < kGradientStrip ? rows - r0 : kGradientStrip, p * kPanelColumns,
                        cols, w + r0 * ldw, ldw, add);
    };
    for (std::int64_t r0 = 0; r0 < rows; r0 += kGradientStrip)
        row_passes<4>(count, [&](auto groups, std::int64_t p) { step(groups, r0, p); });
}

}  // namespace

GradientGemm gradient_gemm_avx512() noexcept { return &gemm; }

}  // namespace swiglu::detail
