// The grouped formats' kernels (kernels/grouped_gemm.hpp) and what feeds
// them (kernels/grouped_layout.hpp):
//  - activations quantised per block of 32: scale, sum, zero padding, NaN;
//  - the scalar reference against fp64 dot products over the GGUF blocks
//    themselves (not over our layout): a misplaced quant or scale shows;
//  - every ISA's kernels against the scalar reference, bit for bit, over
//    many shapes (1, 7, 13, 33, 341, 600, 1100 inputs; 1..341 columns;
//    1..17 rows);
//  - a NaN weight block: NaN in its column only.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/half.hpp"
#include "kernels/ggml_blocks.hpp"
#include "kernels/grouped_gemm.hpp"
#include "kernels/grouped_layout.hpp"
#include "reference.hpp"

using namespace swiglu::detail;

namespace {

const GroupedFormat kFormats[] = {GroupedFormat::q8_0, GroupedFormat::q4_0};
const char* name(GroupedFormat f) { return f == GroupedFormat::q8_0 ? "q8_0" : "q4_0"; }

// A (k x n) weight tile: its f32 values (row-major), the GGUF blocks of each
// column (exact values, dequantised) and the packed tile.
struct Tile {
    std::int64_t k, n;
    std::vector<float> plain;
    std::vector<double> exact;  // (k x n), the values the blocks hold
    std::vector<std::uint8_t> packed;

    Tile(GroupedFormat format, std::int64_t k_, std::int64_t n_, unsigned seed)
        : k(k_),
          n(n_),
          plain(swiglu::test::uniform(std::size_t(k_ * n_), 1.0f, seed)),
          exact(std::size_t(k_ * n_)),
          packed(grouped_tile_bytes(format, k_, n_)) {
        pack_grouped_tile(format, plain.data(), k, n, packed.data());
        const std::size_t nb = ggml_blocks(std::size_t(k));
        std::vector<float> column(static_cast<std::size_t>(k));
        std::vector<float> values(nb * kGgmlBlock);
        for (std::int64_t c = 0; c < n; ++c) {
            for (std::int64_t i = 0; i < k; ++i) column[std::size_t(i)] = plain[i * n + c];
            if (format == GroupedFormat::q8_0) {
                std::vector<BlockQ8_0> b(nb);
                quantize_row_q8_0(column.data(), column.size(), b.data());
                dequantize_row_q8_0(b.data(), values.size(), values.data());
            } else {
                std::vector<BlockQ4_0> b(nb);
                quantize_row_q4_0(column.data(), column.size(), b.data());
                dequantize_row_q4_0(b.data(), values.size(), values.data());
            }
            for (std::int64_t i = 0; i < k; ++i) exact[std::size_t(i * n + c)] = values[i];
        }
    }
};

std::vector<ActBlock> quantised_rows(std::int64_t rows, std::int64_t k, unsigned seed) {
    const auto nb = std::int64_t(ggml_blocks(std::size_t(k)));
    const auto x = swiglu::test::uniform(std::size_t(rows * k), 2.0f, seed);
    std::vector<ActBlock> q(std::size_t(rows * nb));
    for (std::int64_t r = 0; r < rows; ++r)
        quantize_act_row(x.data() + r * k, std::size_t(k), q.data() + r * nb);
    return q;
}

double act_value(const ActBlock* row, std::int64_t i) {
    const ActBlock& a = row[i / std::int64_t(kGgmlBlock)];
    return double(a.qs[i % std::int64_t(kGgmlBlock)]) * double(a.d);
}

struct Case {
    std::int64_t k, n, rows;
};
// Rows: every pass height of every ISA (AVX2 up to 4 rows per pass,
// AVX-512 up to 4, and Q8_0's 5-8 rows in one pass over a pair) and the
// passes whose column groups go side by side (AVX2: 1 row over 4 or 2
// groups; AVX-512: 1-4 rows over 2 pairs, then a pair, then a group alone:
// 55 columns are 7 groups, the last partial, 100 are 13; 9-17 rows in
// passes of 4 over 2 pairs and a shorter last one; strided passes,
// grouped_prefetch.hpp: 64 and 60 columns, 8 groups, 60's last partial
// (Q8_0's 6 rows: over one pair), 125: 16 groups, 131: 17, the last
// alone, 341: 43); columns:
// partial groups and pairs; 600 and 1100 inputs (19 and 35 blocks) under
// passes of every height, more than one of them.
const Case kCases[] = {{1, 1, 1},     {7, 13, 2},     {13, 7, 3},    {32, 8, 4},    {33, 9, 5},
                       {64, 64, 1},   {40, 55, 1},    {50, 55, 2},   {64, 100, 3},  {70, 55, 10},
                       {341, 131, 7}, {128, 341, 9},  {96, 17, 6},   {64, 48, 16},  {1024, 24, 4},
                       {600, 55, 11}, {1100, 40, 17}, {1100, 24, 3}, {600, 100, 4}, {341, 55, 12},
                       {64, 60, 1},   {96, 125, 3},   {64, 60, 6}};

// Calls fn(isa, that ISA's kernels of `format`, format, case) for every ISA
// this build has grouped kernels for and this CPU runs, every format, every case.
template <class Fn>
void for_each_kernel_case(Fn&& fn) {
    for (const IsaKernels<GroupedKernels>& entry : grouped_dispatch().runnable()) {
        const Isa isa = entry.isa;
        const GroupedKernels& k = entry.table;
        for (GroupedFormat format : kFormats)
            for (const Case& c : kCases) {
                CAPTURE(isa_name(isa));
                CAPTURE(name(format));
                CAPTURE(c.k);
                CAPTURE(c.n);
                CAPTURE(c.rows);
                fn(isa, k[format], format, c);
            }
    }
}

}  // namespace

TEST_SUITE("grouped") {

TEST_CASE("activations: per-block scale and sum, zero padding, NaN blocks") {
    std::vector<float> x(70);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i % 11) - 5.0f;
    x[3] = 10.0f;
    std::vector<ActBlock> q(ggml_blocks(x.size()));
    REQUIRE(q.size() == 3);
    quantize_act_row(x.data(), x.size(), q.data());
    CHECK(q[0].d == 10.0f / 127.0f);
    CHECK(q[0].qs[3] == 127);
    for (const ActBlock& b : q) {
        int sum = 0;
        for (std::int8_t v : b.qs) sum += v;
        CHECK(b.sum == sum);
    }
    for (std::size_t i = 70 - 64; i < kGgmlBlock; ++i) CHECK(q[2].qs[i] == 0);  // padding
    x[40] = NAN;
    x[5] = 0.0f;
    std::fill(x.begin(), x.begin() + 32, 0.0f);
    quantize_act_row(x.data(), x.size(), q.data());
    CHECK(q[0].d == 0.0f);
    CHECK(std::isnan(q[1].d));
    CHECK(std::isfinite(q[2].d));
}

TEST_CASE("the scalar kernels match fp64 dot products over the GGUF blocks") {
    // Kernel numerics: exact integer block sums, then one f32 product of
    // the scales and one f32 rounding per block into the accumulator: at
    // most nb + 1 roundings of 2^-24 relative to the sum of |terms|.
    const GroupedKernels scalar = grouped_kernels(Isa::scalar);
    for (GroupedFormat format : kFormats)
        for (const Case& c : kCases) {
            CAPTURE(name(format));
            CAPTURE(c.k);
            CAPTURE(c.n);
            const Tile t(format, c.k, c.n, unsigned(c.k * 7 + c.n));
            const auto nb = std::int64_t(ggml_blocks(std::size_t(c.k)));
            const auto x = quantised_rows(c.rows, c.k, unsigned(c.n));
            std::vector<float> y(std::size_t(c.rows * c.n));
            scalar[format].gemm(t.packed.data(), c.k, c.n, x.data(), nb, c.rows, y.data(), c.n);
            for (std::int64_t r = 0; r < c.rows; ++r)
                for (std::int64_t j = 0; j < c.n; ++j) {
                    double want = 0, magnitude = 0;
                    for (std::int64_t i = 0; i < c.k; ++i) {
                        const double term = act_value(x.data() + r * nb, i) * t.exact[i * c.n + j];
                        want += term;
                        magnitude += std::fabs(term);
                    }
                    CHECK(std::fabs(double(y[r * c.n + j]) - want) <=
                          double(nb + 1) * 0x1p-24 * magnitude + 1e-30);
                }
        }
}

TEST_CASE("every ISA's kernels give the scalar reference's bits") {
    const GroupedKernels scalar = grouped_kernels(Isa::scalar);
    for_each_kernel_case(
        [&](Isa isa, const GroupedFormatKernels& k, GroupedFormat format, const Case& c) {
            if (isa == Isa::scalar) return;
            const Tile t(format, c.k, c.n, unsigned(c.k + 3 * c.n));
            const auto nb = std::int64_t(ggml_blocks(std::size_t(c.k)));
            const auto x = quantised_rows(c.rows, c.k, 5);
            // ldy > n: the kernels write n columns per row, nothing past them.
            const std::int64_t ldy = c.n + 3;
            std::vector<float> want(std::size_t(c.rows * ldy), -7.0f), got = want;
            scalar[format].gemm(t.packed.data(), c.k, c.n, x.data(), nb, c.rows, want.data(), ldy);
            k.gemm(t.packed.data(), c.k, c.n, x.data(), nb, c.rows, got.data(), ldy);
            CHECK(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0);
            for (std::int64_t r = 0; r < c.rows; ++r)
                for (std::int64_t j = c.n; j < ldy; ++j) CHECK(got[r * ldy + j] == -7.0f);
        });
    // The one this CPU runs is one of them.
    const bool same =
        grouped_kernels().q4_0.gemm == grouped_kernels(grouped_kernels_isa()).q4_0.gemm;
    CHECK(same);
}

TEST_CASE("unpacking a tile gives the GGUF blocks' values, on every ISA") {
    for_each_kernel_case(
        [](Isa, const GroupedFormatKernels& k, GroupedFormat format, const Case& c) {
            const Tile t(format, c.k, c.n, unsigned(c.k + c.n));
            const std::int64_t ldo = c.n + 2;
            // Every block row, one after another: padding columns and rows past
            // k stay untouched.
            std::vector<float> out(std::size_t(c.k * ldo + 32 * ldo), -3.0f);
            for (std::int64_t b = 0; b * 32 < c.k; ++b)
                k.unpack(t.packed.data(), c.k, c.n, b, out.data() + b * 32 * ldo, ldo);
            bool exact = true, untouched = true;
            for (std::int64_t i = 0; i < c.k; ++i)
                for (std::int64_t j = 0; j < ldo; ++j) {
                    const float v = out[std::size_t(i * ldo + j)];
                    if (j < c.n)
                        exact = exact && double(v) == t.exact[std::size_t(i * c.n + j)];
                    else
                        untouched = untouched && v == -3.0f;
                }
            for (std::size_t i = std::size_t(c.k * ldo); i < out.size(); ++i)
                untouched = untouched && out[i] == -3.0f;
            CHECK(exact);
            CHECK(untouched);
        });
}

TEST_CASE("a NaN weight block gives NaN in its column only") {
    for (GroupedFormat format : kFormats)
        for (const IsaKernels<GroupedKernels>& entry : grouped_dispatch().runnable()) {
            const Isa isa = entry.isa;
            const GroupedKernels& k = entry.table;
            CAPTURE(isa_name(isa));
            CAPTURE(name(format));
            Tile t(format, 40, 10, 3);
            t.plain[33 * 10 + 4] = NAN;  // column 4, block 1
            pack_grouped_tile(format, t.plain.data(), 40, 10, t.packed.data());
            const auto x = quantised_rows(2, 40, 9);
            std::vector<float> y(20);
            k[format].gemm(t.packed.data(), 40, 10, x.data(), 2, 2, y.data(), 10);
            for (int r = 0; r < 2; ++r)
                for (int j = 0; j < 10; ++j) CHECK(std::isnan(y[r * 10 + j]) == (j == 4));
        }
}

}  // TEST_SUITE
