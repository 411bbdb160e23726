// The K-quant kernels for AVX2 (+FMA, F16C), shaped as Q4_0's
// (grouped_gemm_avx2_fma.cpp): one vector per group of 8 columns, one 32-bit
// lane per column (kquant_layout.hpp), vpmaddubsw multiplying 32 weight
// quants (u8) by 4 activation quants (s8) broadcast to every lane, so a
// super-block ends in one vector of 8 column sums: no horizontal reduction.
// Several rows share each weight load. Bits as the scalar reference
// (kquant_gemm.hpp): every integer sum is exact, so only the two (one) f32
// fmas per super-block need the reference's order.
#include <immintrin.h>

#include <cstring>

#include "kernels/grouped_avx2.hpp"
#include "kernels/grouped_prefetch.hpp"
#include "kernels/kquant_gemm.hpp"
#include "kernels/kquant_layout.hpp"
#include "kernels/row_passes.hpp"

namespace swiglu::detail {

namespace {

// 16 bytes at p in both 128-bit halves (vpshufb picks within each half).
inline __m256i broadcast16(const std::uint8_t* p) {
    return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Two 16-bit values at bsums + 2 i, broadcast to every column lane.
inline __m256i broadcast_bsums(const ActBlockK& a, int i) {
    std::int32_t v;
    std::memcpy(&v, a.bsums + 2 * i, sizeof(v));
    return _mm256_set1_epi32(v);
}

// Shifts every 16-bit element left by s (right by -s); with a byte mask
// after it, moves bit b of every byte to bit b + s of the same byte.
inline __m256i shift16(__m256i v, int s) {
    return s >= 0 ? _mm256_slli_epi16(v, s) : _mm256_srli_epi16(v, -s);
}

// A vpshufb control over 16 bytes broadcast to both halves that gives
// column lane j (j = 0..7; 0..3 in the low half, 4..7 in the high) the 4
// bytes (first + j, second + j, third + j, fourth + j), -1 for a zero byte.
inline __m256i lane_bytes(int first, int second, int third, int fourth) {
    alignas(32) std::int8_t c[32];
    for (int j = 0; j < 8; ++j) {
        const int o[4] = {first, second, third, fourth};
        for (int t = 0; t < 4; ++t)
            c[4 * j + t] = static_cast<std::int8_t>(o[t] < 0 ? -1 : o[t] + j);
    }
    return _mm256_load_si256(reinterpret_cast<const __m256i*>(c));
}

// Pairs of 16-bit multipliers per column lane from the record's bytes
// (8 per sub-block, byte 8 i + j for column j), for vpmaddwd:
//   u8 (Q4_K, Q5_K): the low byte of each 16-bit half, the high byte zero;
//   s8 (Q6_K): the high byte, then an arithmetic shift right by 8.
// `which` picks (sub-block i, sub-block i) or (i, i + 1) (i even) out of the
// 16 bytes of sub-blocks i & ~1 and (i & ~1) + 1.
struct PairControls {
    __m256i same_u8[2], same_s8[2], next_u8, next_s8;
};
inline PairControls pair_controls() {
    PairControls p;
    for (int h = 0; h < 2; ++h) {
        p.same_u8[h] = lane_bytes(8 * h, -1, 8 * h, -1);
        p.same_s8[h] = lane_bytes(-1, 8 * h, -1, 8 * h);
    }
    p.next_u8 = lane_bytes(0, -1, 8, -1);
    p.next_s8 = lane_bytes(-1, 0, -1, 8);
    return p;
}

// A super-block's record is over a kilobyte: software prefetch of the
// record kPrefetchDistance ahead in its stream (grouped_prefetch.hpp for
// why and how far, and for PrefetchSpan: past the stream's end, the next
// pass's), an eighth of it per chunk of 32 inputs so the requests spread
// over the work. Touches 64 bytes apart from byte bytes * c / 8 cover every
// line up to the next chunk's first once 64 (touches - 1) + 1 >= bytes / 8.
template <GroupedFormat kFormat>
[[gnu::always_inline]] inline void prefetch_chunk(const std::uint8_t* record, int c,
                                                  PrefetchSpan span) {
    constexpr std::int64_t kEighth = k_record(kFormat).bytes / 8;
    constexpr int kTouches = static_cast<int>((kEighth - 1 + 63) / 64) + 1;
    for (int l = 0; l < kTouches; ++l)
        _mm_prefetch(reinterpret_cast<const char*>(
                         prefetch_target(record, kPrefetchDistance + kEighth * c + 64 * l, span)),
                     _MM_HINT_T0);
}

// isum (and msum) of one super-block b for R rows, lane j = column j:
//   isum = sum_i sc_i * S_i (Q6_K: S_i less 32 * bsums[i]),
//   msum = sum_i m_i * (bsums[2 i] + bsums[2 i + 1]) (Q4_K, Q5_K).
// A sub-block's S stays in 16 bits over as many vpmaddubsw as cannot
// saturate (each output at most 2 q 127; an s16 of sums at most 2^15 - 1):
// Q4_K (q <= 15) all 8 of a sub-block (30480), Q5_K (q <= 31) 4 (31496),
// Q6_K (q <= 63) 2 (32004); then one vpmaddwd with (sc, sc) in the
// column's lane multiplies and adds both halves into 32 bits at once.
template <GroupedFormat kFormat, int R>
[[gnu::always_inline]] inline void super_block_sums(const std::uint8_t* record, const ActBlockK* xb,
                                                    std::int64_t x_stride, const PairControls& pc,
                                                    PrefetchSpan span, __m256i (&isum)[R],
                                                    __m256i (&msum)[R]) {
    constexpr KRecordLayout kR = k_record(kFormat);
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    for (int r = 0; r < R; ++r) isum[r] = _mm256_setzero_si256();
    if constexpr (kFormat != GroupedFormat::q6_k) {
        // 8 chunks of 32 inputs = 8 sub-blocks; p = 0..3 as Q4_0's record.
        constexpr int kFlush = kFormat == GroupedFormat::q4_k ? 4 : 2;  // p per 16-bit sum
        for (int c = 0; c < 8; ++c) {
            prefetch_chunk<kFormat>(record, c, span);
            const __m256i sc = _mm256_shuffle_epi8(broadcast16(record + kR.scales + 16 * (c / 2)),
                                                   pc.same_u8[c % 2]);
            __m256i high;
            if constexpr (kFormat == GroupedFormat::q5_k) high = load(record + kR.high + 32 * c);
            __m256i sum16[R];
            for (int r = 0; r < R; ++r) sum16[r] = _mm256_setzero_si256();
            for (int p = 0; p < 4; ++p) {
                const __m256i packed = load(record + 128 * c + 32 * p);
                __m256i lo = _mm256_and_si256(packed, nibble);
                __m256i hi = _mm256_and_si256(_mm256_srli_epi16(packed, 4), nibble);
                if constexpr (kFormat == GroupedFormat::q5_k) {
                    // Bit 2 p (2 p + 1) of the plane is bit 4 of lo (hi).
                    const __m256i bit4 = _mm256_set1_epi8(0x10);
                    lo = _mm256_or_si256(lo, _mm256_and_si256(shift16(high, 4 - 2 * p), bit4));
                    hi = _mm256_or_si256(hi, _mm256_and_si256(shift16(high, 3 - 2 * p), bit4));
                }
                for (int r = 0; r < R; ++r) {
                    const ActBlockK& a = xb[r * x_stride];
                    const __m256i plo = _mm256_maddubs_epi16(lo, broadcast4(a, 8 * c + 2 * p));
                    const __m256i phi = _mm256_maddubs_epi16(hi, broadcast4(a, 8 * c + 2 * p + 1));
                    // A fresh 16-bit sum at each flush (GCC folds the add of zero).
                    sum16[r] = _mm256_add_epi16(p % kFlush == 0 ? _mm256_setzero_si256() : sum16[r],
                                                _mm256_add_epi16(plo, phi));
                    in_register(sum16[r]);
                    if (p % kFlush == kFlush - 1) {
                        isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(sum16[r], sc));
                        in_register(isum[r]);
                    }
                }
            }
        }
        // (m_2k, m_2k+1) per lane against (B_2k, B_2k+1), B_i = bsums[2 i] + bsums[2 i + 1].
        __m256i mins[4];
        for (int k = 0; k < 4; ++k)
            mins[k] = _mm256_shuffle_epi8(broadcast16(record + kR.mins + 16 * k), pc.next_u8);
        for (int r = 0; r < R; ++r) {
            const ActBlockK& a = xb[r * x_stride];
            const __m128i b8 =
                _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a.bsums)),
                               _mm_loadu_si128(reinterpret_cast<const __m128i*>(a.bsums + 8)));
            const __m256i b = _mm256_castsi128_si256(b8);
            __m256i m =
                _mm256_madd_epi16(mins[0], _mm256_permutevar8x32_epi32(b, _mm256_setzero_si256()));
            for (int k = 1; k < 4; ++k)
                m = _mm256_add_epi32(m, _mm256_madd_epi16(mins[k], _mm256_permutevar8x32_epi32(
                                                                       b, _mm256_set1_epi32(k))));
            msum[r] = m;
        }
    } else {
        // Chunk c = sub-blocks 2 c (p = 0, 1: plane v = 0) and 2 c + 1 (p = 2, 3: v = 1).
        const __m256i bits45 = _mm256_set1_epi8(0x30);
        for (int c = 0; c < 8; ++c) {
            prefetch_chunk<kFormat>(record, c, span);
            const __m256i scales = broadcast16(record + kR.scales + 16 * c);
            for (int v = 0; v < 2; ++v) {
                const __m256i sc = _mm256_srai_epi16(_mm256_shuffle_epi8(scales, pc.same_s8[v]), 8);
                const __m256i high = load(record + kR.high + 64 * c + 32 * v);
                for (int s = 0; s < 2; ++s) {
                    const int p = 2 * v + s;
                    const __m256i packed = load(record + 128 * c + 32 * p);
                    // Bits 4 s, 4 s + 1 (4 s + 2, 4 s + 3) of the plane are bits 4, 5 of lo (hi).
                    const __m256i lo =
                        _mm256_or_si256(_mm256_and_si256(packed, nibble),
                                        _mm256_and_si256(shift16(high, 4 - 4 * s), bits45));
                    const __m256i hi =
                        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(packed, 4), nibble),
                                        _mm256_and_si256(shift16(high, 2 - 4 * s), bits45));
                    for (int r = 0; r < R; ++r) {
                        const ActBlockK& a = xb[r * x_stride];
                        const __m256i sum16 = _mm256_add_epi16(
                            _mm256_maddubs_epi16(lo, broadcast4(a, 8 * c + 2 * p)),
                            _mm256_maddubs_epi16(hi, broadcast4(a, 8 * c + 2 * p + 1)));
                        isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(sum16, sc));
                        in_register(isum[r]);
                    }
                }
            }
        }
        // The offset: isum -= 32 sum_i sc_i bsums[i], pairs (sc_2k, sc_2k+1) per lane.
        __m256i pairs[8];
        for (int k = 0; k < 8; ++k)
            pairs[k] = _mm256_srai_epi16(
                _mm256_shuffle_epi8(broadcast16(record + kR.scales + 16 * k), pc.next_s8), 8);
        for (int r = 0; r < R; ++r) {
            const ActBlockK& a = xb[r * x_stride];
            __m256i corr = _mm256_madd_epi16(pairs[0], broadcast_bsums(a, 0));
            for (int k = 1; k < 8; ++k)
                corr = _mm256_add_epi32(corr, _mm256_madd_epi16(pairs[k], broadcast_bsums(a, k)));
            isum[r] = _mm256_sub_epi32(isum[r], _mm256_slli_epi32(corr, 5));
        }
    }
}

// Groups a 1-row pass (decode) reads side by side. First 4, as Q4_0's
// kernel (the kernel alone on a k = 4096, n = 22016 decode, Zen 5, one
// core: 4 streams read Q4_K at 0.95-1.14x Q4_0's GB/s, 2 at about 0.8x).
// Since the strided passes and the joined tiles, the block reads 2 faster:
// this kernel forced on the same Zen 5, the block in one process switching
// call by call (medians of 16 rounds; 1 / 2 threads), llama7b one token
// Q4_K 1.23x / 1.42x, Q5_K 1.11x / 1.46x, Q6_K 1.02x / 1.25x (one group:
// 0.98-1.49x); qwen3moe's experts Q4_K 1.33x / 1.33x, Q6_K 1.39x / 1.30x.
// Q4_0's and Q8_0's AVX2 kernel keeps its 4 and 2 (the others there:
// 0.76-0.93x). Not measured on an AVX2-only CPU (docs/measurements.md,
// "Q6_K's decode over one pair"). Rows per pass: 4, 5 and 6 gave the same
// M = 64 rate within the shared machine's noise.
constexpr int kDecodeGroups = 2;
constexpr int kMaxRows = 4;

// R rows of y for the whole tile: per group of 8 columns, its records in
// order, one f32 accumulator per row and the reference's fmas per
// super-block. G groups side by side, in strided passes (grouped_prefetch.hpp)
// and adjacent ones for the groups after them, the last ones (fewer than G)
// one at a time.
template <GroupedFormat kFormat, int R, int G = 1>
void rows(const std::uint8_t* tile, std::int64_t nb, std::int64_t n, const ActBlockK* x,
          std::int64_t x_stride, float* y, std::int64_t ldy) {
    constexpr KRecordLayout kR = k_record(kFormat);
    const std::int64_t groups = column_groups(n);
    const std::int64_t stride = nb * static_cast<std::int64_t>(kR.bytes);
    const PairControls pc = pair_controls();
    const auto pass = [&](std::int64_t g, std::int64_t step) {
        const std::uint8_t* record = tile + g * stride;
        __m256 acc[G][R];
        for (int q = 0; q < G; ++q)
            for (int r = 0; r < R; ++r) acc[q][r] = _mm256_setzero_ps();
        for (std::int64_t b = 0; b < nb; ++b, record += kR.bytes) {
            const PrefetchSpan span =
                next_pass_span(b, kR.bytes, stride, streams_to_next_pass(step, G));
            for (int q = 0; q < G; ++q) {
                const std::uint8_t* rq = record + q * step * stride;
                __m256i isum[R], msum[R];
                super_block_sums<kFormat, R>(rq, x + b, x_stride, pc, span, isum, msum);
                const __m256 d =
                    _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rq + kR.d)));
                for (int r = 0; r < R; ++r) {
                    const __m256 ad = _mm256_set1_ps(x[r * x_stride + b].d);
                    acc[q][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r]), _mm256_mul_ps(d, ad),
                                                acc[q][r]);
                    if constexpr (kFormat != GroupedFormat::q6_k) {
                        const __m256 dmin = _mm256_cvtph_ps(
                            _mm_loadu_si128(reinterpret_cast<const __m128i*>(rq + kR.dmin)));
                        acc[q][r] = _mm256_fmadd_ps(
                            _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_setzero_si256(), msum[r])),
                            _mm256_mul_ps(dmin, ad), acc[q][r]);
                    }
                }
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
void gemm(const std::uint8_t* tile, std::int64_t k, std::int64_t n, const ActBlockK* x,
          std::int64_t x_stride, std::int64_t rows_total, float* y, std::int64_t ldy) noexcept {
    const std::int64_t nb = format_blocks(kFormat, k);
    row_passes<kMaxRows>(rows_total, [&](auto height, std::int64_t m) {
        constexpr int R = decltype(height)::value;
        rows<kFormat, R, R == 1 ? kDecodeGroups : 1>(tile, nb, n, x + m * x_stride, x_stride,
                                                     y + m * ldy, ldy);
    });
}

}  // namespace

KQuantKernels kquant_kernels_avx2_fma() noexcept {
    return {&gemm<GroupedFormat::q4_k>, &gemm<GroupedFormat::q5_k>, &gemm<GroupedFormat::q6_k>};
}

}  // namespace swiglu::detail
