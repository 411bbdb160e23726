// The grouped kernels for AVX2 (+FMA, F16C): vpmaddubsw multiplies 32
// weight quants by 32 activation quants per instruction, one 32-bit lane per
// column of the group (grouped_layout.hpp), so a block ends in one vector of
// 8 column sums: no horizontal reduction. Up to 4 rows share each weight
// load. Bits as the scalar reference (grouped_gemm.hpp).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/grouped_avx2.hpp"
#include "kernels/grouped_gemm.hpp"
#include "kernels/grouped_prefetch.hpp"
#include "kernels/row_passes.hpp"

namespace swiglu::detail {

namespace {

constexpr int kMaxRows = 4;  // rows per pass: 4 accumulators x 2 vectors of 16 registers

inline __m256 block_scales(const std::uint8_t* scales, const ActBlock& a) {
    const __m256 w = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales)));
    return _mm256_mul_ps(w, _mm256_set1_ps(a.d));
}

// Both block_sums are inlined into the loop over blocks, always: as a call
// (GCC stopped inlining the Q4_0 one once rows had a second instance per
// row count) the sums went through memory at every block, 1.4x slower.
//
// The s32 dot products of one block (b) for R rows: lane j of sums[r] =
// sum over the block's 32 inputs of column j's quant times row r's.
//
// Q4_0: nibbles q in [0, 15] are vpmaddubsw's unsigned operand as they are;
// sum (q - 8) x = sum q x - 8 sum x. A pair sum is at most 2 * 15 * 127 and a
// block adds 8 of them per lane: 30480 < 2^15, so the block sums in 16 bits.
template <int R>
[[gnu::always_inline]] inline void block_sums_q4_0(const std::uint8_t* record, const ActBlock* x,
                                                   std::int64_t x_stride, std::int64_t b,
                                                   __m256i (&sums)[R]) {
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    __m256i sum16[R];
    for (int r = 0; r < R; ++r) sum16[r] = _mm256_setzero_si256();
    for (int p = 0; p < 4; ++p) {
        const __m256i packed = load(record + 32 * p);
        const __m256i lo = _mm256_and_si256(packed, nibble);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(packed, 4), nibble);
        for (int r = 0; r < R; ++r) {
            const ActBlock& a = x[r * x_stride + b];
            sum16[r] = _mm256_add_epi16(sum16[r], _mm256_maddubs_epi16(lo, broadcast4(a, 2 * p)));
            sum16[r] =
                _mm256_add_epi16(sum16[r], _mm256_maddubs_epi16(hi, broadcast4(a, 2 * p + 1)));
            in_register(sum16[r]);
        }
    }
    for (int r = 0; r < R; ++r)
        sums[r] = _mm256_sub_epi32(_mm256_madd_epi16(sum16[r], _mm256_set1_epi16(1)),
                                   _mm256_set1_epi32(8 * x[r * x_stride + b].sum));
}

// Q8_0: both operands signed, so vpmaddubsw gets |w| and x with w's sign
// (vpsignb); a pair sum reaches 2 * 128 * 127, so each goes to 32 bits
// (vpmaddwd) at once.
template <int R>
[[gnu::always_inline]] inline void block_sums_q8_0(const std::uint8_t* record, const ActBlock* x,
                                                   std::int64_t x_stride, std::int64_t b,
                                                   __m256i (&sums)[R]) {
    const __m256i ones = _mm256_set1_epi16(1);
    for (int r = 0; r < R; ++r) sums[r] = _mm256_setzero_si256();
    for (int s = 0; s < 8; ++s) {
        const __m256i w = load(record + 32 * s);
        const __m256i magnitude = _mm256_sign_epi8(w, w);  // |w|; -128 stays 0x80 = 128
        for (int r = 0; r < R; ++r) {
            const __m256i signed_x = _mm256_sign_epi8(broadcast4(x[r * x_stride + b], s), w);
            sums[r] = _mm256_add_epi32(
                sums[r], _mm256_madd_epi16(_mm256_maddubs_epi16(magnitude, signed_x), ones));
            in_register(sums[r]);
        }
    }
}

// Groups a 1-row pass (decode) reads side by side: G streams per core keep
// DRAM busier than one, as in the DRAM probe and the panel kernels; Q8_0
// (twice the bytes per record) was no faster over 4 than over 2
// (docs/measurements.md, "Decode on the grouped kernels").
template <GroupedFormat kFormat>
constexpr int kDecodeGroups = kFormat == GroupedFormat::q4_0 ? 4 : 2;

// R rows of y for the whole tile: per group of 8 columns, its records in
// order, one f32 accumulator per row (grouped_gemm.hpp's numerics). G groups
// side by side, in strided passes (grouped_prefetch.hpp) and adjacent ones
// for the groups after them, the last ones (fewer than G) one at a time.
template <GroupedFormat kFormat, int R, int G = 1>
void rows(const std::uint8_t* tile, std::int64_t nb, std::int64_t n, const ActBlock* x,
          std::int64_t x_stride, float* y, std::int64_t ldy) {
    constexpr std::size_t kRecord = record_bytes(kFormat);
    const std::int64_t groups = column_groups(n);
    const std::int64_t stride = nb * static_cast<std::int64_t>(kRecord);
    const auto pass = [&](std::int64_t g, std::int64_t step) {
        const std::uint8_t* record = tile + g * stride;
        __m256 acc[G][R];
        for (int q = 0; q < G; ++q)
            for (int r = 0; r < R; ++r) acc[q][r] = _mm256_setzero_ps();
        for (std::int64_t b = 0; b < nb; ++b, record += kRecord) {
            const PrefetchSpan span =
                next_pass_span(b, kRecord, stride, streams_to_next_pass(step, G));
            for (int q = 0; q < G; ++q) {
                const std::uint8_t* rq = record + q * step * stride;
                prefetch_ahead<kFormat>(rq, span);
                __m256i sums[R];
                if constexpr (kFormat == GroupedFormat::q8_0)
                    block_sums_q8_0<R>(rq, x, x_stride, b, sums);
                else
                    block_sums_q4_0<R>(rq, x, x_stride, b, sums);
                for (int r = 0; r < R; ++r)
                    acc[q][r] = _mm256_fmadd_ps(
                        _mm256_cvtepi32_ps(sums[r]),
                        block_scales(rq + record_quant_bytes(kFormat), x[r * x_stride + b]),
                        acc[q][r]);
            }
        }
        for (int q = 0; q < G; ++q)
            for (int r = 0; r < R; ++r) store_group(acc[q][r], y + r * ldy, g + q * step, n);
    };
    std::int64_t g = 0;
    if constexpr (G > 1) g = strided_passes(groups, G, pass);
    for (; g + G <= groups; g += G) pass(g, 1);
    if constexpr (G > 1)
        if (g < groups)
            rows<kFormat, R, 1>(tile + g * stride, nb, n - g * kGroupColumns, x, x_stride,
                                y + g * kGroupColumns, ldy);
}

template <GroupedFormat kFormat>
void gemm(const std::uint8_t* tile, std::int64_t k, std::int64_t n, const ActBlock* x,
          std::int64_t x_stride, std::int64_t rows_total, float* y, std::int64_t ldy) noexcept {
    const auto nb = static_cast<std::int64_t>(ggml_blocks(static_cast<std::size_t>(k)));
    row_passes<kMaxRows>(rows_total, [&](auto height, std::int64_t m) {
        constexpr int R = decltype(height)::value;
        rows<kFormat, R, R == 1 ? kDecodeGroups<kFormat> : 1>(tile, nb, n, x + m * x_stride,
                                                              x_stride, y + m * ldy, ldy);
    });
}

// Unpacking: a vector of quants in the record layout (byte 4 j + t = column
// j, input t of 4) is transposed to 4 rows of 8 columns (vpshufb gathers
// each input's byte of 4 columns per 128-bit lane, vpermd joins the lanes),
// widened to s32, converted and scaled: 4 rows of out, from row `row`.
inline void store_rows(__m256i q, __m256 scales, std::int64_t row, std::int64_t rows, float* out,
                       std::int64_t ldo, std::int64_t columns) {
    const __m256i by_input = _mm256_shuffle_epi8(
        q, _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, 0, 4, 8, 12, 1, 5,
                            9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
    const __m256i joined =
        _mm256_permutevar8x32_epi32(by_input, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    const __m128i halves[2] = {_mm256_castsi256_si128(joined), _mm256_extracti128_si256(joined, 1)};
    for (int t = 0; t < 4 && row + t < rows; ++t) {
        const __m128i bytes = t % 2 ? _mm_srli_si128(halves[t / 2], 8) : halves[t / 2];
        const __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes)), scales);
        store_group(v, out + (row + t) * ldo, 0, columns);
    }
}

template <GroupedFormat kFormat>
void unpack(const std::uint8_t* tile, std::int64_t k, std::int64_t n, std::int64_t b, float* out,
            std::int64_t ldo) noexcept {
    constexpr std::size_t kRecord = record_bytes(kFormat);
    const auto nb = static_cast<std::int64_t>(ggml_blocks(static_cast<std::size_t>(k)));
    const std::int64_t rows = std::min<std::int64_t>(kGgmlBlock, k - b * kGgmlBlock);
    for (std::int64_t g = 0; g * kGroupColumns < n; ++g) {
        const std::uint8_t* record = tile + (g * nb + b) * static_cast<std::int64_t>(kRecord);
        const __m256 scales = _mm256_cvtph_ps(_mm_loadu_si128(
            reinterpret_cast<const __m128i*>(record + record_quant_bytes(kFormat))));
        float* dst = out + g * kGroupColumns;
        const std::int64_t columns = n - g * kGroupColumns;
        if (kFormat == GroupedFormat::q8_0) {
            for (int s = 0; s < 8; ++s)
                store_rows(load(record + 32 * s), scales, 4 * s, rows, dst, ldo, columns);
        } else {
            const __m256i nibble = _mm256_set1_epi8(0x0F), eight = _mm256_set1_epi8(8);
            for (int p = 0; p < 4; ++p) {
                const __m256i packed = load(record + 32 * p);
                const __m256i lo = _mm256_and_si256(packed, nibble);
                const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(packed, 4), nibble);
                store_rows(_mm256_sub_epi8(lo, eight), scales, 8 * p, rows, dst, ldo, columns);
                store_rows(_mm256_sub_epi8(hi, eight), scales, 8 * p + 4, rows, dst, ldo, columns);
            }
        }
    }
}

}  // namespace

GroupedKernels grouped_kernels_avx2_fma() noexcept {
    return {{&gemm<GroupedFormat::q8_0>, &unpack<GroupedFormat::q8_0>},
            {&gemm<GroupedFormat::q4_0>, &unpack<GroupedFormat::q4_0>}};
}

}  // namespace swiglu::detail
