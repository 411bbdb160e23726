// The grouped kernels for AVX-512 with VNNI: vpdpbusd multiplies 64 unsigned
// weight quants by 64 signed activation quants and adds each 4 products to a
// 32-bit lane, one instruction where AVX2 takes two (Q4_0: vpmaddubsw and an
// add) or four (Q8_0: vpsignb twice, vpmaddubsw, vpmaddwd). A zmm holds two
// column groups (grouped_layout.hpp), group g in lanes 0-7 and g + 1 in
// 8-15, so a block still ends in column sums without a horizontal reduction.
// Up to 4 rows share each weight load (Q8_0 tiles of 5-8 rows: all of
// them), and each activation broadcast is shared between two pairs
// (kPassRows, kPassPairs). Bits as the
// scalar reference (grouped_gemm.hpp): the block sums are the same exact
// integers.
//
// GCC 12's AVX-512 intrinsics (here _mm512_inserti64x4, _mm512_cvtph_ps,
// _mm512_cvtepi32_ps) start from a deliberately undefined register and then
// warn that it "may be used uninitialized" once inlined (GCC bug 105593):
// silenced for this TU only.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "kernels/grouped_avx512.hpp"
#include "kernels/grouped_gemm.hpp"
#include "kernels/grouped_prefetch.hpp"
#include "kernels/row_passes.hpp"

namespace swiglu::detail {

namespace {

// Rows and pairs of groups per pass: passes of up to 4 rows over 2 pairs,
// both formats. Every broadcast of 4 activation quants then meets both
// pairs: a pass over one pair issues a broadcast per vpdpbusd, over two
// pairs one per two; and a core reads 4 weight streams, where so few rows
// leave one stream short of DRAM's rate. 4 rows' s32 and f32 accumulators
// over 2 pairs take 16 of the 32 zmm registers; 5-6 rows over 2 pairs, or 3
// pairs, were no faster from DRAM (Q8_0: slower). Alternated runs on an
// AVX-512 EPYC, 2 threads (docs/measurements.md, "Two pairs share each
// broadcast"): 4 rows over 2 pairs against 1, in the block, 0.96-1.7x (most
// 1.1-1.5x; llama7b, cyber, glass), Q4_0's 8-32 rows in passes of 4
// 0.96-1.27x (most 1.02-1.09x). Q8_0 first kept passes of up to 8 rows over
// 1 pair, each weight load meeting more rows; against those, in one
// process, same bits: 1.06-1.09x at 128-512 tokens (llama7b on 1 and 2
// threads, cyber on 2), level at 16-32 (docs/measurements.md, "Q8_0 in
// passes of 4 rows").
constexpr int kPassRows = 4;
constexpr int kPassPairs = 2;

// Except that Q8_0 tiles of 5-8 rows keep one pass of them all over 1 pair
// (8 f32 and 8 s32 accumulators), each weight load meeting every row: there
// passes of 4 over 2 pairs were not shown faster (alternated builds, whose
// spread here reaches 15 %: llama7b at 8 tokens 0.85x on one thread, 1.08x
// on two; qwen3moe's experts at 128 tokens, ~8 rows each, 0.88-0.93x).
template <GroupedFormat kFormat>
constexpr int kOnePassRows = kFormat == GroupedFormat::q8_0 ? 8 : kPassRows;

// R rows of y over G pairs of groups from `first` on (pair q: groups at
// first + 2 q step strides and that + partner bytes, partner = step
// strides, or 0 for a last group alone), columns from c0 the same way: per pair, its
// records in order, one f32 accumulator per row (grouped_gemm.hpp).
//
// A block's s32 dot products: lane j of sums[q][r] = sum over the block's
// 32 inputs of pair q's column j's quant times row r's. vpdpbusd wants
// unsigned weights, so each format's offset is taken out of the start
// value with the activations' sum (ActBlock::sum):
//   Q4_0: nibbles q in [0, 15]: sum (q - 8) x = sum q x - 8 sum x;
//   Q8_0: w + 128 = w ^ 0x80 in [0, 255]: sum w x = sum (w + 128) x - 128 sum x.
// Every partial sum fits in 32 bits (|.| <= 32 * 255 * 128), so the result
// is the scalar reference's integer.
template <GroupedFormat kFormat, int R, int G>
void pairs(const std::uint8_t* first, std::int64_t nb, std::int64_t stride, std::int64_t partner,
           std::int64_t step, const ActBlock* x, std::int64_t x_stride, float* y, std::int64_t ldy,
           std::int64_t c0, std::int64_t n) {
    constexpr std::size_t kRecord = record_bytes(kFormat);
    constexpr std::int32_t kOffset = kFormat == GroupedFormat::q8_0 ? 128 : 8;
    __m512 acc[G][R];
    for (int q = 0; q < G; ++q)
        for (int r = 0; r < R; ++r) acc[q][r] = _mm512_setzero_ps();
    const std::uint8_t* record = first;
    for (std::int64_t b = 0; b < nb; ++b, record += kRecord) {
        const std::uint8_t* rq[G];
        const PrefetchSpan span =
            next_pass_span(b, kRecord, stride, streams_to_next_pass(step, 2 * G));
        for (int q = 0; q < G; ++q) {
            rq[q] = record + 2 * q * step * stride;
            prefetch_ahead<kFormat>(rq[q], span);
            prefetch_ahead<kFormat>(rq[q] + partner, span);
        }
        __m512i sums[G][R];
        for (int r = 0; r < R; ++r) {
            const __m512i start = _mm512_set1_epi32(-kOffset * x[r * x_stride + b].sum);
            for (int q = 0; q < G; ++q) sums[q][r] = start;
        }
        if constexpr (kFormat == GroupedFormat::q8_0) {
            const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
            for (int s = 0; s < 8; ++s) {
                __m512i w[G];
                for (int q = 0; q < G; ++q)
                    w[q] = _mm512_xor_si512(load_pair(rq[q] + 32 * s, partner), bias);
                for (int r = 0; r < R; ++r) {
                    const __m512i a = broadcast4(x[r * x_stride + b], s);
                    for (int q = 0; q < G; ++q)
                        sums[q][r] = _mm512_dpbusd_epi32(sums[q][r], w[q], a);
                }
            }
        } else {
            const __m512i nibble = _mm512_set1_epi8(0x0F);
            for (int p = 0; p < 4; ++p) {
                __m512i lo[G], hi[G];
                for (int q = 0; q < G; ++q) {
                    const __m512i packed = load_pair(rq[q] + 32 * p, partner);
                    lo[q] = _mm512_and_si512(packed, nibble);
                    hi[q] = _mm512_and_si512(_mm512_srli_epi16(packed, 4), nibble);
                }
                for (int r = 0; r < R; ++r) {
                    const __m512i a_lo = broadcast4(x[r * x_stride + b], 2 * p);
                    const __m512i a_hi = broadcast4(x[r * x_stride + b], 2 * p + 1);
                    for (int q = 0; q < G; ++q) {
                        sums[q][r] = _mm512_dpbusd_epi32(sums[q][r], lo[q], a_lo);
                        sums[q][r] = _mm512_dpbusd_epi32(sums[q][r], hi[q], a_hi);
                    }
                }
            }
        }
        __m512 w[G];
        for (int q = 0; q < G; ++q) w[q] = pair_f16(rq[q] + record_quant_bytes(kFormat), partner);
        for (int r = 0; r < R; ++r) {
            const __m512 dx = _mm512_set1_ps(x[r * x_stride + b].d);
            for (int q = 0; q < G; ++q)
                acc[q][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums[q][r]), _mm512_mul_ps(w[q], dx),
                                            acc[q][r]);
        }
    }
    for (int q = 0; q < G; ++q)
        for (int r = 0; r < R; ++r)
            store_pair(acc[q][r], y + r * ldy, c0 + 2 * q * step * kGroupColumns,
                       c0 + (2 * q + 1) * step * kGroupColumns, n);
}

// R rows of y for the whole tile: G pairs at a time, then single pairs,
// then a last group alone.
template <GroupedFormat kFormat, int R, int G = 1>
void rows(const std::uint8_t* tile, std::int64_t nb, std::int64_t n, const ActBlock* x,
          std::int64_t x_stride, float* y, std::int64_t ldy) {
    const std::int64_t groups = column_groups(n);
    const std::int64_t stride = nb * static_cast<std::int64_t>(record_bytes(kFormat));
    // A pass's 2 G streams strided (grouped_prefetch.hpp), passes of one
    // pair as well as of two; the groups after the strided passes' go in
    // adjacent passes.
    std::int64_t g = strided_passes(groups, 2 * G, [&](std::int64_t first, std::int64_t step) {
        pairs<kFormat, R, G>(tile + first * stride, nb, stride, step * stride, step, x, x_stride, y,
                             ldy, first * kGroupColumns, n);
    });
    for (; g + 2 * G <= groups; g += 2 * G)
        pairs<kFormat, R, G>(tile + g * stride, nb, stride, stride, 1, x, x_stride, y, ldy,
                             g * kGroupColumns, n);
    for (; g + 2 <= groups; g += 2)
        pairs<kFormat, R, 1>(tile + g * stride, nb, stride, stride, 1, x, x_stride, y, ldy,
                             g * kGroupColumns, n);
    if (g < groups)
        pairs<kFormat, R, 1>(tile + g * stride, nb, stride, 0, 1, x, x_stride, y, ldy,
                             g * kGroupColumns, n);
}

template <GroupedFormat kFormat>
void gemm(const std::uint8_t* tile, std::int64_t k, std::int64_t n, const ActBlock* x,
          std::int64_t x_stride, std::int64_t rows_total, float* y, std::int64_t ldy) noexcept {
    const auto nb = static_cast<std::int64_t>(ggml_blocks(static_cast<std::size_t>(k)));
    constexpr int kOnePass = kOnePassRows<kFormat>;
    if constexpr (kOnePass > kPassRows)
        if (rows_total > kPassRows && rows_total <= kOnePass) {
            auto one_pass = [&](auto height, std::int64_t) {
                rows<kFormat, decltype(height)::value, 1>(tile, nb, n, x, x_stride, y, ldy);
            };
            return last_row_pass<kOnePass>(rows_total, 0, one_pass);
        }
    row_passes<kPassRows>(rows_total, [&](auto height, std::int64_t m) {
        constexpr int R = decltype(height)::value;
        rows<kFormat, R, kPassPairs>(tile, nb, n, x + m * x_stride, x_stride, y + m * ldy, ldy);
    });
}

}  // namespace

GroupedKernels grouped_kernels_avx512_vnni() noexcept {
    return {{&gemm<GroupedFormat::q8_0>, nullptr}, {&gemm<GroupedFormat::q4_0>, nullptr}};
}

}  // namespace swiglu::detail
