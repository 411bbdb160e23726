// The panel kernels for AVX2 + FMA: a panel row (16 weights: 64 bytes of f32
// or 32 of bf16, widened with vpmovzxwd + vpslld 16) is two vectors of 8
// f32, which up to 6 rows multiply-add into 12 accumulators; rows in groups
// of 6 pass over a panel while it stays in cache, so a tile leaves memory
// once; 1 or 2 rows alone read 4 or 2 panels side by side. Bits as the
// scalar reference (panel_gemm.hpp): one fma per input, in order, per lane,
// block by block.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/panel_gemm.hpp"
#include "kernels/row_passes.hpp"

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

// Columns [c0, c0 + 16) of one output row (fewer in a last, partial
// panel): lo|hi, or what they hold + lo|hi (`add`: a block after the first).
inline void store_panel(__m256 lo, __m256 hi, bool add, float* row, std::int64_t c0,
                        std::int64_t n) {
    if (n - c0 >= kPanelColumns) {
        if (add) {
            lo = _mm256_add_ps(_mm256_loadu_ps(row + c0), lo);
            hi = _mm256_add_ps(_mm256_loadu_ps(row + c0 + 8), hi);
        }
        _mm256_storeu_ps(row + c0, lo);
        _mm256_storeu_ps(row + c0 + 8, hi);
        return;
    }
    const auto bytes = static_cast<std::size_t>(n - c0) * sizeof(float);
    alignas(32) float lanes[kPanelColumns] = {};
    if (add) std::memcpy(lanes, row + c0, bytes);
    _mm256_store_ps(lanes, add ? _mm256_add_ps(_mm256_load_ps(lanes), lo) : lo);
    _mm256_store_ps(lanes + 8, add ? _mm256_add_ps(_mm256_load_ps(lanes + 8), hi) : hi);
    std::memcpy(row + c0, lanes, bytes);
}

// Block [i0, i1) of the inputs for R rows over G panels, `stride` elements
// apart (k rows of 16 weights each): y[r][c0 + 16 q .. c0 + 16 q + 16) for
// panel q gets the block's sums (`add`: added to what it holds). Not
// inlined into the loop over blocks: there GCC ran out of registers and
// kept accumulators on the stack (docs/measurements.md, "The AVX2 panel
// kernels after the change of numerics").
template <class T, int R, int G, bool kStream>
[[gnu::noinline]] void block_rows(const T* panel, std::int64_t i0, std::int64_t i1,
                                  std::int64_t stride, const float* x, std::int64_t ldx, bool add,
                                  float* y, std::int64_t ldy, std::int64_t c0, std::int64_t n) {
    constexpr std::int64_t kRowBytes = kPanelColumns * sizeof(T);
    // Every loop over r and q is unrolled: a rolled one indexes acc at run
    // time, and GCC then keeps acc in memory, stored on every input (a third
    // of the speed).
    __m256 acc[R][G][2];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int q = 0; q < G; ++q) acc[r][q][0] = acc[r][q][1] = _mm256_setzero_ps();
    for (std::int64_t i = i0; i < i1; ++i) {
        const T* row = panel + i * kPanelColumns;
        // A tile's first pass prefetches (kPanelPrefetchBytes ahead; later
        // passes find the panel in cache): one prefetch per 64-byte line of
        // each panel, every row (f32), every other (bf16).
        if (kStream && (i * kRowBytes) % 64 == 0)
#pragma GCC unroll 4
            for (int q = 0; q < G; ++q)
                _mm_prefetch(reinterpret_cast<const char*>(row + q * stride) + kPanelPrefetchBytes,
                             _MM_HINT_T0);
        __m256 lo[G], hi[G];
#pragma GCC unroll 4
        for (int q = 0; q < G; ++q) load_row(row + q * stride, lo[q], hi[q]);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const __m256 b = _mm256_broadcast_ss(x + r * ldx + i);
#pragma GCC unroll 4
            for (int q = 0; q < G; ++q) {
                acc[r][q][0] = _mm256_fmadd_ps(b, lo[q], acc[r][q][0]);
                acc[r][q][1] = _mm256_fmadd_ps(b, hi[q], acc[r][q][1]);
            }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int q = 0; q < G; ++q)
            store_panel(acc[r][q][0], acc[r][q][1], add, y + r * ldy, c0 + q * kPanelColumns, n);
}

// R rows over G panels: y[r][c0 + 16 q .. c0 + 16 q + 16) for panel q,
// block by block (panel_gemm.hpp's numerics).
template <class T, int R, int G, bool kStream>
void panel_rows(const T* panel, std::int64_t begin, std::int64_t end, std::int64_t stride,
                const float* x, std::int64_t ldx, float* y, std::int64_t ldy, std::int64_t c0,
                std::int64_t n) {
    for (std::int64_t i0 = begin; i0 < end; i0 += kPanelBlock)
        block_rows<T, R, G, kStream>(panel, i0, std::min(end, i0 + kPanelBlock), stride, x, ldx,
                                     i0 > 0, y, ldy, c0, n);
}

// Panels a tile's only pass runs over at once when it has 1 or 2 rows
// (decode): one or two rows over one panel do too few fmas per byte for one
// reader to keep DRAM busy, and 4 or 2 panels read side by side (like the
// DRAM probe's streams) were faster (docs/measurements.md, "Decode on
// panels"). Each lane's fma chain, so every bit, is that of one panel at a
// time. Passes after a first one read the panel from cache: they keep one.
constexpr int panels_per_pass(int rows) { return rows == 1 ? 4 : rows == 2 ? 2 : 1; }

// How a pass reads its panel: from cache (a pass after a tile's first),
// streamed from memory with prefetch (a tile's first pass), or streamed
// side by side with the panels after it (a tile's only pass, 1-2 rows).
enum class Read { cached, streamed, grouped };

// A pass of R rows from `panel` on: over panels_per_pass(R) of them when
// `grouped`, else over one.
template <class T, int R>
void pass(Read read, const T* panel, std::int64_t k, std::int64_t begin, std::int64_t end,
          const float* x, std::int64_t ldx, float* y, std::int64_t ldy, std::int64_t c0,
          std::int64_t n) {
    constexpr int G = panels_per_pass(R);
    const std::int64_t stride = k * kPanelColumns;
    if (G > 1 && read == Read::grouped) {
        panel_rows<T, R, G, true>(panel, begin, end, stride, x, ldx, y, ldy, c0, n);
    } else if (read != Read::cached) {
        panel_rows<T, R, 1, true>(panel, begin, end, stride, x, ldx, y, ldy, c0, n);
    } else {
        panel_rows<T, R, 1, false>(panel, begin, end, stride, x, ldx, y, ldy, c0, n);
    }
}

template <class T>
void gemm_range(const void* tile, std::int64_t k, std::int64_t begin, std::int64_t end,
                std::int64_t n, const float* x, std::int64_t ldx, std::int64_t rows, float* y,
                std::int64_t ldy) noexcept {
    const std::int64_t panels = panel_count(n), stride = k * kPanelColumns;
    // 1 or 2 rows: one pass, over groups of panels (the last ones alone).
    const std::int64_t group = rows < kMaxRows ? panels_per_pass(static_cast<int>(rows)) : 1;
    for (std::int64_t p = 0; p < panels;) {
        const bool grouped = group > 1 && p + group <= panels;
        row_passes<kMaxRows>(rows, [&](auto height, std::int64_t m) {
            const Read read = m > 0 ? Read::cached : grouped ? Read::grouped : Read::streamed;
            pass<T, decltype(height)::value>(read, static_cast<const T*>(tile) + p * stride, k,
                                             begin, end, x + m * ldx, ldx, y + m * ldy, ldy,
                                             p * kPanelColumns, n);
        });
        p += grouped ? group : 1;
    }
}

template <class T>
void gemm(const void* tile, std::int64_t k, std::int64_t n, const float* x, std::int64_t ldx,
          std::int64_t rows, float* y, std::int64_t ldy) noexcept {
    gemm_range<T>(tile, k, 0, k, n, x, ldx, rows, y, ldy);
}

}  // namespace

PanelKernels panel_kernels_avx2_fma() noexcept {
    return {{&gemm<float>, &gemm_range<float>}, {&gemm<std::uint16_t>, &gemm_range<std::uint16_t>}};
}

}  // namespace swiglu::detail
