// The panel kernels for AVX2 + FMA: a panel row (16 weights: 64 bytes of f32
// or 32 of bf16, widened with vpmovzxwd + vpslld 16) is two vectors of 8
// f32, which up to 6 rows multiply-add into 12 accumulators; rows in groups
// of 6 pass over a panel while it stays in cache, so a tile leaves memory
// once. Bits as the scalar reference (panel_gemm.hpp): one fma per input,
// in order, per lane.
#include <immintrin.h>

#include <cstring>

#include "kernels/panel_gemm.hpp"

namespace swiglu::detail {

namespace {

// Rows per pass: 6 x 2 accumulators, the 2 weight vectors and a broadcast
// fill 15 of the 16 vector registers.
constexpr int kMaxRows = 6;

// One panel row (inputs i) as f32: its columns 0-7 and 8-15.
inline void load_row(const float* row, __m256& lo, __m256& hi) {
    lo = _mm256_loadu_ps(row);
    hi = _mm256_loadu_ps(row + 8);
}
inline void load_row(const std::uint16_t* row, __m256& lo, __m256& hi) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 8));
    lo = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(a), 16));
    hi = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16));
}

// Columns [c0, c0 + 16) of one output row (fewer in a last, partial panel).
inline void store_panel(__m256 lo, __m256 hi, float* row, std::int64_t c0, std::int64_t n) {
    if (n - c0 >= kPanelColumns) {
        _mm256_storeu_ps(row + c0, lo);
        _mm256_storeu_ps(row + c0 + 8, hi);
        return;
    }
    alignas(32) float lanes[kPanelColumns];
    _mm256_store_ps(lanes, lo);
    _mm256_store_ps(lanes + 8, hi);
    std::memcpy(row + c0, lanes, static_cast<std::size_t>(n - c0) * sizeof(float));
}

// A decode reads each panel once with little arithmetic per byte: software
// prefetch 1 KiB ahead keeps DRAM busy (as in the grouped kernels). Later
// passes over the same panel find it in cache and skip it.
constexpr std::size_t kPrefetchBytes = 1024;

// R rows over one panel (k rows of 16 weights): y[r][c0 .. c0 + 16).
template <class T, int R, bool kStream>
void panel_rows(const T* panel, std::int64_t k, const float* x, std::int64_t ldx, float* y,
                std::int64_t ldy, std::int64_t c0, std::int64_t n) {
    constexpr std::int64_t kRowBytes = kPanelColumns * sizeof(T);
    // Every loop over r is unrolled: a rolled one indexes acc at run time,
    // and GCC then keeps acc in memory, stored on every input (a third of
    // the speed).
    __m256 acc[R][2];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (std::int64_t i = 0; i < k; ++i) {
        const T* row = panel + i * kPanelColumns;
        // One prefetch per 64-byte line: every row (f32), every other (bf16).
        if (kStream && (i * kRowBytes) % 64 == 0)
            _mm_prefetch(reinterpret_cast<const char*>(row) + kPrefetchBytes, _MM_HINT_T0);
        __m256 lo, hi;
        load_row(row, lo, hi);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const __m256 b = _mm256_broadcast_ss(x + r * ldx + i);
            acc[r][0] = _mm256_fmadd_ps(b, lo, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(b, hi, acc[r][1]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) store_panel(acc[r][0], acc[r][1], y + r * ldy, c0, n);
}

template <class T, int R>
void pass(bool stream, const T* panel, std::int64_t k, const float* x, std::int64_t ldx, float* y,
          std::int64_t ldy, std::int64_t c0, std::int64_t n) {
    if (stream)
        panel_rows<T, R, true>(panel, k, x, ldx, y, ldy, c0, n);
    else
        panel_rows<T, R, false>(panel, k, x, ldx, y, ldy, c0, n);
}

template <class T>
void gemm(const void* tile, std::int64_t k, std::int64_t n, const float* x, std::int64_t ldx,
          std::int64_t rows, float* y, std::int64_t ldy) noexcept {
    for (std::int64_t p = 0; p < panel_count(n); ++p) {
        const T* panel = static_cast<const T*>(tile) + p * k * kPanelColumns;
        const std::int64_t c0 = p * kPanelColumns;
        std::int64_t m = 0;
        for (; m + kMaxRows <= rows; m += kMaxRows)
            pass<T, kMaxRows>(m == 0, panel, k, x + m * ldx, ldx, y + m * ldy, ldy, c0, n);
        const bool stream = m == 0;
        const float* xm = x + m * ldx;
        float* ym = y + m * ldy;
        switch (rows - m) {
            case 5: pass<T, 5>(stream, panel, k, xm, ldx, ym, ldy, c0, n); break;
            case 4: pass<T, 4>(stream, panel, k, xm, ldx, ym, ldy, c0, n); break;
            case 3: pass<T, 3>(stream, panel, k, xm, ldx, ym, ldy, c0, n); break;
            case 2: pass<T, 2>(stream, panel, k, xm, ldx, ym, ldy, c0, n); break;
            case 1: pass<T, 1>(stream, panel, k, xm, ldx, ym, ldy, c0, n); break;
            default: break;
        }
    }
}

}  // namespace

PanelKernels panel_kernels_avx2_fma() noexcept { return {{&gemm<float>}, {&gemm<std::uint16_t>}}; }

}  // namespace swiglu::detail
