// The K-quants' kernels (kernels/kquant_gemm.hpp) and what feeds them
// (kernels/kquant_layout.hpp, grouped_layout.hpp's quantize_act_row_k):
//  - activations quantised per block of 256: scale, sums of 16, padding, NaN;
//  - placing a stored super-block and reading it back gives its integers;
//  - the scalar reference against fp64 dot products over the GGUF
//    super-blocks' own decoded values (not over our layout): a misplaced
//    quant, scale or min shows;
//  - every ISA's kernels against the scalar reference, bit for bit, over
//    many shapes (1, 7, 255, 256, 257, 600, 1100 inputs; 1..100 columns;
//    1..17 rows);
//  - a NaN weight super-block: NaN in its column only.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/half.hpp"
#include "kernels/kquant_blocks.hpp"
#include "kernels/kquant_gemm.hpp"
#include "kernels/kquant_layout.hpp"
#include "reference.hpp"

using namespace swiglu::detail;

namespace {

const GroupedFormat kFormats[] = {GroupedFormat::q4_k, GroupedFormat::q5_k, GroupedFormat::q6_k};
const char* name(GroupedFormat f) {
    return f == GroupedFormat::q4_k ? "q4_k" : f == GroupedFormat::q5_k ? "q5_k" : "q6_k";
}

// One column's stored super-blocks (GGUF's bytes) and their decoded values.
template <class Block>
void quantise_column(const std::vector<float>& column, std::vector<unsigned char>& stored,
                     std::vector<float>& values) {
    const std::size_t nb = super_blocks(column.size());
    std::vector<Block> b(nb);
    quantize_row_k(column.data(), column.size(), b.data());
    stored.resize(nb * sizeof(Block));
    std::memcpy(stored.data(), b.data(), stored.size());
    values.resize(nb * kSuperBlock);
    dequantize_row_k(b.data(), values.size(), values.data());
}

void quantise_column(GroupedFormat format, const std::vector<float>& column,
                     std::vector<unsigned char>& stored, std::vector<float>& values) {
    if (format == GroupedFormat::q4_k) return quantise_column<BlockQ4K>(column, stored, values);
    if (format == GroupedFormat::q5_k) return quantise_column<BlockQ5K>(column, stored, values);
    quantise_column<BlockQ6K>(column, stored, values);
}

// A (k x n) weight tile: its f32 values (row-major), the values of each
// column's GGUF super-blocks (decoded as ggml does) and the packed tile,
// packed through the f32 path (pack_grouped_tile).
struct Tile {
    GroupedFormat format;
    std::int64_t k, n;
    std::vector<float> plain;
    std::vector<double> exact;  // (k x n), the values the super-blocks hold
    // (k x n): the magnitude of the parts the kernels sum for each value,
    // |d sc q| + |dmin m| (Q6_K: |d sc| (q + 32)), which cancel in it.
    std::vector<double> parts;
    std::vector<std::uint8_t> packed;

    Tile(GroupedFormat format_, std::int64_t k_, std::int64_t n_, unsigned seed)
        : format(format_),
          k(k_),
          n(n_),
          plain(swiglu::test::uniform(std::size_t(k_ * n_), 1.0f, seed)),
          exact(std::size_t(k_ * n_)),
          parts(std::size_t(k_ * n_)),
          packed(grouped_tile_bytes(format_, k_, n_)) {
        pack();
        std::vector<float> column(static_cast<std::size_t>(k)), values;
        std::vector<unsigned char> stored;
        const KRecordLayout r = k_record(format);
        for (std::int64_t c = 0; c < n; ++c) {
            for (std::int64_t i = 0; i < k; ++i) column[std::size_t(i)] = plain[i * n + c];
            quantise_column(format, column, stored, values);
            const std::size_t per_block = stored.size() / super_blocks(column.size());
            KSuperBlockInts ints;
            for (std::int64_t i = 0; i < k; ++i) {
                exact[std::size_t(i * n + c)] = values[std::size_t(i)];
                if (i % 256 == 0)
                    k_super_block(format, stored.data() + (i / 256) * per_block, ints);
                const int e = int(i % 256), sub = e / r.sub_block_inputs;
                const double d = f16_to_f32(ints.d), dmin = f16_to_f32(ints.dmin);
                const double sc = std::fabs(d * ints.scale[sub]);
                parts[std::size_t(i * n + c)] =
                    format == GroupedFormat::q6_k
                        ? sc * (ints.q[e] + 32)
                        : sc * ints.q[e] + std::fabs(dmin * ints.min[sub]);
            }
        }
    }
    void pack() { pack_grouped_tile(format, plain.data(), k, n, packed.data()); }
};

std::vector<ActBlockK> quantised_rows(std::int64_t rows, std::int64_t k, unsigned seed) {
    const std::int64_t nb = format_blocks(GroupedFormat::q4_k, k);
    const auto x = swiglu::test::uniform(std::size_t(rows * k), 2.0f, seed);
    std::vector<ActBlockK> q(std::size_t(rows * nb));
    for (std::int64_t r = 0; r < rows; ++r)
        quantize_act_row_k(x.data() + r * k, std::size_t(k), q.data() + r * nb);
    return q;
}

double act_value(const ActBlockK* row, std::int64_t i) {
    const ActBlockK& a = row[i / 256];
    return double(a.qs[i % 256]) * double(a.d);
}

struct Case {
    std::int64_t k, n, rows;
};
// Rows: every pass height up to 8 and past it; columns: partial groups (8)
// and pairs of groups (16), and runs of two pairs side by side (55: 7
// groups, the last partial), strided passes (grouped_prefetch.hpp: 64 and
// 60, 8 groups, in 2 passes, 60's last group partial, over one pair in
// Q5_K's and Q6_K's 4 rows; 100: 13 groups, 12 in 3 passes and the partial
// last alone; 33 and 55 over one pair at 7 and 10 rows); inputs: a partial super-block
// alone (1, 7, 255), whole ones, and more than one with a partial last
// (257, 600, 1100).
const Case kCases[] = {{1, 1, 1},     {7, 13, 2},     {255, 7, 3},   {256, 8, 4},   {257, 9, 5},
                       {256, 64, 1},  {512, 55, 1},   {600, 55, 2},  {256, 100, 3}, {300, 55, 10},
                       {341, 33, 7},  {512, 41, 9},   {256, 17, 6},  {768, 48, 16}, {1024, 24, 4},
                       {600, 55, 11}, {1100, 40, 17}, {1100, 24, 3}, {600, 100, 4}, {341, 55, 12},
                       {512, 16, 8},  {512, 60, 1},   {257, 60, 4}};

}  // namespace

TEST_SUITE("kquant_gemm") {

TEST_CASE("activations: per-256 scale, sums of 16, zero padding, NaN blocks") {
    std::vector<float> x(600);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i % 11) - 5.0f;
    x[3] = 10.0f;
    std::vector<ActBlockK> q(3);
    quantize_act_row_k(x.data(), x.size(), q.data());
    CHECK(q[0].d == 10.0f / 127.0f);
    CHECK(q[0].qs[3] == 127);
    for (const ActBlockK& b : q)
        for (int g = 0; g < 16; ++g) {
            int sum = 0;
            for (int i = 0; i < 16; ++i) sum += b.qs[16 * g + i];
            CHECK(b.bsums[g] == sum);
        }
    for (std::size_t i = 600 - 512; i < 256; ++i) CHECK(q[2].qs[i] == 0);  // padding
    std::fill(x.begin(), x.begin() + 256, 0.0f);
    x[300] = NAN;
    quantize_act_row_k(x.data(), x.size(), q.data());
    CHECK(q[0].d == 0.0f);
    CHECK(std::isnan(q[1].d));
    CHECK(std::isfinite(q[2].d));
}

TEST_CASE("a placed super-block reads back as its integers") {
    for (GroupedFormat format : kFormats) {
        CAPTURE(name(format));
        std::vector<float> column = swiglu::test::uniform(256, 1.0f, 4);
        std::vector<unsigned char> stored;
        std::vector<float> values;
        quantise_column(format, column, stored, values);
        KSuperBlockInts ints;
        k_super_block(format, stored.data(), ints);
        const KRecordLayout r = k_record(format);
        // Column 13 of a 16-column tile: group 1, lane 5.
        std::vector<std::uint8_t> tile(grouped_tile_bytes(format, 256, 16), 0);
        place_k_super_block(format, ints, 256, 13, 0, tile.data());
        const std::uint8_t* record = tile.data() + r.bytes;
        for (int e = 0; e < 256; ++e) CHECK(k_quant(format, record, 5, e) == ints.q[e]);
        for (int i = 0; i < r.sub_blocks; ++i) {
            CHECK(k_scale(format, record, 5, i) == ints.scale[i]);
            CHECK(k_min(format, record, 5, i) == (r.mins ? ints.min[i] : 0));
        }
        CHECK(k_d(format, record, 5) == f16_to_f32(ints.d));
        // The values the integers stand for are the decoder's.
        for (int e = 0; e < 256; ++e) {
            const int i = e / r.sub_block_inputs;
            const double d = f16_to_f32(ints.d), dmin = f16_to_f32(ints.dmin);
            const double want = format == GroupedFormat::q6_k
                                    ? d * ints.scale[i] * (ints.q[e] - 32)
                                    : d * ints.scale[i] * ints.q[e] - dmin * ints.min[i];
            CHECK(std::fabs(want - values[std::size_t(e)]) <= 1e-6 * (std::fabs(want) + 1e-3));
        }
    }
}

TEST_CASE("the scalar kernels match fp64 dot products over the GGUF super-blocks") {
    // Kernel numerics: exact integer sums per super-block, then two f32
    // products of scales, the conversion of isum (|isum| < 2^29: up to 2^-24
    // relative) and two f32 roundings per super-block into the accumulator,
    // each at most 2^-24 of the sum of |terms|: within 4 (nb + 1) 2^-24 of it.
    // The sum of |terms| counts the min term apart (d sc q and dmin m x),
    // whose parts cancel in the decoded value.
    const KQuantKernels scalar = kquant_kernels(Isa::scalar);
    for (GroupedFormat format : kFormats)
        for (const Case& c : kCases) {
            CAPTURE(name(format));
            CAPTURE(c.k);
            CAPTURE(c.n);
            const Tile t(format, c.k, c.n, unsigned(c.k * 7 + c.n));
            const std::int64_t nb = format_blocks(format, c.k);
            const auto x = quantised_rows(c.rows, c.k, unsigned(c.n));
            std::vector<float> y(std::size_t(c.rows * c.n));
            scalar[format](t.packed.data(), c.k, c.n, x.data(), nb, c.rows, y.data(), c.n);
            for (std::int64_t r = 0; r < c.rows; ++r)
                for (std::int64_t j = 0; j < c.n; ++j) {
                    double want = 0, magnitude = 0;
                    for (std::int64_t i = 0; i < c.k; ++i) {
                        const double a = act_value(x.data() + r * nb, i);
                        const double term = a * t.exact[std::size_t(i * c.n + j)];
                        want += term;
                        magnitude += std::fabs(a) * t.parts[std::size_t(i * c.n + j)];
                    }
                    CHECK(std::fabs(double(y[std::size_t(r * c.n + j)]) - want) <=
                          4.0 * double(nb + 1) * 0x1p-24 * magnitude + 1e-30);
                }
        }
}

TEST_CASE("every ISA's kernels give the scalar reference's bits") {
    const KQuantKernels scalar = kquant_kernels(Isa::scalar);
    for (const IsaKernels<KQuantKernels>& entry : kquant_dispatch().runnable()) {
        if (entry.isa == Isa::scalar) continue;
        for (GroupedFormat format : kFormats)
            for (const Case& c : kCases) {
                CAPTURE(isa_name(entry.isa));
                CAPTURE(name(format));
                CAPTURE(c.k);
                CAPTURE(c.n);
                CAPTURE(c.rows);
                const Tile t(format, c.k, c.n, unsigned(c.k + 3 * c.n));
                const std::int64_t nb = format_blocks(format, c.k);
                const auto x = quantised_rows(c.rows, c.k, 5);
                // ldy > n: the kernels write n columns per row, nothing past them.
                const std::int64_t ldy = c.n + 3;
                std::vector<float> want(std::size_t(c.rows * ldy), -7.0f), got = want;
                scalar[format](t.packed.data(), c.k, c.n, x.data(), nb, c.rows, want.data(), ldy);
                entry.table[format](t.packed.data(), c.k, c.n, x.data(), nb, c.rows, got.data(),
                                    ldy);
                CHECK(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0);
                for (std::int64_t r = 0; r < c.rows; ++r)
                    for (std::int64_t j = c.n; j < ldy; ++j) CHECK(got[r * ldy + j] == -7.0f);
            }
    }
    const bool same = kquant_kernels().q4_k == kquant_kernels(kquant_kernels_isa()).q4_k;
    CHECK(same);
}

TEST_CASE("a NaN weight super-block gives NaN in its column only") {
    for (GroupedFormat format : kFormats)
        for (const IsaKernels<KQuantKernels>& entry : kquant_dispatch().runnable()) {
            CAPTURE(isa_name(entry.isa));
            CAPTURE(name(format));
            Tile t(format, 300, 10, 3);
            t.plain[260 * 10 + 4] = NAN;  // column 4, super-block 1
            t.pack();
            const auto x = quantised_rows(2, 300, 9);
            std::vector<float> y(20);
            entry.table[format](t.packed.data(), 300, 10, x.data(), 2, 2, y.data(), 10);
            for (int r = 0; r < 2; ++r)
                for (int j = 0; j < 10; ++j) CHECK(std::isnan(y[r * 10 + j]) == (j == 4));
        }
}

}  // TEST_SUITE
