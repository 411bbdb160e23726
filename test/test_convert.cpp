// Tests of the conversions around the matmuls (convert.hpp): the scalar
// reference against known values, and every SIMD ISA this CPU runs against
// the scalar reference, bit for bit (which ISA runs must never change a
// result), over every short length, long rows, special values and aliasing.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "float_bits.hpp"
#include "kernels/act_block.hpp"
#include "kernels/convert.hpp"
#include "kernels/kernel_table.hpp"

namespace {

using swiglu::test::bits;
using swiglu::test::from_bits;

using swiglu::detail::ActBlock;
using swiglu::detail::Isa;
using swiglu::detail::KernelTable;

struct Table {
    std::string name;
    KernelTable k;
};

// Every SIMD table this CPU runs (each is compared with the scalar one).
std::vector<Table> simd_isas() {
    std::vector<Table> out;
    for (const auto& entry : swiglu::detail::kernel_dispatch().runnable())
        if (entry.isa != Isa::scalar)
            out.push_back({swiglu::detail::isa_name(entry.isa), entry.table});
    return out;
}

// Values that stress each conversion: signed zeros, subnormals, the largest
// finite floats (round to inf in bf16), infinities, NaNs with payloads (one
// whose payload sits only in the bits bf16 drops), bf16 rounding ties on
// both sides of even, and numbers of every magnitude.
std::vector<float> test_values(std::size_t n, unsigned seed) {
    const float specials[] = {0.0f,
                              -0.0f,
                              FLT_MIN,
                              -FLT_MIN / 8,
                              FLT_MAX,
                              -FLT_MAX,
                              std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(),
                              std::numeric_limits<float>::quiet_NaN(),
                              from_bits(0x7F800001u),  // signalling, payload only in low bits
                              from_bits(0xFFC12345u),
                              from_bits(0x3F808000u),  // tie, kept LSB even: rounds down
                              from_bits(0x3F818000u),  // tie, kept LSB odd: rounds up
                              from_bits(0xBF808001u),
                              1.0f,
                              -1.0f,
                              0.5f};
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> exponent(-40, 40);
    std::uniform_real_distribution<float> mantissa(-2.0f, 2.0f);
    std::uniform_int_distribution<std::size_t> pick(0, std::size(specials) - 1);
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = rng() % 8 == 0 ? specials[pick(rng)] : std::ldexp(mantissa(rng), exponent(rng));
    return v;
}

// Finite values of one row, as quantize_row sees act: no specials.
std::vector<float> finite_row(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> v(n);
    for (float& x : v) x = normal(rng);
    return v;
}

const std::size_t kLengths[] = {0, 1, 2, 3, 7, 8, 13, 15, 16, 17, 31, 33, 63, 64, 65, 341, 1000};

}  // namespace

TEST_SUITE("convert") {

TEST_CASE("scalar reference: known values") {
    const KernelTable ref = swiglu::detail::kernel_table(Isa::scalar);
    const float in[] = {1.0f,
                        from_bits(0x3F808000u),
                        from_bits(0x3F818000u),
                        FLT_MAX,
                        -std::numeric_limits<float>::infinity(),
                        from_bits(0x7F800001u)};
    std::uint16_t h[6];
    ref.to_bf16(in, h, 6);
    CHECK(h[0] == 0x3F80);
    CHECK(h[1] == 0x3F80);  // tie to even
    CHECK(h[2] == 0x3F82);
    CHECK(h[3] == 0x7F80);  // past bf16's largest finite: inf
    CHECK(h[4] == 0xFF80);
    CHECK((h[5] & 0x7F80) == 0x7F80);  // NaN stays NaN, not inf
    CHECK((h[5] & 0x7F) != 0);

    const float row[] = {-1.0f, 0.5f, 1.0f, 0.25f};
    std::int8_t q[4];
    const float scale = ref.quantize_row(row, q, 4);
    CHECK(scale == 1.0f / 127.0f);
    CHECK(q[0] == -127);
    CHECK(q[1] == 64);  // 63.5 rounds to even
    CHECK(q[2] == 127);
    CHECK(q[3] == 32);  // 31.75

    const float zeros[] = {0.0f, -0.0f};
    std::int8_t qz[2] = {1, 1};
    CHECK(ref.quantize_row(zeros, qz, 2) == 0.0f);
    CHECK(qz[0] == 0);
    CHECK(qz[1] == 0);
    const float bad[] = {1.0f, std::numeric_limits<float>::infinity()};
    std::int8_t qb[2] = {1, 1};
    CHECK(std::isnan(ref.quantize_row(bad, qb, 2)));
    CHECK(qb[0] == 0);

    const std::int32_t acc_bits[] = {3, -2};
    float acc[2];
    std::memcpy(acc, acc_bits, sizeof(acc));
    const float column_scales[] = {0.5f, 0.25f};
    ref.dequantize(acc, acc, 2, 2.0f, column_scales);  // in place
    CHECK(acc[0] == 3.0f);
    CHECK(acc[1] == -1.0f);
}

TEST_CASE("every SIMD ISA gives the scalar bits: to_bf16 and round_to_bf16") {
    const KernelTable ref = swiglu::detail::kernel_table(Isa::scalar);
    for (const Table& isa : simd_isas()) {
        CAPTURE(isa.name);
        for (std::size_t n : kLengths) {
            CAPTURE(n);
            const std::vector<float> in = test_values(n, static_cast<unsigned>(n) + 1);
            // One guard element past n: nothing may be written there.
            std::vector<std::uint16_t> want(n + 1, 0xABCD), got(n + 1, 0xABCD);
            ref.to_bf16(in.data(), want.data(), n);
            isa.k.to_bf16(in.data(), got.data(), n);
            CHECK(got == want);

            std::vector<float> want_f(n + 1, 7.0f), got_f(n + 1, 7.0f);
            ref.round_to_bf16(in.data(), want_f.data(), n);
            isa.k.round_to_bf16(in.data(), got_f.data(), n);
            CHECK(std::memcmp(got_f.data(), want_f.data(), (n + 1) * sizeof(float)) == 0);
            for (std::size_t i = 0; i < n; ++i)
                if (!std::isnan(in[i])) CHECK(bits(want_f[i]) == std::uint32_t{want[i]} << 16);

            std::vector<float> in_place = in;  // out == in
            in_place.push_back(7.0f);          // (never empty: memcmp takes no null)
            isa.k.round_to_bf16(in_place.data(), in_place.data(), n);
            CHECK(std::memcmp(in_place.data(), want_f.data(), (n + 1) * sizeof(float)) == 0);
        }
    }
}

TEST_CASE("every SIMD ISA gives the scalar bits: quantize_row") {
    const KernelTable ref = swiglu::detail::kernel_table(Isa::scalar);
    for (const Table& isa : simd_isas()) {
        CAPTURE(isa.name);
        for (std::size_t n : kLengths) {
            CAPTURE(n);
            for (int kind = 0; kind < 3; ++kind) {
                CAPTURE(kind);
                std::vector<float> in = finite_row(n, static_cast<unsigned>(n * 3 + kind));
                if (kind == 1 && n > 0) in[n / 2] = std::numeric_limits<float>::quiet_NaN();
                if (kind == 2) in.assign(n, 0.0f);
                std::vector<std::int8_t> want(n + 1, 99), got(n + 1, 99);
                const float ws = ref.quantize_row(in.data(), want.data(), n);
                const float gs = isa.k.quantize_row(in.data(), got.data(), n);
                CHECK(std::memcmp(&ws, &gs, sizeof(float)) == 0);
                CHECK(got == want);
            }
            // The row's peak in its last element, where the tail handles it.
            if (n > 0) {
                std::vector<float> in = finite_row(n, 5);
                in[n - 1] = -1000.0f;
                std::vector<std::int8_t> want(n), got(n);
                const float ws = ref.quantize_row(in.data(), want.data(), n);
                CHECK(isa.k.quantize_row(in.data(), got.data(), n) == ws);
                CHECK(got == want);
                CHECK(got[n - 1] == -127);
            }
        }
    }
}

// The grouped formats' activation blocks of `n` values, each field's bits.
struct ActRow {
    std::vector<ActBlock> blocks;
    explicit ActRow(std::size_t n) : blocks(swiglu::detail::ggml_blocks(n) + 1) {
        for (ActBlock& b : blocks) {  // a guard block past the row's and junk in every field
            std::memset(b.qs, 0x5A, sizeof b.qs);
            b.d = 99.0f;
            b.sum = 12345;
        }
    }
    bool operator==(const ActRow& o) const {
        return std::memcmp(blocks.data(), o.blocks.data(), blocks.size() * sizeof(ActBlock)) == 0;
    }
};

TEST_CASE("the scalar reference: activation blocks are quantize_row per block, plus sums") {
    const KernelTable ref = swiglu::detail::kernel_table(Isa::scalar);
    std::vector<float> in = finite_row(70, 4);
    in[40] = std::numeric_limits<float>::infinity();  // block 1: NaN scale, zero quants
    std::fill(in.begin() + 64, in.end(), 0.0f);       // block 2: zeros, scale 0
    in[3] = -50.0f;                                   // block 0's peak: -127
    ActRow row(in.size());
    ref.quantize_act_row(in.data(), in.size(), row.blocks.data());
    REQUIRE(row.blocks.size() == 4);
    std::int8_t q[32];
    CHECK(row.blocks[0].d == ref.quantize_row(in.data(), q, 32));
    CHECK(std::memcmp(row.blocks[0].qs, q, 32) == 0);
    CHECK(row.blocks[0].qs[3] == -127);
    CHECK(std::isnan(row.blocks[1].d));
    CHECK(row.blocks[2].d == 0.0f);
    for (std::size_t b = 0; b < 3; ++b) {
        int sum = 0;
        for (std::int8_t v : row.blocks[b].qs) sum += v;
        CHECK(row.blocks[b].sum == sum);
        if (b > 0)
            for (std::int8_t v : row.blocks[b].qs) CHECK(v == 0);
    }
    CHECK(row.blocks[3].d == 99.0f);  // the guard: untouched
}

TEST_CASE("every SIMD ISA gives the scalar bits: activation blocks") {
    const KernelTable ref = swiglu::detail::kernel_table(Isa::scalar);
    for (const Table& isa : simd_isas()) {
        CAPTURE(isa.name);
        for (std::size_t n : kLengths) {
            CAPTURE(n);
            for (int kind = 0; kind < 5; ++kind) {
                CAPTURE(kind);
                std::vector<float> in = finite_row(n, static_cast<unsigned>(n * 5 + kind));
                if (kind == 1 && n > 0) in[n / 2] = std::numeric_limits<float>::quiet_NaN();
                if (kind == 2)
                    std::fill(in.begin(), in.begin() + std::min<std::size_t>(n, 40), 0.0f);
                if (kind == 3 && n > 0) in[n - 1] = -std::numeric_limits<float>::infinity();
                if (kind == 4)  // each block's peak in its last lane; ties at +-0.5 quant steps
                    for (std::size_t i = 0; i < n; ++i)
                        in[i] = i % 32 == 31 || i + 1 == n ? 127.0f : float(int(i % 7) - 3) + 0.5f;
                ActRow want(n), got(n);
                ref.quantize_act_row(in.data(), n, want.blocks.data());
                isa.k.quantize_act_row(in.data(), n, got.blocks.data());
                CHECK(got == want);
            }
        }
    }
}

TEST_CASE("every SIMD ISA gives the scalar bits: dequantize") {
    const KernelTable ref = swiglu::detail::kernel_table(Isa::scalar);
    std::mt19937 rng(3);
    std::uniform_int_distribution<std::int32_t> acc_value(-(1 << 24), 1 << 24);
    for (const Table& isa : simd_isas()) {
        CAPTURE(isa.name);
        for (std::size_t n : kLengths) {
            CAPTURE(n);
            std::vector<std::int32_t> acc_bits(n + 1);  // (+1: never empty, for memcpy)
            for (auto& a : acc_bits) a = acc_value(rng);
            if (n > 2) acc_bits[1] = std::numeric_limits<std::int32_t>::min();
            std::vector<float> acc(n + 1, 0.0f);
            std::memcpy(acc.data(), acc_bits.data(), n * sizeof(float));
            std::vector<float> scales = finite_row(n, 11);
            if (n > 3) scales[2] = std::numeric_limits<float>::quiet_NaN();  // a NaN channel
            const float row_scale = 0.0123f;

            std::vector<float> want(n + 1, 7.0f), got(n + 1, 7.0f);
            ref.dequantize(acc.data(), want.data(), n, row_scale, scales.data());
            isa.k.dequantize(acc.data(), got.data(), n, row_scale, scales.data());
            CHECK(std::memcmp(got.data(), want.data(), (n + 1) * sizeof(float)) == 0);

            std::vector<float> in_place = acc;
            isa.k.dequantize(in_place.data(), in_place.data(), n, row_scale, scales.data());
            CHECK(std::memcmp(in_place.data(), want.data(), n * sizeof(float)) == 0);
        }
    }
}

TEST_CASE("the entry points run the best ISA's kernels") {
    const KernelTable best = swiglu::detail::kernel_table(swiglu::detail::kernels_isa());
    const std::vector<float> in = test_values(341, 9);
    std::vector<std::uint16_t> a(341), b(341);
    swiglu::detail::to_bf16(in.data(), a.data(), in.size());
    best.to_bf16(in.data(), b.data(), in.size());
    CHECK(a == b);
    const std::vector<float> row = finite_row(341, 9);
    std::vector<std::int8_t> qa(341), qb(341);
    CHECK(swiglu::detail::quantize_row(row.data(), qa.data(), row.size()) ==
          best.quantize_row(row.data(), qb.data(), row.size()));
    CHECK(qa == qb);
    MESSAGE(
        "conversions run " << std::string(swiglu::detail::isa_name(swiglu::detail::kernels_isa())));
}

}  // TEST_SUITE("convert")
