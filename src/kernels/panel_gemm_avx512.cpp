// The panel kernels for AVX-512 (F, BW): a panel row (16 weights: 64 bytes
// of f32 or 32 of bf16, widened with vpmovzxwd + vpslld 16) is one vector of
// 16 f32. Up to 8 rows multiply-add 2 panels side by side into 16
// accumulators, and rows in groups of 8 pass over the pair while it stays
// in cache, so a tile leaves memory once; 1-4 rows read 4 panels side by
// side. Bits as the scalar reference (panel_gemm.hpp): one fma per input, in
// order, per lane, block by block.
//
// GCC 12's _mm512_cvtepu16_epi32 and _mm512_slli_epi32 start from a
// deliberately undefined register and then warn that it "may be used
// uninitialized" once inlined (GCC bug 105593): silenced for this TU only.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>

#include "kernels/panel_gemm.hpp"
#include "kernels/row_passes.hpp"

namespace swiglu::detail {

namespace {

// One panel row (inputs i) as f32.
inline __m512 load_row(const float* row) { return _mm512_loadu_ps(row); }
inline __m512 load_row(const std::uint16_t* row) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

// Columns [c0, c0 + 16) of one output row, clipped to n: v, or what they
// hold + v (`add`: a block after the first).
inline void store_panel(__m512 v, bool add, float* row, std::int64_t c0, std::int64_t n) {
    const std::int64_t left = n - c0;
    const auto mask = static_cast<__mmask16>(left >= kPanelColumns ? 0xFFFF : (1u << left) - 1);
    if (add) v = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, row + c0), v);
    _mm512_mask_storeu_ps(row + c0, mask, v);
}

// Software prefetch 1 KiB ahead in a streamed panel, as the AVX2 kernels.
constexpr std::size_t kPrefetchBytes = 1024;

// R rows over G panels, `stride` elements apart (k rows of 16 weights
// each): y[r][c0 + 16 q .. c0 + 16 q + 16) for panel q.
template <class T, int R, int G, bool kStream>
void panel_rows(const T* panel, std::int64_t k, std::int64_t stride, const float* x,
                std::int64_t ldx, float* y, std::int64_t ldy, std::int64_t c0, std::int64_t n) {
    constexpr std::int64_t kRowBytes = kPanelColumns * sizeof(T);
    // Every loop over r and q is unrolled, so acc stays in registers (see
    // panel_gemm_avx2_fma.cpp).
    for (std::int64_t i0 = 0; i0 < k; i0 += kPanelBlock) {
        const std::int64_t i1 = std::min(k, i0 + kPanelBlock);
        __m512 acc[R][G];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
            for (int q = 0; q < G; ++q) acc[r][q] = _mm512_setzero_ps();
        for (std::int64_t i = i0; i < i1; ++i) {
            const T* row = panel + i * kPanelColumns;
            if (kStream && (i * kRowBytes) % 64 == 0)
#pragma GCC unroll 4
                for (int q = 0; q < G; ++q)
                    _mm_prefetch(reinterpret_cast<const char*>(row + q * stride) + kPrefetchBytes,
                                 _MM_HINT_T0);
            __m512 w[G];
#pragma GCC unroll 4
            for (int q = 0; q < G; ++q) w[q] = load_row(row + q * stride);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const __m512 b = _mm512_set1_ps(x[r * ldx + i]);
#pragma GCC unroll 4
                for (int q = 0; q < G; ++q) acc[r][q] = _mm512_fmadd_ps(b, w[q], acc[r][q]);
            }
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
            for (int q = 0; q < G; ++q)
                store_panel(acc[r][q], i0 > 0, y + r * ldy, c0 + q * kPanelColumns, n);
    }
}

// Panels a pass reads side by side. The FMA units wait on loads otherwise:
// a pass of R rows over G panels loads G weight vectors and R broadcasts for
// R G fmas. 1-4 rows (decode, the ridge's foot: one pass) over 4 panels;
// more rows over 2, in passes of up to 8 (16 accumulators), the pair of
// panels staying in cache from one pass to the next. The last panels (fewer
// than G) one at a time. Passes of 16 rows over one panel ran at half the
// speed in cache: 17 loads per 16 fmas, and with x's rows 16 KiB apart
// (d = 4096) their 16 lines share one set of a 12-way L1
// (docs/measurements.md, "Panel kernels for AVX-512").
constexpr int kMaxRows = 8;
constexpr std::int64_t panels_per_pass(std::int64_t rows) { return rows <= 4 ? 4 : 2; }

// A pass of R rows over `group` panels (1, 2, or 4 when R <= 4) from
// `panel` on, streamed (with prefetch: a tile's first pass) or from cache.
template <class T, int R>
void pass(std::int64_t group, bool stream, const T* panel, std::int64_t k, const float* x,
          std::int64_t ldx, float* y, std::int64_t ldy, std::int64_t c0, std::int64_t n) {
    const std::int64_t stride = k * kPanelColumns;
    if constexpr (R <= 4) {
        if (group == 4) return panel_rows<T, R, 4, true>(panel, k, stride, x, ldx, y, ldy, c0, n);
    }
    if (group == 2 && stream)
        return panel_rows<T, R, 2, true>(panel, k, stride, x, ldx, y, ldy, c0, n);
    if (group == 2) return panel_rows<T, R, 2, false>(panel, k, stride, x, ldx, y, ldy, c0, n);
    if (stream) return panel_rows<T, R, 1, true>(panel, k, stride, x, ldx, y, ldy, c0, n);
    panel_rows<T, R, 1, false>(panel, k, stride, x, ldx, y, ldy, c0, n);
}

template <class T>
void gemm(const void* tile, std::int64_t k, std::int64_t n, const float* x, std::int64_t ldx,
          std::int64_t rows, float* y, std::int64_t ldy) noexcept {
    const std::int64_t panels = panel_count(n), stride = k * kPanelColumns;
    const std::int64_t full_group = panels_per_pass(rows);
    for (std::int64_t p = 0; p < panels;) {
        const std::int64_t group = p + full_group <= panels ? full_group : 1;
        row_passes<kMaxRows>(rows, [&](auto height, std::int64_t m) {
            pass<T, decltype(height)::value>(
                group, m == 0, static_cast<const T*>(tile) + p * stride, k, x + m * ldx, ldx,
                y + m * ldy, ldy, p * kPanelColumns, n);
        });
        p += group;
    }
}

}  // namespace

PanelKernels panel_kernels_avx512() noexcept { return {{&gemm<float>}, {&gemm<std::uint16_t>}}; }

}  // namespace swiglu::detail
