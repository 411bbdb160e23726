// GGUF's Q8_0 and Q4_0 blocks (kernels/ggml_blocks.hpp) and the f16 scale
// conversion under them (common/half.hpp):
//  - f32 -> f16 against the CPU's own F16C conversion (where it has one) and
//    the exact f16 -> f32 over all 65536 values;
//  - blocks worked out by hand from ggml's reference rounding (roundf's ties
//    away from zero, Q4_0's signed max and its clipped top);
//  - random rows of many lengths, odd ones and partial blocks included,
//    against the format's error bound computed in double.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "common/half.hpp"
#include "float_bits.hpp"
#include "kernels/ggml_blocks.hpp"
#include "reference.hpp"

using namespace swiglu::detail;

namespace {

using swiglu::test::from_bits;

#if defined(__x86_64__)
bool has_f16c() {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}
// The hardware's f32 -> f16, round to nearest even (imm8 = 0): the oracle.
__attribute__((target("f16c"))) std::uint16_t f16c(float v) {
    return static_cast<std::uint16_t>(_cvtss_sh(v, 0));
}
#endif

}  // namespace

TEST_SUITE("ggml_blocks") {

TEST_CASE("f16: every f16 survives f16 -> f32 -> f16") {
    for (std::uint32_t h = 0; h < 0x10000; ++h) {
        const auto bits = static_cast<std::uint16_t>(h);
        const bool nan = (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0;
        // A signalling NaN comes back quiet, as from the hardware.
        const std::uint16_t expected = nan ? static_cast<std::uint16_t>(bits | 0x200u) : bits;
        if (f32_to_f16(f16_to_f32(bits)) != expected) {
            CAPTURE(h);
            CHECK(f32_to_f16(f16_to_f32(bits)) == expected);
        }
    }
}

TEST_CASE("f16: f32 -> f16 rounds to nearest even at the edges") {
    CHECK(f32_to_f16(65504.0f) == 0x7BFF);
    CHECK(f32_to_f16(65519.99f) == 0x7BFF);  // below the midpoint to inf
    CHECK(f32_to_f16(65520.0f) == 0x7C00);   // the midpoint: to even, which is inf
    CHECK(f32_to_f16(-1e10f) == 0xFC00);
    CHECK(f32_to_f16(std::ldexp(1.0f, -24)) == 0x0001);         // smallest subnormal
    CHECK(f32_to_f16(std::ldexp(1.0f, -25)) == 0x0000);         // its half: tie to even 0
    CHECK(f32_to_f16(std::ldexp(1.5f, -25)) == 0x0001);         // above the tie
    CHECK(f32_to_f16(std::ldexp(3.0f, -25)) == 0x0002);         // 1.5 units: tie to even 2
    CHECK(f32_to_f16(std::ldexp(1.0f, -14)) == 0x0400);         // smallest normal
    CHECK(f32_to_f16(std::ldexp(1023.5f, -24)) == 0x0400);      // rounds up into the normals
    CHECK(f32_to_f16(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);  // tie: to even (1.0)
    CHECK(f32_to_f16(1.0f + std::ldexp(3.0f, -11)) == 0x3C02);  // tie: to even (1 + 2 ulp)
    CHECK(f32_to_f16(-0.0f) == 0x8000);
    CHECK(f32_to_f16(INFINITY) == 0x7C00);
    CHECK((f32_to_f16(NAN) & 0x7E00) == 0x7E00);
}

#if defined(__x86_64__)
TEST_CASE("f16: f32 -> f16 matches the CPU's F16C on a sweep of f32 bit patterns") {
    if (!has_f16c()) return;
    std::size_t checked = 0, wrong = 0;
    // Every 997th pattern (4.3M values: all exponents, both signs, NaNs)
    // plus a dense run around f16's subnormal and overflow edges.
    auto check = [&](std::uint32_t u) {
        const float v = from_bits(u);
        ++checked;
        if (f32_to_f16(v) != f16c(v) && ++wrong <= 5) {
            CAPTURE(u);
            CHECK(f32_to_f16(v) == f16c(v));
        }
    };
    for (std::uint64_t u = 0; u <= 0xFFFFFFFFu; u += 997) check(static_cast<std::uint32_t>(u));
    for (std::uint32_t u = 0x33000000u - 4096; u < 0x33000000u + 4096; ++u) check(u);
    for (std::uint32_t u = 0x38800000u - 4096; u < 0x38800000u + 4096; ++u) check(u);
    for (std::uint32_t u = 0x477FF000u - 4096; u < 0x477FF000u + 4096; ++u) check(u);
    CHECK(wrong == 0);
    MESSAGE("f32 -> f16: ", checked, " values against F16C, ", wrong, " differ");
}
#endif

TEST_CASE("Q8_0: a block worked out from ggml's reference rounding") {
    // amax = 127: d = 1 exactly, id = 1, so q = roundf(x): ties away from zero.
    std::vector<float> x(32, 0.0f);
    const float given[] = {127, 2.5f, -2.5f, 0.5f, -0.5f, 1.49f, -126.6f, 3.5f};
    std::memcpy(x.data(), given, sizeof(given));
    BlockQ8_0 b{};
    quantize_row_q8_0(x.data(), x.size(), &b);
    CHECK(b.d == 0x3C00);  // 1.0
    const int expected[] = {127, 3, -3, 1, -1, 1, -127, 4};
    for (int j = 0; j < 8; ++j) {
        CAPTURE(j);
        CHECK(int(b.qs[j]) == expected[j]);
    }
    for (int j = 8; j < 32; ++j) CHECK(b.qs[j] == 0);

    // x_j = j - 16: d = 16/127 = 0.12598..., stored as f16 0x3008 (0.1259765625).
    for (int j = 0; j < 32; ++j) x[j] = float(j - 16);
    quantize_row_q8_0(x.data(), x.size(), &b);
    CHECK(b.d == 0x3008);
    CHECK(int(b.qs[0]) == -127);
    CHECK(int(b.qs[16]) == 0);
    CHECK(int(b.qs[31]) == 119);  // 15 * 127/16 = 119.06
    float y[32];
    dequantize_row_q8_0(&b, 32, y);
    CHECK(y[0] == -127 * 0.1259765625f);
}

TEST_CASE("Q4_0: a block worked out from ggml's reference rounding") {
    // x_j = j - 16: the largest |x| is -16 (j = 0), so d = -16 / -8 = 2 and
    // q_j = min(15, trunc((j - 16) / 2 + 8.5)) = min(15, trunc(j / 2 + 0.5)).
    std::vector<float> x(32);
    for (int j = 0; j < 32; ++j) x[j] = float(j - 16);
    BlockQ4_0 b{};
    quantize_row_q4_0(x.data(), x.size(), &b);
    CHECK(b.d == 0x4000);  // 2.0
    auto q = [](int j) { return j == 31 ? 15 : int(j / 2.0 + 0.5); };
    for (int j = 0; j < 16; ++j) {
        CAPTURE(j);
        CHECK(int(b.qs[j]) == (q(j) | (q(j + 16) << 4)));  // low nibble j, high j + 16
    }
    CHECK(int(b.qs[0]) == 0x80);
    CHECK(int(b.qs[15]) == 0xF8);
    float y[32];
    dequantize_row_q4_0(&b, 32, y);
    CHECK(y[0] == -16.0f);  // the signed max maps to q = 0 exactly
    CHECK(y[31] == 14.0f);  // the other end clips at q = 15: (15 - 8) * 2

    // Ties on |x|: the first one decides the sign of d.
    std::vector<float> t(32, 0.0f);
    t[0] = -3.0f;
    t[1] = 3.0f;
    quantize_row_q4_0(t.data(), t.size(), &b);
    CHECK(f16_to_f32(b.d) == 0.375f);
    t[0] = 3.0f;
    t[1] = -3.0f;
    quantize_row_q4_0(t.data(), t.size(), &b);
    CHECK(f16_to_f32(b.d) == -0.375f);
}

TEST_CASE("Q8_0 and Q4_0: random rows of any length within the format's bound") {
    for (std::size_t n : {1u, 7u, 13u, 31u, 32u, 33u, 64u, 341u, 1024u, 4101u}) {
        for (float scale : {1.0f, 1e-3f, 3e4f}) {
            CAPTURE(n);
            CAPTURE(scale);
            const std::vector<float> x = swiglu::test::uniform(n, scale, unsigned(n * 7 + 1));
            std::vector<BlockQ8_0> b8(ggml_blocks(n));
            std::vector<BlockQ4_0> b4(ggml_blocks(n));
            quantize_row_q8_0(x.data(), n, b8.data());
            quantize_row_q4_0(x.data(), n, b4.data());
            std::vector<float> y8(n), y4(n);
            dequantize_row_q8_0(b8.data(), n, y8.data());
            dequantize_row_q4_0(b4.data(), n, y4.data());
            double worst8 = 0, worst4 = 0;
            for (std::size_t i = 0; i < n; ++i) {
                const std::size_t blk = i / kGgmlBlock;
                // Dequantisation is exact: q * d in double equals the float.
                CHECK(double(y8[i]) == double(b8[blk].qs[i % 32]) * double(f16_to_f32(b8[blk].d)));
                // The block's amax, in double.
                double amax = 0;
                for (std::size_t k = blk * 32; k < std::min(n, blk * 32 + 32); ++k)
                    amax = std::max(amax, std::fabs(double(x[k])));
                // Q8_0: half a step (amax / 127 / 2), plus what the f16 scale
                // moves q * d: half an f16 ulp of d, relative 2^-11 for a
                // normal f16 but absolute 2^-25 below 2^-14 (tiny blocks lose
                // precision there, in ggml too), plus float slack.
                auto f16_error = [](double d) {
                    return std::max(d * std::ldexp(1.0, -11), std::ldexp(1.0, -25));
                };
                const double d8 = amax / 127;
                const double bound8 = d8 / 2 + 127 * f16_error(d8) + amax * 1e-6;
                // Q4_0: half a step of d = amax / 8, but the end opposite the
                // signed max clips at q = 15, a whole step; plus the f16 term.
                const double d4 = amax / 8;
                const double bound4 = d4 + 8 * f16_error(d4) + amax * 1e-6;
                const double e8 = std::fabs(double(y8[i]) - x[i]);
                const double e4 = std::fabs(double(y4[i]) - x[i]);
                if (e8 > bound8 || e4 > bound4) {
                    CAPTURE(i);
                    CHECK(e8 <= bound8);
                    CHECK(e4 <= bound4);
                }
                worst8 = std::max(worst8, amax > 0 ? e8 / amax : 0);
                worst4 = std::max(worst4, amax > 0 ? e4 / amax : 0);
            }
            if (scale >= 1.0f) {         // scales are normal f16 here
                CHECK(worst8 < 0.0045);  // ~1/254 of the block's amax, plus f16
                CHECK(worst4 < 0.13);    // 1/8 at the clipped end, plus f16
            }
        }
    }
}

TEST_CASE("a partial last block is padded with zeros") {
    const std::vector<float> x = swiglu::test::uniform(37, 1.0f, 5);  // one block and 5 values
    BlockQ8_0 b8[2];
    BlockQ4_0 b4[2];
    std::memset(b8, 0x55, sizeof(b8));
    std::memset(b4, 0x55, sizeof(b4));
    quantize_row_q8_0(x.data(), 37, b8);
    quantize_row_q4_0(x.data(), 37, b4);
    for (int j = 5; j < 32; ++j) {
        CHECK(b8[1].qs[j] == 0);  // value 0
        const int q = j < 16 ? (b4[1].qs[j] & 0x0F) : (b4[1].qs[j - 16] >> 4);
        CHECK(q == 8);  // value (8 - 8) * d = 0
    }
}

TEST_CASE("a block holding NaN or inf dequantises to NaN; the other blocks stay finite") {
    for (float bad : {NAN, INFINITY, -INFINITY}) {
        std::vector<float> x = swiglu::test::uniform(96, 1.0f, 3);
        x[40] = bad;  // block 1
        BlockQ8_0 b8[3];
        BlockQ4_0 b4[3];
        quantize_row_q8_0(x.data(), 96, b8);
        quantize_row_q4_0(x.data(), 96, b4);
        std::vector<float> y8(96), y4(96);
        dequantize_row_q8_0(b8, 96, y8.data());
        dequantize_row_q4_0(b4, 96, y4.data());
        for (int i = 0; i < 96; ++i) {
            const bool in_bad_block = i / 32 == 1;
            CHECK(std::isnan(y8[i]) == in_bad_block);
            CHECK(std::isnan(y4[i]) == in_bad_block);
        }
    }
}

TEST_CASE("an all-zero block quantises to d = +-0 and dequantises to zeros") {
    const std::vector<float> x(32, 0.0f);
    BlockQ8_0 b8;
    BlockQ4_0 b4;
    quantize_row_q8_0(x.data(), 32, &b8);
    quantize_row_q4_0(x.data(), 32, &b4);
    CHECK(b8.d == 0x0000);  // 0 / 127
    CHECK(b4.d == 0x8000);  // 0 / -8 = -0, as ggml stores it
    float y[32];
    dequantize_row_q4_0(&b4, 32, y);
    for (float v : y) CHECK(v == 0.0f);
}

}  // TEST_SUITE
