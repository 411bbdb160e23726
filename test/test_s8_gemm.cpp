// The int8 mode's s8 kernel (kernels/s8_gemm.hpp):
//  - the scalar reference against plain int64 dot products of a row-major
//    matrix placed in the layout by hand (weights, zero padding, and the
//    compensation after them);
//  - this CPU's kernel (AVX-512 with VNNI) against the scalar one, exactly,
//    over many shapes: 1, 3, 4, 7, 13, 64, 65, 255-257, 341, 1000 inputs
//    (k no multiple of 4, of 64, more than one 256-input chunk); 1..341
//    columns (one partial vector, one block, several, a partial last one);
//    1..7, 12, 13, 17, 32, 64, 65 and 70 rows (every pass height up to 6,
//    the even last passes, more than one group of 64 rows); extreme values
//    (every x and weight -127 or 127: sums of +-127^2 k, no wrap);
//  - on such a CPU, int8 blocks take it for their few-row tiles (oneDNN's
//    packed tiles passed the mode's layout check) and give the same bits as
//    with oneDNN's kernels alone (the s32 results are the same), so
//    test_dtype's bounds hold for both.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <swiglu/swiglu.hpp>

#include "capabilities.hpp"
#include "kernels/s8_gemm.hpp"
#include "reference.hpp"

using namespace swiglu::detail;

namespace {

// A (k x n) s8 matrix, row-major, and the same in the kernels' layout.
struct S8Tile {
    std::int64_t k, n;
    std::vector<std::int8_t> plain, packed;

    S8Tile(std::int64_t k_, std::int64_t n_, std::mt19937& rng, bool extreme = false)
        : k(k_), n(n_), plain(std::size_t(k_ * n_)) {
        std::uniform_int_distribution<int> value(-127, 127), sign(0, 1);
        for (auto& v : plain) v = std::int8_t(extreme ? (sign(rng) ? 127 : -127) : value(rng));
        packed.assign(std::size_t(s8_padded(k) * s8_padded(n) + 4 * n), 0);
        for (std::int64_t c = 0; c < n; ++c) {
            std::int32_t sum = 0;
            for (std::int64_t i = 0; i < k; ++i) {
                packed[std::size_t(s8_tile_offset(k, i, c))] = plain[std::size_t(i * n + c)];
                sum += plain[std::size_t(i * n + c)];
            }
            const std::int32_t compensation = -128 * sum;
            std::memcpy(packed.data() + s8_padded(k) * s8_padded(n) + 4 * c, &compensation, 4);
        }
    }
};

std::vector<std::int8_t> random_x(std::int64_t rows, std::int64_t ldx, std::mt19937& rng,
                                  bool extreme = false) {
    std::vector<std::int8_t> x(std::size_t(rows * ldx));
    std::uniform_int_distribution<int> value(-127, 127), sign(0, 1);
    for (auto& v : x) v = std::int8_t(extreme ? (sign(rng) ? 127 : -127) : value(rng));
    return x;
}

std::vector<std::int32_t> run(S8Gemm gemm, const S8Tile& t, const std::vector<std::int8_t>& x,
                              std::int64_t ldx, std::int64_t rows) {
    // ldy wider than n, the spare columns marked: the kernel writes n only.
    const std::int64_t ldy = t.n + 3;
    std::vector<std::int32_t> y(std::size_t(rows * ldy), 0x5A5A5A5A);
    gemm(t.packed.data(), t.k, t.n, x.data(), ldx, rows, y.data(), ldy);
    return y;
}

}  // namespace

TEST_SUITE("s8_gemm") {

TEST_CASE("the scalar s8 kernel computes exact dot products from the layout") {
    std::mt19937 rng(5);
    for (std::int64_t k : {1, 3, 4, 7, 65, 257})
        for (std::int64_t n : {1, 17, 65, 130}) {
            CAPTURE(k);
            CAPTURE(n);
            const S8Tile t(k, n, rng);
            const std::int64_t rows = 5, ldx = k + 2;
            const auto x = random_x(rows, ldx, rng);
            const auto y = run(s8_gemm_scalar(), t, x, ldx, rows);
            for (std::int64_t r = 0; r < rows; ++r) {
                for (std::int64_t c = 0; c < n; ++c) {
                    std::int64_t sum = 0;
                    for (std::int64_t i = 0; i < k; ++i)
                        sum += std::int64_t{x[std::size_t(r * ldx + i)]} *
                               t.plain[std::size_t(i * n + c)];
                    REQUIRE(y[std::size_t(r * (n + 3) + c)] == sum);
                }
                for (std::int64_t c = n; c < n + 3; ++c)
                    REQUIRE(y[std::size_t(r * (n + 3) + c)] == 0x5A5A5A5A);
            }
        }
}

TEST_CASE("this CPU's s8 kernel matches the scalar one exactly") {
    const S8Gemm gemm = s8_gemm();
    if (!gemm) {
        MESSAGE("no s8 kernel on this CPU (AVX-512 with VNNI): the scalar one alone");
        return;
    }
    std::mt19937 rng(7);
    const std::int64_t ks[] = {1, 3, 4, 7, 13, 64, 65, 255, 256, 257, 341, 1000};
    const std::int64_t ns[] = {1, 7, 16, 17, 64, 65, 130, 341};
    const std::int64_t rows_list[] = {1, 2, 3, 4, 5, 6, 7, 12, 13, 17, 32, 64, 65, 70};
    for (bool extreme : {false, true})
        for (std::int64_t k : ks)
            for (std::int64_t n : ns) {
                const S8Tile t(k, n, rng, extreme);
                for (std::int64_t rows : rows_list) {
                    if (k * n * rows > 4'000'000) continue;  // keeps the suite quick
                    CAPTURE(extreme);
                    CAPTURE(k);
                    CAPTURE(n);
                    CAPTURE(rows);
                    const std::int64_t ldx = k + 5;
                    const auto x = random_x(rows, ldx, rng, extreme);
                    REQUIRE(run(gemm, t, x, ldx, rows) == run(s8_gemm_scalar(), t, x, ldx, rows));
                }
            }
}

TEST_CASE("int8 blocks on the s8 kernel give oneDNN's bits, at every row count") {
    if (!swiglu::test::int8_supported() || !s8_gemm()) return;
    // 13 x 7 and 384 x 1024 (cyber): one gate|up tile, act quantised in
    // its task; 1100 x 700: several gate|up tiles, act in a step of its
    // own. k and n no multiple of 64 (oneDNN pads them) in 13 x 7 and
    // 1100 x 700.
    const std::pair<std::int64_t, std::int64_t> shapes[] = {{13, 7}, {384, 1024}, {1100, 700}};
    for (auto [d, f] : shapes) {
        CAPTURE(d);
        CAPTURE(f);
        const swiglu::test::RandomBlock b(d, f, swiglu::Layout::out_in, 3);
        auto make = [&](std::int64_t rows) {
            swiglu::Options options{2, swiglu::Dtype::int8};
            options.build.int8_own_rows = rows;
            return std::make_unique<swiglu::Ffn>(b.gate_view(), b.up_view(), b.down_view(),
                                                 options);
        };
        const auto ours = make(-1), theirs = make(0);
        const std::string matmul = ours->implementation().matmul;
        CAPTURE(matmul);
        CHECK(matmul.find("rows: s8 kernels") != std::string::npos);
        CHECK(theirs->implementation().matmul.find("s8 kernels") == std::string::npos);
        for (std::int64_t tokens : {1, 2, 5, 8, 17, 32, 33, 70, 130}) {
            CAPTURE(tokens);
            const auto x = swiglu::test::random_input(tokens, d, 11);
            std::vector<float> y1(std::size_t(tokens * d)), y2(y1.size());
            ours->forward(x.data(), y1.data(), tokens);
            theirs->forward(x.data(), y2.data(), tokens);
            CHECK(std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)) == 0);
        }
    }
}

}  // TEST_SUITE
