// The weight-gradient kernel for AVX2 + FMA: a strip of 6 dW rows by one
// panel (16 columns, two vectors of 8) in 12 accumulators; with the 2 panel
// vectors and a broadcast, 15 of the 16 vector registers. Per token row: 2
// loads, 6 broadcasts, 12 fmas. Bits as the scalar reference
// (gradient_gemm.hpp): one fma per token row, in order, per element.
#include <immintrin.h>

#include "kernels/gradient_gemm.hpp"

namespace swiglu::detail {

namespace {

constexpr int kStrip = static_cast<int>(kGradientStrip);

// One strip (its first `rows` rows valid) by the panel of columns
// [c0, c0 + 16) of a tile `cols` wide.
void strip_panel(const float* strip, const float* panel, std::int64_t k, std::int64_t rows,
                 std::int64_t c0, std::int64_t cols, float* w, std::int64_t ldw, bool add) {
    __m256 lo[kStrip], hi[kStrip];
#pragma GCC unroll 6
    for (int r = 0; r < kStrip; ++r) lo[r] = hi[r] = _mm256_setzero_ps();
    for (std::int64_t t = 0; t < k; ++t) {
        const __m256 b0 = _mm256_loadu_ps(panel + t * kPanelColumns);
        const __m256 b1 = _mm256_loadu_ps(panel + t * kPanelColumns + 8);
        const float* s = strip + t * kStrip;
#pragma GCC unroll 6
        for (int r = 0; r < kStrip; ++r) {
            const __m256 a = _mm256_broadcast_ss(s + r);
            lo[r] = _mm256_fmadd_ps(a, b0, lo[r]);
            hi[r] = _mm256_fmadd_ps(a, b1, hi[r]);
        }
    }
    const std::int64_t width = cols - c0 < kPanelColumns ? cols - c0 : kPanelColumns;
#pragma GCC unroll 6
    for (int r = 0; r < kStrip; ++r) {
        if (r >= rows) break;
        float* out = w + r * ldw + c0;
        if (width == kPanelColumns) {
            __m256 v0 = lo[r], v1 = hi[r];
            if (add) {
                v0 = _mm256_add_ps(_mm256_loadu_ps(out), v0);
                v1 = _mm256_add_ps(_mm256_loadu_ps(out + 8), v1);
            }
            _mm256_storeu_ps(out, v0);
            _mm256_storeu_ps(out + 8, v1);
        } else {  // the tile's last, partial panel
            alignas(32) float sums[kPanelColumns];
            _mm256_store_ps(sums, lo[r]);
            _mm256_store_ps(sums + 8, hi[r]);
            for (std::int64_t c = 0; c < width; ++c) out[c] = add ? out[c] + sums[c] : sums[c];
        }
    }
}

// The line at `at` in each of the next min(6, rows) rows of dW. Always
// inlined: GCC 12 deems a function that only prefetches const, and drops
// the calls to it.
[[gnu::always_inline]] inline void prefetch_row_lines(const float* at, std::int64_t ldw,
                                                      std::int64_t rows) {
#pragma GCC unroll 6
    for (int r = 0; r < kStrip; ++r)
        if (r < rows) _mm_prefetch(reinterpret_cast<const char*>(at + r * ldw), _MM_HINT_T0);
}

// Strip by strip (the strip stays in L1 while the tile's panels stream
// from L2), panel by panel. Each step first prefetches the dW lines of the
// next step, as the AVX-512 kernel does (gradient_gemm_avx512.cpp).
void gemm(const float* strips, const float* panels, std::int64_t k, std::int64_t rows,
          std::int64_t cols, float* w, std::int64_t ldw, bool add) noexcept {
    const std::int64_t count = panel_count(cols), stride = k * kPanelColumns;
    for (std::int64_t r0 = 0; r0 < rows; r0 += kGradientStrip) {
        const std::int64_t height = rows - r0 < kGradientStrip ? rows - r0 : kGradientStrip;
        for (std::int64_t p = 0; p < count; ++p) {
            const std::int64_t next_r0 = p + 1 < count ? r0 : r0 + kGradientStrip;
            const std::int64_t next_c0 = p + 1 < count ? (p + 1) * kPanelColumns : 0;
            prefetch_row_lines(w + next_r0 * ldw + next_c0, ldw, rows - next_r0);
            strip_panel(strips + r0 * k, panels + p * stride, k, height, p * kPanelColumns, cols,
                        w + r0 * ldw, ldw, add);
        }
    }
}

}  // namespace

GradientGemm gradient_gemm_avx2_fma() noexcept { return &gemm; }

}  // namespace swiglu::detail
