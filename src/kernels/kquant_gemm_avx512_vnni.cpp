// The K-quant kernels for AVX-512 with VNNI, built as Q4_0's grouped kernel
// (grouped_gemm_avx512_vnni.cpp): a zmm holds two column groups
// (kquant_layout.hpp), group g in lanes 0-7 and g + 1 in 8-15, vpdpbusd
// multiplies unsigned weight quants by a broadcast of 4 signed activation
// quants, and several rows share each weight load. Per super-block and row:
//   - each sub-block's column sums S with vpdpbusd (Q6_K: from -32 bsums[i],
//     which takes out its offset of 32), then isum += S * sc (vpmulld, the
//     sub-block's 16 scales widened to 32 bits);
//   - Q4_K, Q5_K: -msum = sum_i m_i * (-(bsums[2i] + bsums[2i+1])) with
//     vpdpwssd, mins paired as 16-bit words against pairs of the row's
//     negated 32-sums, so no negation is left for after;
//   - acc = fma(float(isum), d * a.d, acc), acc = fma(float(-msum), dmin * a.d,
//     acc) in f32, exactly kquant_gemm.hpp's order.
// The integer sums are the reference's exact integers (any order gives
// them), so the bits are the scalar reference's.
//
// GCC 12's AVX-512 intrinsics (_mm512_inserti64x4, _mm512_cvtph_ps,
// _mm512_cvtepi32_ps) start from a deliberately undefined register and then
// warn that it "may be used uninitialized" once inlined (GCC bug 105593):
// silenced for this TU only.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "kernels/grouped_avx512.hpp"
#include "kernels/grouped_prefetch.hpp"
#include "kernels/kquant_gemm.hpp"
#include "kernels/kquant_layout.hpp"
#include "kernels/row_passes.hpp"

namespace swiglu::detail {

namespace {

// A sub-block's 8 bytes per group (its scales) widened to one 32-bit lane
// per column: u8 (Q4_K, Q5_K) or s8 (Q6_K).
template <bool kSigned>
inline __m512i pair_bytes(const std::uint8_t* p, std::int64_t partner) {
    const __m128i v =
        _mm_unpacklo_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)),
                           _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + partner)));
    return kSigned ? _mm512_cvtepi8_epi32(v) : _mm512_cvtepu8_epi32(v);
}

// The mins of sub-blocks 2 k and 2 k + 1 (16 bytes per group at p) as two
// 16-bit words per column lane, m_2k below m_2k+1, for vpdpwssd.
inline __m512i pair_mins(const std::uint8_t* p, std::int64_t partner) {
    const auto interleave = [](const std::uint8_t* at) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
        return _mm_unpacklo_epi8(v, _mm_unpackhi_epi64(v, v));
    };
    const __m256i both =
        _mm256_inserti128_si256(_mm256_castsi128_si256(interleave(p)), interleave(p + partner), 1);
    return _mm512_cvtepu8_epi16(both);
}

// v's 16-bit lanes shifted left by s bits (right by -s). Masked after, so
// bits crossing between a lane's two bytes never matter.
inline __m512i shift16(__m512i v, int s) {
    return s > 0   ? _mm512_slli_epi16(v, static_cast<unsigned>(s))
           : s < 0 ? _mm512_srli_epi16(v, static_cast<unsigned>(-s))
                   : v;
}

// The quants of inputs 32 c + 8 p + (0..3) (lo) and 32 c + 8 p + 4 + (0..3)
// (hi) of chunk c, for the pair whose record is at rec: the nibbles, joined
// with their high bits (kquant_layout.hpp).
template <GroupedFormat kFormat>
inline void quants(const std::uint8_t* rec, std::int64_t partner, int c, int p, __m512i& lo,
                   __m512i& hi) {
    constexpr KRecordLayout kL = k_record(kFormat);
    const __m512i nibble = _mm512_set1_epi8(0x0F);
    const __m512i packed = load_pair(rec + 128 * c + 32 * p, partner);
    lo = _mm512_and_si512(packed, nibble);
    hi = _mm512_and_si512(_mm512_srli_epi16(packed, 4), nibble);
    if constexpr (kFormat == GroupedFormat::q5_k) {
        // bit 2 p: the fifth bit of lo, bit 2 p + 1: of hi.
        const __m512i bits = load_pair(rec + kL.high + 32 * c, partner);
        const __m512i fifth = _mm512_set1_epi8(0x10);
        lo = _mm512_or_si512(lo, _mm512_and_si512(shift16(bits, 4 - 2 * p), fifth));
        hi = _mm512_or_si512(hi, _mm512_and_si512(shift16(bits, 3 - 2 * p), fifth));
    } else if constexpr (kFormat == GroupedFormat::q6_k) {
        // p = 2 v + s: bits 4 s, 4 s + 1 of plane v: lo's top two; 4 s + 2, 4 s + 3: hi's.
        const __m512i bits = load_pair(rec + kL.high + 64 * c + 32 * (p / 2), partner);
        const __m512i top = _mm512_set1_epi8(0x30);
        const int s = p % 2;
        lo = _mm512_or_si512(lo, _mm512_and_si512(shift16(bits, 4 - 4 * s), top));
        hi = _mm512_or_si512(hi, _mm512_and_si512(shift16(bits, 2 - 4 * s), top));
    }
}

// One sub-block i of R rows over G pairs: the column sums S from `start`
// (inputs 8 p0 .. 8 p1 of chunk c), then isum += S * sc.
template <GroupedFormat kFormat, int R, int G>
inline void sub_block(const std::uint8_t* const (&rec)[G], std::int64_t partner,
                      const ActBlockK* const (&a)[R], int c, int p0, int p1, int i,
                      const __m512i (&start)[R], __m512i (&isum)[G][R]) {
    constexpr KRecordLayout kL = k_record(kFormat);
    __m512i sums[G][R];
    for (int r = 0; r < R; ++r)
        for (int q = 0; q < G; ++q) sums[q][r] = start[r];
    for (int p = p0; p < p1; ++p) {
        __m512i lo[G], hi[G];
        for (int q = 0; q < G; ++q) quants<kFormat>(rec[q], partner, c, p, lo[q], hi[q]);
        for (int r = 0; r < R; ++r) {
            const __m512i a_lo = broadcast4(*a[r], 8 * c + 2 * p);
            const __m512i a_hi = broadcast4(*a[r], 8 * c + 2 * p + 1);
            for (int q = 0; q < G; ++q) {
                sums[q][r] = _mm512_dpbusd_epi32(sums[q][r], lo[q], a_lo);
                sums[q][r] = _mm512_dpbusd_epi32(sums[q][r], hi[q], a_hi);
            }
        }
    }
    for (int q = 0; q < G; ++q) {
        const __m512i sc =
            pair_bytes<kFormat == GroupedFormat::q6_k>(rec[q] + kL.scales + 8 * i, partner);
        for (int r = 0; r < R; ++r)
            isum[q][r] = _mm512_add_epi32(isum[q][r], _mm512_mullo_epi32(sums[q][r], sc));
    }
}

// Q6_K's quants of sub-block 2 c + v for the pair whose record is at rec:
// w[t] holds inputs 32 c + 16 v + 4 t .. + 3 (t = 0..3).
inline void q6_quants(const std::uint8_t* rec, std::int64_t partner, int c, int v,
                      __m512i (&w)[4]) {
    constexpr KRecordLayout kL = k_record(GroupedFormat::q6_k);
    const __m512i nibble = _mm512_set1_epi8(0x0F);
    const __m512i bits = load_pair(rec + kL.high + 64 * c + 32 * v, partner);
    const __m512i m1 = _mm512_and_si512(bits, _mm512_set1_epi8(0x33));
    const __m512i m2 = _mm512_and_si512(bits, _mm512_set1_epi8(static_cast<char>(0xCC)));
    const __m512i n0 = load_pair(rec + 128 * c + 64 * v, partner);
    const __m512i n1 = load_pair(rec + 128 * c + 64 * v + 32, partner);
    // The first operand is the destination: a value dead after, so that no
    // copy of the constant is made. 0xD8: nibble ? second : first; 0xE4:
    // nibble ? first : second.
    const __m512i n0_hi = _mm512_srli_epi16(n0, 4);
    const __m512i n1_hi = _mm512_srli_epi16(n1, 4);
    w[0] = _mm512_ternarylogic_epi32(_mm512_slli_epi16(m1, 4), n0, nibble, 0xD8);
    w[1] = _mm512_ternarylogic_epi32(n0_hi, _mm512_slli_epi16(m2, 2), nibble, 0xE4);
    w[2] = _mm512_ternarylogic_epi32(n1, m1, nibble, 0xE4);
    w[3] = _mm512_ternarylogic_epi32(n1_hi, _mm512_srli_epi16(m2, 2), nibble, 0xE4);
}

// The sums' starts -32 bsums[i] of one row's 16 sub-blocks (Q6_K), stored
// so that each is read back as one broadcast load. Both tried in the
// expanded path too (expand() and expanded_rows()), 64 rows, one thread:
// 1.00-1.04x, no gain (its joins are paid once per tile call; its 4:1 ratio
// of vpdpbusd to the per-sub-block vpmulld + vpaddd is what bounds it).
inline void q6_offsets(const ActBlockK& a, std::int32_t* out) {
    const __m512i b =
        _mm512_cvtepi16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.bsums)));
    _mm512_store_si512(out, _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(b, 5)));
}

// Q6_K's sub-blocks 2 c + v (v = 0, 1) are plane v of chunk c: its 32 bytes
// hold the top bits of p = 2 v (bits 0-3) and 2 v + 1 (bits 4-7), so the
// plane is loaded once for both, masked once to its lo bits (0x33) and hi
// bits (0xCC), and each of the four quant vectors is one shift and one
// vpternlogd select (bits 0-3 from the nibbles, 4-7 from the shifted plane,
// whose 6-7 the premask left zero): 11 ops per 64 weights per column pair
// where quants() takes 17. The sums start at -32 bsums[i], read as a
// broadcast from a per-row table, not built per sub-block from a scalar.
// One 4096 x 11008 tile (llama7b's up projection), one thread, best of 200
// calls, beside the old code in the same run (this VM, a CI job sharing
// its 2 cores): 1 row 1.14-1.20 -> 0.88-0.97 ms (0.77x), 4 rows 1.92 ->
// 1.40 ms (0.73x).
template <int R, int G>
inline void q6_super_block_isum(const std::uint8_t* const (&rec)[G], std::int64_t partner,
                                const ActBlockK* const (&a)[R], __m512i (&isum)[G][R]) {
    constexpr KRecordLayout kL = k_record(GroupedFormat::q6_k);
    alignas(64) std::int32_t offset[R][16];
    for (int r = 0; r < R; ++r) q6_offsets(*a[r], offset[r]);
    for (int q = 0; q < G; ++q)
        for (int r = 0; r < R; ++r) isum[q][r] = _mm512_setzero_si512();
    for (int c = 0; c < 8; ++c) {
        // Unrolled: GCC 12 otherwise keeps the v loop rolled in the 6-row
        // pass (24 vpdpbusd per iteration, not 48). One tile in L2, one
        // thread, against the rolled loop in one process, two runs: 6 rows
        // 1.06-1.10x, 8 rows (6 + 2) 1.03-1.08x, 4 rows 0.99-1.05x, 1 row
        // 0.96-1.00x, where the 1-row pass over 2 pairs compiles the same
        // (docs/measurements.md, seventeenth session).
#pragma GCC unroll 2
        for (int v = 0; v < 2; ++v) {
            const int i = 2 * c + v;
            __m512i w[G][4];
            for (int q = 0; q < G; ++q) q6_quants(rec[q], partner, c, v, w[q]);
            __m512i sums[G][R];
            for (int r = 0; r < R; ++r) {
                const __m512i start = _mm512_set1_epi32(offset[r][i]);
                for (int q = 0; q < G; ++q) sums[q][r] = start;
                for (int t = 0; t < 4; ++t) {
                    const __m512i av = broadcast4(*a[r], 8 * c + 4 * v + t);
                    for (int q = 0; q < G; ++q)
                        sums[q][r] = _mm512_dpbusd_epi32(sums[q][r], w[q][t], av);
                }
            }
            for (int q = 0; q < G; ++q) {
                const __m512i sc = pair_bytes<true>(rec[q] + kL.scales + 8 * i, partner);
                for (int r = 0; r < R; ++r)
                    isum[q][r] = _mm512_add_epi32(isum[q][r], _mm512_mullo_epi32(sums[q][r], sc));
            }
        }
    }
}

// isum of R rows over G pairs for one super-block.
template <GroupedFormat kFormat, int R, int G>
inline void super_block_isum(const std::uint8_t* const (&rec)[G], std::int64_t partner,
                             const ActBlockK* const (&a)[R], __m512i (&isum)[G][R]) {
    for (int q = 0; q < G; ++q)
        for (int r = 0; r < R; ++r) isum[q][r] = _mm512_setzero_si512();
    for (int c = 0; c < 8; ++c) {
        __m512i start[R];
        if constexpr (kFormat == GroupedFormat::q6_k) {
            // Sub-blocks 2 c (p 0, 1) and 2 c + 1 (p 2, 3), offset 32 taken out.
            for (int h = 0; h < 2; ++h) {
                for (int r = 0; r < R; ++r)
                    start[r] = _mm512_set1_epi32(-32 * a[r]->bsums[2 * c + h]);
                sub_block<kFormat, R, G>(rec, partner, a, c, 2 * h, 2 * h + 2, 2 * c + h, start,
                                         isum);
            }
        } else {
            for (int r = 0; r < R; ++r) start[r] = _mm512_setzero_si512();
            sub_block<kFormat, R, G>(rec, partner, a, c, 0, 4, c, start, isum);
        }
    }
}

// -msum of R rows over G pairs (Q4_K, Q5_K): mins as word pairs against the
// row's negated 32-sums B_i = bsums[2 i] + bsums[2 i + 1] in pairs
// (|B_i| <= 32 * 127, a word).
template <GroupedFormat kFormat, int R, int G>
inline void super_block_neg_msum(const std::uint8_t* const (&rec)[G], std::int64_t partner,
                                 const ActBlockK* const (&a)[R], __m512i (&neg)[G][R]) {
    constexpr KRecordLayout kL = k_record(kFormat);
    __m512i mins[G][4];
    for (int q = 0; q < G; ++q)
        for (int k = 0; k < 4; ++k) mins[q][k] = pair_mins(rec[q] + kL.mins + 16 * k, partner);
    for (int r = 0; r < R; ++r) {
        const __m128i s0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a[r]->bsums));
        const __m128i s1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a[r]->bsums + 8));
        const __m128i neg_b = _mm_sub_epi16(_mm_setzero_si128(), _mm_hadd_epi16(s0, s1));
        alignas(16) std::int32_t b_pairs[4];
        _mm_store_si128(reinterpret_cast<__m128i*>(b_pairs), neg_b);
        for (int q = 0; q < G; ++q) neg[q][r] = _mm512_setzero_si512();
        for (int k = 0; k < 4; ++k) {
            const __m512i b = _mm512_set1_epi32(b_pairs[k]);
            for (int q = 0; q < G; ++q) neg[q][r] = _mm512_dpwssd_epi32(neg[q][r], mins[q][k], b);
        }
    }
}

// R rows of y over G pairs of groups from `first` on (pair q: groups at
// first + 2 q step strides and that + partner bytes, partner = step
// strides, or 0 for a last group alone), columns from c0 the same way: per pair, its
// records in order, one f32 accumulator per row.
template <GroupedFormat kFormat, int R, int G>
void pairs(const std::uint8_t* first, std::int64_t nb, std::int64_t stride, std::int64_t partner,
           std::int64_t step, const ActBlockK* x, std::int64_t x_stride, float* y, std::int64_t ldy,
           std::int64_t c0, std::int64_t n) {
    constexpr KRecordLayout kL = k_record(kFormat);
    __m512 acc[G][R];
    for (int q = 0; q < G; ++q)
        for (int r = 0; r < R; ++r) acc[q][r] = _mm512_setzero_ps();
    const std::uint8_t* record = first;
    for (std::int64_t b = 0; b < nb; ++b, record += kL.bytes) {
        const std::uint8_t* rec[G];
        const PrefetchSpan span =
            next_pass_span(b, kL.bytes, stride, streams_to_next_pass(step, 2 * G));
        for (int q = 0; q < G; ++q) {
            rec[q] = record + 2 * q * step * stride;
            prefetch_ahead<kFormat>(rec[q], span);
            prefetch_ahead<kFormat>(rec[q] + partner, span);
        }
        const ActBlockK* a[R];
        for (int r = 0; r < R; ++r) a[r] = x + r * x_stride + b;
        __m512i isum[G][R];
        if constexpr (kFormat == GroupedFormat::q6_k)
            q6_super_block_isum<R, G>(rec, partner, a, isum);
        else
            super_block_isum<kFormat, R, G>(rec, partner, a, isum);
        for (int q = 0; q < G; ++q) {
            const __m512 d = pair_f16(rec[q] + kL.d, partner);
            for (int r = 0; r < R; ++r)
                acc[q][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[q][r]),
                                            _mm512_mul_ps(d, _mm512_set1_ps(a[r]->d)), acc[q][r]);
        }
        if constexpr (kFormat != GroupedFormat::q6_k) {
            __m512i neg[G][R];
            super_block_neg_msum<kFormat, R, G>(rec, partner, a, neg);
            for (int q = 0; q < G; ++q) {
                const __m512 dmin = pair_f16(rec[q] + kL.dmin, partner);
                for (int r = 0; r < R; ++r)
                    acc[q][r] =
                        _mm512_fmadd_ps(_mm512_cvtepi32_ps(neg[q][r]),
                                        _mm512_mul_ps(dmin, _mm512_set1_ps(a[r]->d)), acc[q][r]);
            }
        }
    }
    for (int q = 0; q < G; ++q)
        for (int r = 0; r < R; ++r)
            store_pair(acc[q][r], y + r * ldy, c0 + 2 * q * step * kGroupColumns,
                       c0 + (2 * q + 1) * step * kGroupColumns, n);
}

// Pairs of groups a pass reads side by side: 2 for passes of up to
// kNarrowRows rows (a decode's single row then reads 4 weight streams per
// core, as Q4_0's kernel does), else 1; and rows per pass. Q4_K in passes
// of 4 rows over 2 pairs, as Q4_0; Q5_K and Q6_K, whose high bits take
// 6-8 more instructions per 32 bytes of nibbles to join, in passes of 6
// rows over 1 pair, so that more rows share that work. llama7b, 512
// tokens, 2 threads, Zen 5 (GFLOP/s; 4 rows x 2 pairs, 8 x 1, 6 x 1): Q4_K
// 835, 846, 811; Q5_K 646, 755, 877; Q6_K 496, 628, 663.
// Q6_K reads one pair at every row count: its 1- and 2-row passes over 2
// pairs ran slower than over one, the block in one process switching call
// by call (Zen 5, medians of 12-20 rounds; 2 / 1 threads): llama7b 1 token
// 1.11x / 1.10x, 2 tokens 1.18x / 1.09x; qwen3moe's experts 1.11x /
// 1.25x, OLMoE's 1.20x, mixtral's 1.11x. Over one pair Q5_K read 0.96x
// and Q4_K 0.97x / 1.02x: they keep 2. Why Q6_K alone is not known (no
// counters in this VM): its 2-pair pass moves zmm registers through the
// stack 17 times a super-block, but Q5_K's 15 times and it still gains
// from 2 pairs (docs/measurements.md, "Q6_K's decode over one pair").
template <GroupedFormat kFormat>
constexpr int kPassRows = kFormat == GroupedFormat::q4_k ? 4 : 6;
template <GroupedFormat kFormat>
constexpr int kNarrowRows = kFormat == GroupedFormat::q4_k   ? 4
                            : kFormat == GroupedFormat::q5_k ? 2
                                                             : 0;
constexpr int kNarrowPairs = 2;

// R rows of y for the whole tile: G pairs at a time, then single pairs,
// then a last group alone.
template <GroupedFormat kFormat, int R, int G = 1>
void rows(const std::uint8_t* tile, std::int64_t nb, std::int64_t n, const ActBlockK* x,
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

// ---- The expanded path (many rows) ----
//
// Per G pairs of groups and super-block, each pair's record is expanded once
// into an L1-resident Expanded (its 16 columns' quants 0..63 with the high
// bits already joined, in the nibbles' arrangement: 64 vectors, vector t =
// 8 c + 2 p + h holding inputs 4 t .. 4 t + 3 of every column; the scales
// widened to 32 bits, the mins as word pairs, d and dmin as f32), and then
// every row pass of the tile's rows runs over it with the plainest inner
// loop: one load and one vpdpbusd per row per 64 products. The unpacking is
// paid once per tile call (up to 64 rows), not once per pass, and the passes
// hold no decode state, so they take more rows. Each row's f32 accumulator
// lives in y between super-blocks (0 at b = 0), so the float ops and their
// order stay the reference's.
template <GroupedFormat kFormat>
struct alignas(64) Expanded {
    static constexpr int kSubBlocks = k_record(kFormat).sub_blocks;
    __m512i q[64];
    __m512i sc[kSubBlocks];
    __m512i mins[4];  // Q4_K, Q5_K
    __m512 d, dmin;
};

template <GroupedFormat kFormat>
inline void expand(const std::uint8_t* rec, std::int64_t partner, Expanded<kFormat>& e) {
    constexpr KRecordLayout kL = k_record(kFormat);
    for (int c = 0; c < 8; ++c)
        for (int p = 0; p < 4; ++p) {
            __m512i lo, hi;
            quants<kFormat>(rec, partner, c, p, lo, hi);
            _mm512_store_si512(&e.q[8 * c + 2 * p], lo);
            _mm512_store_si512(&e.q[8 * c + 2 * p + 1], hi);
        }
    for (int i = 0; i < kL.sub_blocks; ++i)
        e.sc[i] = pair_bytes<kFormat == GroupedFormat::q6_k>(rec + kL.scales + 8 * i, partner);
    e.d = pair_f16(rec + kL.d, partner);
    if constexpr (kFormat != GroupedFormat::q6_k) {
        for (int k = 0; k < 4; ++k) e.mins[k] = pair_mins(rec + kL.mins + 16 * k, partner);
        e.dmin = pair_f16(rec + kL.dmin, partner);
    }
}

// Columns [c0, c0 + 16) of one row of y as a mask (clipped to n).
inline __mmask16 pair_mask(std::int64_t c0, std::int64_t n) {
    const std::int64_t left = n - c0;
    return left >= 2 * kGroupColumns ? static_cast<__mmask16>(0xFFFF)
                                     : static_cast<__mmask16>((1u << left) - 1);
}

// R rows (a[r], y rows y + r * ldy) over G expanded pairs (columns c0 + 16 q)
// for one super-block; `first`: b = 0, so the accumulators start at 0.
// The sub-block loop stays rolled, everything in it unrolled: unrolled too,
// a 4 x 2 pass is ~1100 instructions (~7 KiB) per super-block, most
// likely bounded by the front end rather than vpdpbusd (no counters here:
// the instruction counts did not explain the gap, rolling it gained; see
// kExpandedRows). Not by instruction count alone, though: each row's
// vpbroadcastd folded into its G vpdpbusd as an embedded {1to16} memory
// operand (inline asm; 12-15 % fewer instructions) ran 0.90-0.94x in
// cache, G + R G loads per t instead of G + R (docs/measurements.md,
// seventeenth session).
template <GroupedFormat kFormat, int R, int G>
inline void expanded_rows(const Expanded<kFormat>* e, const ActBlockK* const (&a)[R], float* y,
                          std::int64_t ldy, const __mmask16 (&mask)[G], std::int64_t c0,
                          bool first) {
    constexpr int kSub = Expanded<kFormat>::kSubBlocks;
    constexpr int kT = 64 / kSub;  // vectors per sub-block
    __m512i isum[G][R];
#pragma GCC unroll 64
    for (int q = 0; q < G; ++q)
#pragma GCC unroll 64
        for (int r = 0; r < R; ++r) isum[q][r] = _mm512_setzero_si512();
#pragma GCC unroll 1
    for (int i = 0; i < kSub; ++i) {
        __m512i sums[G][R];
#pragma GCC unroll 64
        for (int r = 0; r < R; ++r) {
            const __m512i start = kFormat == GroupedFormat::q6_k
                                      ? _mm512_set1_epi32(-32 * a[r]->bsums[i])
                                      : _mm512_setzero_si512();
#pragma GCC unroll 64
            for (int q = 0; q < G; ++q) sums[q][r] = start;
        }
#pragma GCC unroll 64
        for (int t = kT * i; t < kT * (i + 1); ++t) {
            __m512i w[G];
#pragma GCC unroll 64
            for (int q = 0; q < G; ++q) w[q] = _mm512_load_si512(&e[q].q[t]);
#pragma GCC unroll 64
            for (int r = 0; r < R; ++r) {
                const __m512i av = broadcast4(*a[r], t);
#pragma GCC unroll 64
                for (int q = 0; q < G; ++q) sums[q][r] = _mm512_dpbusd_epi32(sums[q][r], w[q], av);
            }
        }
#pragma GCC unroll 64
        for (int q = 0; q < G; ++q)
#pragma GCC unroll 64
            for (int r = 0; r < R; ++r)
                isum[q][r] =
                    _mm512_add_epi32(isum[q][r], _mm512_mullo_epi32(sums[q][r], e[q].sc[i]));
    }
    __m512i neg[G][R];
    if constexpr (kFormat != GroupedFormat::q6_k) {
#pragma GCC unroll 64
        for (int r = 0; r < R; ++r) {
            const __m128i s0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a[r]->bsums));
            const __m128i s1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a[r]->bsums + 8));
            const __m128i neg_b = _mm_sub_epi16(_mm_setzero_si128(), _mm_hadd_epi16(s0, s1));
            alignas(16) std::int32_t b_pairs[4];
            _mm_store_si128(reinterpret_cast<__m128i*>(b_pairs), neg_b);
#pragma GCC unroll 64
            for (int q = 0; q < G; ++q) neg[q][r] = _mm512_setzero_si512();
#pragma GCC unroll 64
            for (int k = 0; k < 4; ++k) {
                const __m512i b = _mm512_set1_epi32(b_pairs[k]);
#pragma GCC unroll 64
                for (int q = 0; q < G; ++q)
                    neg[q][r] = _mm512_dpwssd_epi32(neg[q][r], e[q].mins[k], b);
            }
        }
    }
#pragma GCC unroll 64
    for (int r = 0; r < R; ++r) {
        const __m512 ad = _mm512_set1_ps(a[r]->d);
#pragma GCC unroll 64
        for (int q = 0; q < G; ++q) {
            float* out = y + r * ldy + c0 + 2 * q * kGroupColumns;
            __m512 acc = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(mask[q], out);
            acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[q][r]), _mm512_mul_ps(e[q].d, ad), acc);
            if constexpr (kFormat != GroupedFormat::q6_k)
                acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(neg[q][r]), _mm512_mul_ps(e[q].dmin, ad),
                                      acc);
            _mm512_mask_storeu_ps(out, mask[q], acc);
        }
    }
}

// Rows per expanded pass and pairs side by side, and the fewest rows a tile
// call expands for (fewer: the streaming passes above). The loops inside a
// sub-block must be unrolled (#pragma GCC unroll): GCC 12 otherwise keeps
// the t loop rolled, copies each sum register per iteration and spills, and
// the path ran 10-20 % slower than the streaming one. The sub-block loop
// itself is kept rolled (#pragma GCC unroll 1): the whole super-block
// unrolled made each pass ~7 KiB of code, and rolling it gained, llama7b,
// 2 threads, 128 / 512 tokens, two runs beside the old binary (GFLOP/s):
// Q4_K 833-861 / 844-873 -> 948-1022 / 988-1043, Q5_K 786 / 856 -> 928-956
// / 899-1007, Q6_K 649-671 / 539-666 -> 875-887 / 885-945
// (docs/measurements.md, sixteenth session; Q5_K's second old run, 513 /
// 531, was noisy). Before that, llama7b, 2 threads, this VM (2 cores of
// an AMD EPYC), GFLOP/s at 128 / 512 tokens (before: median of 3 runs;
// 4 x 2: mean of 2; the rest one run, each beside the others in the same
// run; noise about +-10 %):
//   streaming (before)  Q4_K 777 / 821   Q5_K 740 / 774   Q6_K 538 / 529
//   expanded 4 x 2      Q4_K 869 / 812   Q5_K 789 / 795   Q6_K 653 / 580
//   expanded 2 x 4      Q4_K 833 / 852   Q5_K 784 / 840   Q6_K 617 / 637
//   expanded 3 x 4      Q4_K 781 / 745   Q5_K 862 / 863   Q6_K 563 / 565
//   expanded 6 x 2      Q4_K 807 / 774   Q5_K 796 / 812   Q6_K 634 / 613
//   expanded 8 x 1      about 510 for all three; 12 x 1 600-660 (Q6_K
//   330); 8 x 2
//   and 4 x 4 (registers spilled) 510-730.
// A pass reads G weight vectors and R activation broadcasts per R G
// vpdpbusd; one pair alone (8 x 1, 12 x 1) runs far slower than its load
// count alone explains. The gain is mostly Q6_K's (its 2 bits joined once
// per tile call); q4_0's own kernel ran 971 / 1068 in the same session, so
// the K formats still sit at 60-90 % of it. kExpandFrom = 16 is a guess,
// not measured yet (the bench's 16-token rows would settle it).
template <GroupedFormat kFormat>
constexpr int kExpandedRows = 4;
template <GroupedFormat kFormat>
constexpr int kExpandedPairs = 2;
template <GroupedFormat kFormat>
constexpr std::int64_t kExpandFrom = 16;

// All rows_total rows of y over G pairs from `first` (partner as pairs()).
template <GroupedFormat kFormat, int G>
void expanded_pairs(const std::uint8_t* first, std::int64_t nb, std::int64_t stride,
                    std::int64_t partner, const ActBlockK* x, std::int64_t x_stride,
                    std::int64_t rows_total, float* y, std::int64_t ldy, std::int64_t c0,
                    std::int64_t n) {
    constexpr KRecordLayout kL = k_record(kFormat);
    Expanded<kFormat> e[G];
    __mmask16 mask[G];
    for (int q = 0; q < G; ++q) mask[q] = pair_mask(c0 + 2 * q * kGroupColumns, n);
    const std::uint8_t* record = first;
    for (std::int64_t b = 0; b < nb; ++b, record += kL.bytes) {
        const PrefetchSpan span = next_pass_span(b, kL.bytes, stride, 2 * G);
        for (int q = 0; q < G; ++q) {
            const std::uint8_t* rec = record + 2 * q * stride;
            prefetch_ahead<kFormat>(rec, span);
            prefetch_ahead<kFormat>(rec + partner, span);
            expand<kFormat>(rec, partner, e[q]);
        }
        row_passes<kExpandedRows<kFormat>>(rows_total, [&](auto height, std::int64_t m) {
            constexpr int R = decltype(height)::value;
            const ActBlockK* a[R];
            for (int r = 0; r < R; ++r) a[r] = x + (m + r) * x_stride + b;
            expanded_rows<kFormat, R, G>(e, a, y + m * ldy, ldy, mask, c0, b == 0);
        });
    }
}

template <GroupedFormat kFormat>
void expanded(const std::uint8_t* tile, std::int64_t nb, std::int64_t n, const ActBlockK* x,
              std::int64_t x_stride, std::int64_t rows_total, float* y, std::int64_t ldy) {
    constexpr int G = kExpandedPairs<kFormat>;
    const std::int64_t groups = column_groups(n);
    const std::int64_t stride = nb * static_cast<std::int64_t>(record_bytes(kFormat));
    std::int64_t g = 0;
    for (; g + 2 * G <= groups; g += 2 * G)
        expanded_pairs<kFormat, G>(tile + g * stride, nb, stride, stride, x, x_stride, rows_total,
                                   y, ldy, g * kGroupColumns, n);
    for (; g + 2 <= groups; g += 2)
        expanded_pairs<kFormat, 1>(tile + g * stride, nb, stride, stride, x, x_stride, rows_total,
                                   y, ldy, g * kGroupColumns, n);
    if (g < groups)
        expanded_pairs<kFormat, 1>(tile + g * stride, nb, stride, 0, x, x_stride, rows_total, y,
                                   ldy, g * kGroupColumns, n);
}

template <GroupedFormat kFormat>
void gemm(const std::uint8_t* tile, std::int64_t k, std::int64_t n, const ActBlockK* x,
          std::int64_t x_stride, std::int64_t rows_total, float* y, std::int64_t ldy) noexcept {
    const std::int64_t nb = format_blocks(kFormat, k);
    if (rows_total >= kExpandFrom<kFormat> && nb > 0) {
        expanded<kFormat>(tile, nb, n, x, x_stride, rows_total, y, ldy);
        return;
    }
    row_passes<kPassRows<kFormat>>(rows_total, [&](auto height, std::int64_t m) {
        constexpr int R = decltype(height)::value;
        rows<kFormat, R, R <= kNarrowRows<kFormat> ? kNarrowPairs : 1>(
            tile, nb, n, x + m * x_stride, x_stride, y + m * ldy, ldy);
    });
}

}  // namespace

KQuantKernels kquant_kernels_avx512_vnni() noexcept {
    return {&gemm<GroupedFormat::q4_k>, &gemm<GroupedFormat::q5_k>, &gemm<GroupedFormat::q6_k>};
}

}  // namespace swiglu::detail
