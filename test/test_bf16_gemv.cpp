// The bf16 mode's one-row kernel (kernels/bf16_gemv.hpp):
//  - the scalar reference against double dot products of a row-major
//    matrix placed in the layout by hand, within the bound of its f32
//    sum: one recursive sum of k exact products, so |y - exact| <=
//    (k - 1) 2^-24 sum |w x| to first order (the bound used, (k + 4)
//    2^-24 sum |w x|, covers the second-order terms for every k here);
//  - the layout: the reference reads oneDNN's own BA16a64b2a reorder of a
//    matrix as the matrix;
//  - this CPU's kernel (AVX-512) against the scalar one, bit for bit (NaN
//    for NaN), over many shapes: 1, 2, 7, 13, 31-33, 64, 127-129, 341,
//    1000 and 4100 inputs (k no multiple of 2, of 32); 1..1000 columns (a
//    partial vector, one block, fewer blocks than the kernel's runs, runs
//    of unequal length, a partial last block); 1-3 rows; and x and weights
//    holding NaN, +-inf and zeros;
//  - tiles joined: one call over tiles packed back to back gives the bits
//    of calls tile by tile (core/engine_bf16.cpp joins them);
//  - on a CPU where oneDNN packs bf16 for its brgemm, bf16 blocks take it
//    for one-token calls (the tiles passed the engine's layout check),
//    stay within bf16's bound of the fp64 block there, and give oneDNN's
//    bits at 2 tokens and more.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>
#include <swiglu/swiglu.hpp>

#include "capabilities.hpp"
#include "common/half.hpp"
#include "kernels/bf16_gemv.hpp"
#include "kernels/convert.hpp"
#include "reference.hpp"

using namespace swiglu::detail;

namespace {

std::uint16_t narrow(float v) {
    std::uint16_t bits;
    to_bf16(&v, &bits, 1);
    return bits;
}

// Values ~ U(-1, 1) as bf16; `special`: every 7th a NaN, +-inf or zero.
std::vector<std::uint16_t> random_bf16(std::size_t n, std::mt19937& rng, bool special = false) {
    std::uniform_real_distribution<float> value(-1.0f, 1.0f);
    const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(), 0.0f, -0.0f};
    std::vector<std::uint16_t> out(n);
    for (std::size_t i = 0; i < n; ++i)
        out[i] = narrow(special && i % 7 == 3 ? specials[(i / 7) % 5] : value(rng));
    return out;
}

// A (k x n) bf16 matrix, row-major, and the same in the kernels' layout.
struct Bf16Tile {
    std::int64_t k, n;
    std::vector<std::uint16_t> plain, packed;

    Bf16Tile(std::int64_t k_, std::int64_t n_, std::mt19937& rng, bool special = false)
        : k(k_), n(n_), plain(random_bf16(std::size_t(k_ * n_), rng, special)) {
        packed.assign(std::size_t(bf16_padded_k(k) * bf16_padded_n(n)), 0);
        for (std::int64_t i = 0; i < k; ++i)
            for (std::int64_t c = 0; c < n; ++c)
                packed[std::size_t(bf16_tile_offset(k, i, c))] = plain[std::size_t(i * n + c)];
    }
};

std::vector<float> run(Bf16Gemv gemv, const Bf16Tile& t, const std::vector<std::uint16_t>& x,
                       std::int64_t ldx, std::int64_t rows) {
    // ldy wider than n, the spare columns marked: the kernel writes n only.
    const std::int64_t ldy = t.n + 3;
    std::vector<float> y(std::size_t(rows * ldy), -7.0f);
    gemv(t.packed.data(), t.k, t.n, x.data(), ldx, rows, y.data(), ldy);
    return y;
}

// How far one token's output on our kernel may lie from oneDNN's, relative
// to max |y|: the two sum the same rounded operands in different f32
// orders (~1e-7), but an element of act that lands on the other side of a
// bf16 rounding boundary moves by one bf16 step (2^-8 of itself) in the
// down matmul's input. Measured: 0 (13 x 7), 3.6e-7, 4.2e-7.
constexpr double kOneTokenApart = 1.0 / 256;

bool same_bits_or_both_nan(float a, float b) {
    return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof(a)) == 0;
}

}  // namespace

TEST_SUITE("bf16_gemv") {

TEST_CASE("the scalar bf16 kernel computes dot products from the layout within f32's bound") {
    std::mt19937 rng(5);
    for (std::int64_t k : {1, 2, 7, 33, 129, 341, 1000})
        for (std::int64_t n : {1, 17, 65, 130}) {
            CAPTURE(k);
            CAPTURE(n);
            const Bf16Tile t(k, n, rng);
            const std::int64_t rows = 3, ldx = k + 2;
            const auto x = random_bf16(std::size_t(rows * ldx), rng);
            const auto y = run(bf16_gemv_scalar(), t, x, ldx, rows);
            for (std::int64_t r = 0; r < rows; ++r) {
                for (std::int64_t c = 0; c < n; ++c) {
                    double exact = 0, magnitude = 0;
                    for (std::int64_t i = 0; i < k; ++i) {
                        const double p = double(bf16_to_f32(x[std::size_t(r * ldx + i)])) *
                                         bf16_to_f32(t.plain[std::size_t(i * n + c)]);
                        exact += p;
                        magnitude += std::fabs(p);
                    }
                    const double bound = double(k + 4) * std::ldexp(1.0, -24) * magnitude;
                    REQUIRE(std::fabs(y[std::size_t(r * (n + 3) + c)] - exact) <= bound);
                }
                for (std::int64_t c = n; c < n + 3; ++c)
                    REQUIRE(y[std::size_t(r * (n + 3) + c)] == -7.0f);
            }
        }
}

TEST_CASE("the layout is oneDNN's BA16a64b2a") {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    const dnnl::engine cpu(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(cpu);
    std::mt19937 rng(9);
    for (std::int64_t k : {1, 13, 32, 33, 100})
        for (std::int64_t n : {1, 64, 70, 130}) {
            CAPTURE(k);
            CAPTURE(n);
            const Bf16Tile t(k, n, rng);
            const dnnl::memory::desc plain_md({k, n}, dt::bf16, tag::ab);
            const dnnl::memory::desc packed_md({k, n}, dt::bf16, tag::BA16a64b2a);
            REQUIRE(packed_md.get_size() == t.packed.size() * sizeof(std::uint16_t));
            std::vector<std::uint16_t> theirs(t.packed.size(), 0x7777);
            dnnl::memory from(plain_md, cpu, const_cast<std::uint16_t*>(t.plain.data()));
            dnnl::memory to(packed_md, cpu, theirs.data());
            dnnl::reorder(from, to).execute(stream, from, to);
            stream.wait();
            CHECK(theirs == t.packed);
        }
}

TEST_CASE("this CPU's bf16 kernel matches the scalar one bit for bit") {
    const Bf16Gemv gemv = bf16_gemv();
    if (!gemv) {
        MESSAGE("no bf16 kernel on this CPU (AVX-512): the scalar one alone");
        return;
    }
    std::mt19937 rng(7);
    const std::int64_t ks[] = {1, 2, 7, 13, 31, 32, 33, 64, 127, 128, 129, 341, 1000, 4100};
    const std::int64_t ns[] = {1, 7, 16, 17, 63, 64, 65, 130, 256, 320, 341, 449, 1000};
    for (bool special : {false, true})
        for (std::int64_t k : ks)
            for (std::int64_t n : ns) {
                const Bf16Tile t(k, n, rng, special);
                for (std::int64_t rows : {1, 2, 3}) {
                    if (k * n * rows > 1'500'000) continue;  // keeps the suite quick
                    CAPTURE(special);
                    CAPTURE(k);
                    CAPTURE(n);
                    CAPTURE(rows);
                    const std::int64_t ldx = k + 5;
                    const auto x = random_bf16(std::size_t(rows * ldx), rng, special);
                    const auto ours = run(gemv, t, x, ldx, rows);
                    const auto ref = run(bf16_gemv_scalar(), t, x, ldx, rows);
                    for (std::size_t i = 0; i < ours.size(); ++i)
                        REQUIRE(same_bits_or_both_nan(ours[i], ref[i]));
                }
            }
}

TEST_CASE("one call over tiles packed back to back gives the bits of calls tile by tile") {
    // Tiles of whole column blocks but the last: as the engine joins them.
    std::mt19937 rng(13);
    for (std::int64_t k : {7, 100, 1000}) {
        CAPTURE(k);
        const std::int64_t n = 600, widths[] = {128, 64, 192, 216};
        const Bf16Tile t(k, n, rng);
        const auto x = random_bf16(std::size_t(k), rng);
        const auto joined = run(bf16_gemv_scalar(), t, x, k, 1);
        for (const Bf16Gemv gemv : {bf16_gemv_scalar(), bf16_gemv()}) {
            if (!gemv) continue;
            std::vector<float> y(std::size_t(n), -7.0f);
            std::int64_t c0 = 0;
            for (std::int64_t w : widths) {
                gemv(t.packed.data() + c0 * bf16_padded_k(k), k, w, x.data(), k, 1, y.data() + c0,
                     n);
                c0 += w;
            }
            REQUIRE(c0 == n);
            for (std::int64_t c = 0; c < n; ++c)
                REQUIRE(same_bits_or_both_nan(y[std::size_t(c)], joined[std::size_t(c)]));
        }
    }
}

TEST_CASE("bf16 blocks take the kernel for one token, and oneDNN's bits for more") {
    if (!swiglu::test::bf16_brgemm_supported() || !bf16_gemv()) return;
    // 13 x 7: k and n no multiple of 32 / 64 (oneDNN pads them); 384 x
    // 1024 (cyber); 1100 x 700: several gate|up tiles, padded down tiles.
    const std::pair<std::int64_t, std::int64_t> shapes[] = {{13, 7}, {384, 1024}, {1100, 700}};
    for (auto [d, f] : shapes) {
        CAPTURE(d);
        CAPTURE(f);
        const swiglu::test::RandomBlock b(d, f, swiglu::Layout::out_in, 3);
        auto make = [&](std::int64_t rows) {
            swiglu::Options options{2, swiglu::Dtype::bf16};
            options.build.bf16_own_rows = rows;
            return std::make_unique<swiglu::Ffn>(b.gate_view(), b.up_view(), b.down_view(),
                                                 options);
        };
        const auto ours = make(-1), theirs = make(0);
        const std::string matmul = ours->implementation().matmul;
        CAPTURE(matmul);
        CHECK(matmul.find("1 row: bf16 gemv") != std::string::npos);
        CHECK(theirs->implementation().matmul.find("bf16 gemv") == std::string::npos);
        // One token: close to oneDNN's (test_dtype holds both to the bf16
        // simulation and fp64); more: the same bits.
        for (std::int64_t tokens : {1, 2, 5, 70}) {
            CAPTURE(tokens);
            const auto x = swiglu::test::random_input(tokens, d, 11);
            std::vector<float> y1(std::size_t(tokens * d)), y2(y1.size());
            ours->forward(x.data(), y1.data(), tokens);
            theirs->forward(x.data(), y2.data(), tokens);
            if (tokens > 1) {
                CHECK(std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)) == 0);
                continue;
            }
            const double apart =
                swiglu::test::relative_error(y1, std::vector<double>(y2.begin(), y2.end()));
            MESSAGE("1 token, our kernel against oneDNN's: ", apart);
            CHECK(apart <= kOneTokenApart);
        }
    }
}

}  // TEST_SUITE
