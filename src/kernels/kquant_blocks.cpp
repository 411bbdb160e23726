// The scalar reference of GGUF's Q4_K, Q5_K and Q6_K (kquant_blocks.hpp).
// Compiled with -ffp-contract=off: every product and sum rounds on its own,
// as in ggml's scalar code; the sums run in ggml's order.
#include "kernels/kquant_blocks.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/half.hpp"
#include "kernels/padded_block.hpp"

namespace swiglu::detail {

namespace {

constexpr std::uint16_t kF16Nan = 0x7E00;
constexpr int kSub = 32;                          // Q4_K / Q5_K sub-block
constexpr int kSubs = int(kSuperBlock) / kSub;    // 8
constexpr int kSub6 = 16;                         // Q6_K sub-block
constexpr int kSubs6 = int(kSuperBlock) / kSub6;  // 16
constexpr float kGroupMaxEps = 1e-15f;            // ggml's GROUP_MAX_EPS

// v rounded to the nearest integer, ties to even, as ggml's nearest_int:
// adding 1.5 * 2^23 leaves the integer in the low mantissa bits. Exact for
// |v| < 2^22; past that the same bits as ggml's, and no float-to-int
// conversion (so no undefined behaviour for any v, NaN included).
int nearest_int(float v) {
    const float shifted = v + 12582912.0f;
    std::int32_t bits;
    std::memcpy(&bits, &shifted, sizeof(bits));
    return (bits & 0x007FFFFF) - 0x00400000;
}

// The s8 of v's low byte (C++17 leaves a narrowing cast's result to the
// implementation; ggml's compilers wrap, so do we).
std::int8_t wrap_s8(int v) {
    const auto low = static_cast<std::uint8_t>(v);
    return static_cast<std::int8_t>(low < 128 ? int(low) : int(low) - 256);
}

// ggml's make_qkx2_quants for 32 values: the scale and min (returned as
// the_min = -min >= 0) with which q in 0..nmax (in L) best fit x in the
// weighted squared error, trying nstep + 1 scales from (nmax + rmin) / range
// in steps of 0.1 / range.
float fit_scale_min(const float* x, const float* w, int nmax, float rmin, int nstep,
                    std::uint8_t* L, float& the_min) {
    float min = x[0], max = x[0];
    float sum_w = w[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < kSub; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        std::fill(L, L + kSub, std::uint8_t(0));
        the_min = -min;
        return 0.0f;
    }
    float iscale = float(nmax) / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < kSub; ++i) {
        L[i] = std::uint8_t(std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax));
        const float diff = scale * float(L[i]) + min - x[i];
        best_error += w[i] * (diff * diff);
    }
    std::uint8_t aux[kSub];
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + 0.1f * float(is) + float(nmax)) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < kSub; ++i) {
            const int l = std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
            aux[i] = std::uint8_t(l);
            sum_l += w[i] * float(l);
            sum_l2 += w[i] * float(l) * float(l);
            sum_xl += w[i] * float(l) * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (!(D > 0)) continue;
        float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
        float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
        if (this_min > 0) {
            this_min = 0;
            this_scale = sum_xl / sum_l2;
        }
        float error = 0;
        for (int i = 0; i < kSub; ++i) {
            const float diff = this_scale * float(aux[i]) + this_min - x[i];
            error += w[i] * (diff * diff);
        }
        if (error < best_error) {
            std::copy(aux, aux + kSub, L);
            best_error = error;
            scale = this_scale;
            min = this_min;
        }
    }
    the_min = -min;
    return scale;
}

// ggml's make_qx_quants for Q6_K (16 values, nmax 32, weights x^2): the
// scale (of either sign) with which q - 32 (q in 0..63, in L) best fit x,
// trying 19 scales about -32 / max.
float fit_scale_signed(const float* x, std::int8_t* L) {
    constexpr int nmax = 32;
    float max = 0, amax = 0;
    for (int i = 0; i < kSub6; ++i)
        if (std::fabs(x[i]) > amax) {
            amax = std::fabs(x[i]);
            max = x[i];
        }
    if (amax < kGroupMaxEps) {
        std::fill(L, L + kSub6, std::int8_t(0));
        return 0.0f;
    }
    // Sums of w x l and w l^2 for l = round(iscale x); L gets l + nmax.
    auto pass = [&](float iscale, float& sumlx, float& suml2, std::int8_t* out) {
        sumlx = suml2 = 0;
        for (int i = 0; i < kSub6; ++i) {
            const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
            if (out) out[i] = std::int8_t(l + nmax);
            const float w = x[i] * x[i];
            sumlx += w * x[i] * float(l);
            suml2 += w * float(l) * float(l);
        }
    };
    float sumlx, suml2;
    pass(float(-nmax) / max, sumlx, suml2, L);
    float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        const float iscale = -(float(nmax) + 0.1f * float(is)) / max;
        pass(iscale, sumlx, suml2, nullptr);
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            pass(iscale, sumlx, suml2, L);
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

// Sub-block j's 6-bit scale ls and min lm into the 12-byte field, as
// unpack_scale_min reads them (sub-blocks 0-3 before 4-7).
void pack_scale_min(std::uint8_t* scales, int j, std::uint8_t ls, std::uint8_t lm) {
    if (j < 4) {
        scales[j] = ls;
        scales[j + 4] = lm;
        return;
    }
    scales[j + 4] = std::uint8_t((ls & 0xF) | ((lm & 0xF) << 4));
    scales[j - 4] = std::uint8_t(scales[j - 4] | ((ls >> 4) << 6));
    scales[j] = std::uint8_t(scales[j] | ((lm >> 4) << 6));
}

// ggml's quantize_row_q{4,5}_K_ref up to the packing of q: the sub-blocks'
// scales and mins fitted, quantised to 6 bits against d and dmin, and each
// value's q (0..nmax) in L against the stored scales.
void quantize_scale_min(const float (&v)[kSuperBlock], int nmax, float rmin, int nstep,
                        ScaleMinHead& head, std::uint8_t (&L)[kSuperBlock]) {
    float scales[kSubs], mins[kSubs];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < kSubs; ++j) {
        const float* x = v + kSub * j;
        float sum_x2 = 0;
        for (int l = 0; l < kSub; ++l) sum_x2 += x[l] * x[l];
        const float av_x = std::sqrt(sum_x2 / float(kSub));
        float weights[kSub];
        for (int l = 0; l < kSub; ++l) weights[l] = av_x + std::fabs(x[l]);
        scales[j] = fit_scale_min(x, weights, nmax, rmin, nstep, L + kSub * j, mins[j]);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    std::memset(head.scales, 0, sizeof(head.scales));
    for (int j = 0; j < kSubs; ++j) {
        // As ggml: the int narrowed to a byte (wrapping), then capped.
        const auto ls =
            std::min<std::uint8_t>(63, std::uint8_t(nearest_int(inv_scale * scales[j])));
        const auto lm = std::min<std::uint8_t>(63, std::uint8_t(nearest_int(inv_min * mins[j])));
        pack_scale_min(head.scales, j, ls, lm);
    }
    head.d = f32_to_f16(max_scale / 63.f);
    head.dmin = f32_to_f16(max_min / 63.f);
    for (int j = 0; j < kSubs; ++j) {
        std::uint8_t sc, m;
        unpack_scale_min(head.scales, j, sc, m);
        const float d = f16_to_f32(head.d) * float(sc);
        if (d == 0) continue;  // L keeps the fit's q
        const float dm = f16_to_f32(head.dmin) * float(m);
        for (int l = 0; l < kSub; ++l) {
            const int q = nearest_int((v[kSub * j + l] + dm) / d);
            L[kSub * j + l] = std::uint8_t(std::clamp(q, 0, nmax));
        }
    }
}

// Where value i (0..255) of a Q4_K / Q5_K super-block keeps its low 4 bits:
// byte qs[32 (j / 2) + l] of sub-block j = i / 32, the high nibble for odd j.
std::size_t nibble_byte(int i) { return std::size_t(kSub * (i / 64) + i % kSub); }
int nibble_shift(int i) { return 4 * ((i / kSub) & 1); }

void quantize(const float (&v)[kSuperBlock], BlockQ4K& b) {
    std::uint8_t L[kSuperBlock];
    quantize_scale_min(v, 15, -1.0f, 20, b.head, L);
    for (int i = 0; i < int(kSuperBlock); ++i)
        b.qs[nibble_byte(i)] = std::uint8_t(b.qs[nibble_byte(i)] | (L[i] << nibble_shift(i)));
}

void quantize(const float (&v)[kSuperBlock], BlockQ5K& b) {
    std::uint8_t L[kSuperBlock];
    quantize_scale_min(v, 31, -0.5f, 15, b.head, L);
    for (int i = 0; i < int(kSuperBlock); ++i) {
        b.qs[nibble_byte(i)] =
            std::uint8_t(b.qs[nibble_byte(i)] | ((L[i] & 0xF) << nibble_shift(i)));
        b.qh[i % kSub] = std::uint8_t(b.qh[i % kSub] | ((L[i] >> 4) << (i / kSub)));
    }
}

// Where value i of a Q6_K super-block keeps its bits: in each half of 128,
// value 32 g + l (g = 0..3) has its low nibble in ql[32 (g & 1) + l] (high
// nibble for g >= 2) and its top 2 bits at bit 2 g of qh[l].
struct Q6Place {
    std::size_t ql;
    int ql_shift;
    std::size_t qh;
    int qh_shift;
};
Q6Place q6_place(int i) {
    const int half = i / 128, g = i % 128 / kSub, l = i % kSub;
    return {std::size_t(64 * half + kSub * (g & 1) + l), 4 * (g >> 1), std::size_t(kSub * half + l),
            2 * g};
}

void quantize(const float (&v)[kSuperBlock], BlockQ6K& b) {
    std::int8_t L[kSuperBlock];
    float scales[kSubs6];
    float max_scale = 0, max_abs_scale = 0;
    for (int j = 0; j < kSubs6; ++j) {
        scales[j] = fit_scale_signed(v + kSub6 * j, L + kSub6 * j);
        if (std::fabs(scales[j]) > max_abs_scale) {
            max_abs_scale = std::fabs(scales[j]);
            max_scale = scales[j];
        }
    }
    if (max_abs_scale < kGroupMaxEps) return;  // all zeros, d = +0
    const float iscale = -128.f / max_scale;
    b.d = f32_to_f16(1 / iscale);
    for (int j = 0; j < kSubs6; ++j)
        b.scales[j] = wrap_s8(std::min(127, nearest_int(iscale * scales[j])));
    for (int j = 0; j < kSubs6; ++j) {
        const float d = f16_to_f32(b.d) * float(b.scales[j]);
        if (d == 0) continue;  // L keeps the fit's q
        for (int l = 0; l < kSub6; ++l) {
            const int q = nearest_int(v[kSub6 * j + l] / d);
            L[kSub6 * j + l] = std::int8_t(std::clamp(q, -32, 31) + 32);
        }
    }
    for (int i = 0; i < int(kSuperBlock); ++i) {
        const Q6Place p = q6_place(i);
        b.ql[p.ql] = std::uint8_t(b.ql[p.ql] | ((L[i] & 0xF) << p.ql_shift));
        b.qh[p.qh] = std::uint8_t(b.qh[p.qh] | ((L[i] >> 4) << p.qh_shift));
    }
}

std::uint16_t& scale_bits(BlockQ4K& b) { return b.head.d; }
std::uint16_t& scale_bits(BlockQ5K& b) { return b.head.d; }
std::uint16_t& scale_bits(BlockQ6K& b) { return b.d; }

}  // namespace

// Each super-block of the row from zeroed bytes; one holding NaN or +-inf
// gets a NaN d and nothing else, so it decodes to NaN.
template <class Block>
void quantize_row_k(const float* x, std::size_t n, Block* out) noexcept {
    for (std::size_t b = 0; b < super_blocks(n); ++b) {
        float v[kSuperBlock];
        std::memset(&out[b], 0, sizeof(Block));
        if (load_padded_block(x, n, b, v))
            quantize(v, out[b]);
        else
            scale_bits(out[b]) = kF16Nan;
    }
}

namespace {

// Q4_K's and Q5_K's values: (d * sc) * q - dmin * m per sub-block.
template <class Q>
void decode_scale_min(const ScaleMinHead& head, Q q, float* out) {
    const float d = f16_to_f32(head.d), min = f16_to_f32(head.dmin);
    for (int j = 0; j < kSubs; ++j) {
        std::uint8_t sc, m;
        unpack_scale_min(head.scales, j, sc, m);
        const float d1 = d * float(sc), m1 = min * float(m);
        for (int i = kSub * j; i < kSub * (j + 1); ++i) out[i] = d1 * float(q(i)) - m1;
    }
}

void decode(const BlockQ4K& b, float* out) {
    decode_scale_min(
        b.head, [&](int i) { return (b.qs[nibble_byte(i)] >> nibble_shift(i)) & 0xF; }, out);
}

void decode(const BlockQ5K& b, float* out) {
    decode_scale_min(
        b.head,
        [&](int i) {
            return ((b.qs[nibble_byte(i)] >> nibble_shift(i)) & 0xF) +
                   ((b.qh[i % kSub] >> (i / kSub)) & 1) * 16;
        },
        out);
}

// Q6_K's values: (d * sc) * (q - 32), sc the s8 of value i's 16.
void decode(const BlockQ6K& b, float* out) {
    const float d = f16_to_f32(b.d);
    for (int i = 0; i < int(kSuperBlock); ++i) {
        const Q6Place p = q6_place(i);
        const int q = ((b.ql[p.ql] >> p.ql_shift) & 0xF) | (((b.qh[p.qh] >> p.qh_shift) & 3) << 4);
        out[i] = d * float(b.scales[i / kSub6]) * float(q - 32);
    }
}

}  // namespace

// The first n values: whole super-blocks straight out, a partial last one
// through a scratch block.
template <class Block>
void dequantize_row_k(const Block* blocks, std::size_t n, float* out) noexcept {
    for (std::size_t b = 0; b < super_blocks(n); ++b) {
        const std::size_t begin = b * kSuperBlock, count = std::min(kSuperBlock, n - begin);
        if (count == kSuperBlock) {
            decode(blocks[b], out + begin);
            continue;
        }
        float v[kSuperBlock];
        decode(blocks[b], v);
        std::memcpy(out + begin, v, count * sizeof(float));
    }
}

namespace {

void scale_min_ints(const ScaleMinHead& head, KSuperBlockInts& out) {
    out.d = head.d;
    out.dmin = head.dmin;
    for (int j = 0; j < kSubs; ++j) {
        std::uint8_t sc, m;
        unpack_scale_min(head.scales, j, sc, m);
        out.scale[j] = sc;
        out.min[j] = m;
    }
    std::fill(out.scale + kSubs, out.scale + 16, std::int16_t(0));
}

}  // namespace

void super_block_ints(const BlockQ4K& b, KSuperBlockInts& out) noexcept {
    scale_min_ints(b.head, out);
    for (int i = 0; i < int(kSuperBlock); ++i)
        out.q[i] = std::uint8_t((b.qs[nibble_byte(i)] >> nibble_shift(i)) & 0xF);
}

void super_block_ints(const BlockQ5K& b, KSuperBlockInts& out) noexcept {
    scale_min_ints(b.head, out);
    for (int i = 0; i < int(kSuperBlock); ++i)
        out.q[i] = std::uint8_t(((b.qs[nibble_byte(i)] >> nibble_shift(i)) & 0xF) +
                                ((b.qh[i % kSub] >> (i / kSub)) & 1) * 16);
}

void super_block_ints(const BlockQ6K& b, KSuperBlockInts& out) noexcept {
    out.d = b.d;
    out.dmin = 0;
    for (int j = 0; j < kSubs6; ++j) out.scale[j] = b.scales[j];
    std::fill(out.min, out.min + 8, std::uint8_t(0));
    for (int i = 0; i < int(kSuperBlock); ++i) {
        const Q6Place p = q6_place(i);
        out.q[i] = std::uint8_t(((b.ql[p.ql] >> p.ql_shift) & 0xF) |
                                (((b.qh[p.qh] >> p.qh_shift) & 3) << 4));
    }
}

void unpack_scale_min(const std::uint8_t* scales, int j, std::uint8_t& sc,
                      std::uint8_t& m) noexcept {
    if (j < 4) {
        sc = scales[j] & 63;
        m = scales[j + 4] & 63;
        return;
    }
    sc = std::uint8_t((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4));
    m = std::uint8_t((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
}

template void quantize_row_k(const float*, std::size_t, BlockQ4K*) noexcept;
template void quantize_row_k(const float*, std::size_t, BlockQ5K*) noexcept;
template void quantize_row_k(const float*, std::size_t, BlockQ6K*) noexcept;
template void dequantize_row_k(const BlockQ4K*, std::size_t, float*) noexcept;
template void dequantize_row_k(const BlockQ5K*, std::size_t, float*) noexcept;
template void dequantize_row_k(const BlockQ6K*, std::size_t, float*) noexcept;

}  // namespace swiglu::detail
