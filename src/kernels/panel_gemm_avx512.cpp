// The panel kernels for AVX-512 (F, BW): a panel row (16 weights: 64 bytes
// of f32 or 32 of bf16, widened with vpmovzxwd + vpslld 16) is one vector of
// 16 f32. Up to 8 rows multiply-add 2 panels side by side into 16
// accumulators (1-4 rows: 4 panels; tall tiles 6 rows over 4 panels), and
// every pass runs over a block of 128 inputs before the next block, so a
// tile leaves memory once and streams while the later passes compute. Bits
// as the scalar reference (panel_gemm.hpp): one fma per input, in order,
// per lane, block by block.
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

// Block [i0, i1) of the inputs for R rows over G panels, `stride` elements
// apart (k rows of 16 weights each): y[r][c0 + 16 q .. c0 + 16 q + 16) for
// panel q gets the block's sums (`add`: added to what it holds).
//
// Streaming: every pass over a block prefetches a share of the lines
// pf_ahead bytes ahead (those whose index is pf_phase modulo pf_passes), so
// DRAM stays busy while later passes compute from cache. Prefetching only
// in a block's first pass (1 KiB ahead, as the AVX2 kernels) left memory
// idle in the others (docs/measurements.md, "Passes block by block").
template <class T, int R, int G, bool kFetchX>
void block_rows(const T* panel, std::int64_t i0, std::int64_t i1, std::int64_t stride,
                const float* x, std::int64_t ldx, bool add, float* y, std::int64_t ldy,
                std::int64_t c0, std::int64_t n, std::int64_t pf_phase, std::int64_t pf_passes,
                std::int64_t pf_ahead) {
    constexpr std::int64_t kRowBytes = kPanelColumns * sizeof(T);
    constexpr std::int64_t kRowsPerLine = 64 / kRowBytes;
    // Every loop over r and q is unrolled, so acc stays in registers (see
    // panel_gemm_avx2_fma.cpp).
    std::int64_t countdown = pf_phase;
    __m512 acc[R][G];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int q = 0; q < G; ++q) acc[r][q] = _mm512_setzero_ps();
    // kFetchX: each pass fetches its x rows' next block too (past the last
    // block, the next row's start: prefetches never fault).
    if (kFetchX && pf_passes > 1)
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
            for (std::int64_t l = 0; l < kPanelBlock; l += 64 / std::int64_t{sizeof(float)})
                _mm_prefetch(reinterpret_cast<const char*>(x + r * ldx + i1 + l), _MM_HINT_T0);
    for (std::int64_t i = i0; i < i1; ++i) {
        const T* row = panel + i * kPanelColumns;
        if ((i - i0) % kRowsPerLine == 0 && countdown-- == 0) {
            countdown = pf_passes - 1;
#pragma GCC unroll 4
            for (int q = 0; q < G; ++q)
                _mm_prefetch(reinterpret_cast<const char*>(row + q * stride) + pf_ahead,
                             _MM_HINT_T0);
        }
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
            store_panel(acc[r][q], add, y + r * ldy, c0 + q * kPanelColumns, n);
}

// Rows R <= kRows at a time over G panels (kRows x G accumulators), block
// by block: every pass over a block before the next block, so each block
// leaves memory once, is read from cache by the later passes, and memory
// streams the next block meanwhile.
template <class T, int kRows, int G, bool kFetchX>
void panel_group(const T* panel, std::int64_t k, std::int64_t begin, std::int64_t end,
                 const float* x, std::int64_t ldx, std::int64_t rows, float* y, std::int64_t ldy,
                 std::int64_t c0, std::int64_t n) {
    const std::int64_t stride = k * kPanelColumns;
    const std::int64_t passes = even_pass_count<kRows>(rows);
    // One pass (decode) prefetches every line kPanelPrefetchBytes ahead, as
    // the AVX2 kernels; more spread the next block's lines over the passes.
    const std::int64_t pf_ahead =
        passes == 1 ? kPanelPrefetchBytes
                    : kPanelBlock * kPanelColumns * static_cast<std::int64_t>(sizeof(T));
    for (std::int64_t i0 = begin; i0 < end; i0 += kPanelBlock) {
        const std::int64_t i1 = std::min(end, i0 + kPanelBlock);
        even_row_passes<kRows>(rows, [&](auto height, std::int64_t m, std::int64_t pass) {
            constexpr int R = decltype(height)::value;
            block_rows<T, R, G, kFetchX>(panel, i0, i1, stride, x + m * ldx, ldx, i0 > 0,
                                         y + m * ldy, ldy, c0, n, pass, passes, pf_ahead);
        });
    }
}

// Groups of G panels, then a pair, then one panel alone.
template <class T, int kRows, int G, bool kFetchX = false>
void panel_groups(const T* tile, std::int64_t k, std::int64_t begin, std::int64_t end,
                  std::int64_t n, const float* x, std::int64_t ldx, std::int64_t rows, float* y,
                  std::int64_t ldy) {
    const std::int64_t panels = panel_count(n), stride = k * kPanelColumns;
    std::int64_t p = 0;
    for (; p + G <= panels; p += G)
        panel_group<T, kRows, G, kFetchX>(tile + p * stride, k, begin, end, x, ldx, rows, y, ldy,
                                          p * kPanelColumns, n);
    if constexpr (G > 2)
        for (; p + 2 <= panels; p += 2)
            panel_group<T, kRows, 2, kFetchX>(tile + p * stride, k, begin, end, x, ldx, rows, y,
                                              ldy, p * kPanelColumns, n);
    for (; p < panels; ++p)
        panel_group<T, kRows, 1, kFetchX>(tile + p * stride, k, begin, end, x, ldx, rows, y, ldy,
                                          p * kPanelColumns, n);
}

// How many panels a pass reads side by side, and how many rows it takes.
// The FMA units wait on loads otherwise: R rows over G panels load G weight
// vectors and R broadcasts for R G fmas. 1-4 rows (decode, the ridge's
// foot) over 4 panels: 4 DRAM streams per core; more rows 8 at a time over
// 2 (16 accumulators). Passes of 16 rows over one panel ran at half the
// speed in cache: 17 loads per 16 fmas, and with x's rows 16 KiB apart (d =
// 4096) their 16 lines share one set of a 12-way L1 (docs/measurements.md,
// "Panel kernels for AVX-512").
// Tall tiles (kTallRows and up; kStreamedTallRows and up in tiles of
// kStreamedTileBytes or more, which come from memory) take 6 rows over 4
// panels (24 accumulators, 10 loads per 24 fmas) and prefetch x, so a
// block of x is read once, not once per pair of panels: the backward's
// dx tiles 1.1x, llama7b's forward at 16 tokens 1.08x. Taken from 5 rows
// in every tile, it ran glass at 8-32 rows and cyber at 8 rows 1.1-1.15x
// slower; x prefetched in passes of 8 x 2 ran llama7b's 16-32 tokens
// 1.07-1.12x slower (docs/measurements.md, "Six rows over four panels").
constexpr std::int64_t kTallRows = 48;
constexpr std::int64_t kStreamedTallRows = 16;
constexpr std::int64_t kStreamedTileBytes = std::int64_t{512} << 10;

template <class T>
void gemm_range(const void* tile, std::int64_t k, std::int64_t begin, std::int64_t end,
                std::int64_t n, const float* x, std::int64_t ldx, std::int64_t rows, float* y,
                std::int64_t ldy) noexcept {
    const T* panels = static_cast<const T*>(tile);
    const bool streamed = k * n * static_cast<std::int64_t>(sizeof(T)) >= kStreamedTileBytes;
    if (rows <= 4)
        panel_groups<T, 4, 4>(panels, k, begin, end, n, x, ldx, rows, y, ldy);
    else if (rows < (streamed ? kStreamedTallRows : kTallRows))
        panel_groups<T, 8, 2>(panels, k, begin, end, n, x, ldx, rows, y, ldy);
    else
        panel_groups<T, 6, 4, true>(panels, k, begin, end, n, x, ldx, rows, y, ldy);
}

template <class T>
void gemm(const void* tile, std::int64_t k, std::int64_t n, const float* x, std::int64_t ldx,
          std::int64_t rows, float* y, std::int64_t ldy) noexcept {
    gemm_range<T>(tile, k, 0, k, n, x, ldx, rows, y, ldy);
}

}  // namespace

PanelKernels panel_kernels_avx512() noexcept {
    return {{&gemm<float>, &gemm_range<float>}, {&gemm<std::uint16_t>, &gemm_range<std::uint16_t>}};
}

}  // namespace swiglu::detail
