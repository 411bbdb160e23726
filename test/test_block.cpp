// The block against the double-precision reference.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <initializer_list>
#include <string>
#include <thread>

#include <cmath>
#include <cstring>
#include <vector>

#include <swiglu/swiglu.hpp>

#include "panels_off.hpp"
#include "reference.hpp"

using namespace swiglu;
using swiglu::test::RandomBlock;

namespace {

// f32 error relative to max|y|: see test::f32_tolerance.
double tolerance(std::int64_t d, std::int64_t f) { return test::f32_tolerance(d, f); }

std::vector<float> run(const Ffn& ffn, const std::vector<float>& x, std::int64_t tokens) {
    std::vector<float> y(x.size(), NAN);
    ffn.forward(x.data(), y.data(), tokens);
    return y;
}

}  // namespace

TEST_SUITE("block") {

TEST_CASE("known values: gate=[-1,0,1], up=[2,3,4]") {
    // d = 3, f = 3, x = e0: gate = row 0 of Wg, up = row 0 of Wu (in_out).
    const float wg[9] = {-1, 0, 1, 0, 0, 0, 0, 0, 0};
    const float wu[9] = {2, 3, 4, 0, 0, 0, 0, 0, 0};
    const float identity[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    const float ones_col[9] = {1, 0, 0, 1, 0, 0, 1, 0, 0};  // y0 = sum(act)
    const float x[3] = {1, 0, 0};
    float y[3];

    Ffn act_out(WeightView::in_out(wg, 3, 3), WeightView::in_out(wu, 3, 3),
                WeightView::in_out(identity, 3, 3));
    act_out.forward(x, y, 1);
    CHECK(y[0] == doctest::Approx(-0.537883).epsilon(1e-6));
    CHECK(y[1] == 0.0f);
    CHECK(y[2] == doctest::Approx(2.924234).epsilon(1e-6));

    Ffn summed(WeightView::in_out(wg, 3, 3), WeightView::in_out(wu, 3, 3),
               WeightView::in_out(ones_col, 3, 3));
    summed.forward(x, y, 1);
    CHECK(y[0] == doctest::Approx(2.386351).epsilon(1e-6));
}

TEST_CASE("parameter counts and the LLaMA hidden width") {
    CHECK(llama_hidden(128) == 341);
    CHECK(llama_hidden(384) == 1024);
    CHECK(parameter_count(128, llama_hidden(128)) == 130944);
    CHECK(parameter_count(384, 1024) == 1179648);
    CHECK(parameter_count(4096, 11008) == 135266304);
    RandomBlock b(128, 341, Layout::out_in, 1);
    Ffn ffn(b.gate_view(), b.up_view(), b.down_view());
    CHECK(parameter_count(ffn.d(), ffn.f()) == 130944);
}

TEST_CASE("forward matches the fp64 reference over shapes, token counts and layouts") {
    const std::int64_t dims[] = {1, 2, 3, 7, 13, 128, 341, 384, 1024};
    const std::int64_t token_counts[] = {0, 1, 2, 3, 5, 17, 64, 129};
    int combos = 0;
    double worst_ratio = 0;
    for (std::size_t i = 0; i < std::size(dims); ++i) {
        for (std::size_t j = 0; j < std::size(dims); ++j) {
            const std::int64_t d = dims[i], f = dims[j];
            const std::size_t k = i * std::size(dims) + j;
            std::int64_t tokens = token_counts[k % std::size(token_counts)];
            // Keep the fp64 reference quick on the largest shapes.
            if (d * f >= 384 * 1024 && tokens > 17) tokens = 17;
            const Layout layout = k % 2 ? Layout::in_out : Layout::out_in;
            CAPTURE(d);
            CAPTURE(f);
            CAPTURE(tokens);
            RandomBlock b(d, f, layout, static_cast<unsigned>(k));
            Ffn ffn(b.gate_view(), b.up_view(), b.down_view(), Options{2});
            const auto x = test::random_input(tokens, d, static_cast<unsigned>(k + 100));
            const auto y = run(ffn, x, tokens);
            const auto ref =
                test::reference_ffn(x.data(), tokens, b.gate_view(), b.up_view(), b.down_view());
            const double err = test::relative_error(y, ref);
            CHECK(err <= tolerance(d, f));
            worst_ratio = std::max(worst_ratio, err / tolerance(d, f));
            ++combos;
        }
    }
    CHECK(combos >= 50);
    MESSAGE("worst error / tolerance over ", combos, " shapes: ", worst_ratio);
}

TEST_CASE("a block whose weights stream from DRAM matches the fp64 reference") {
    // Over 8 MiB of f32 weights (13.5 MB here): packed in 32-column blocks
    // and run in tiles of at least 4 rows (1 to 3 tokens padded), unlike the
    // cache-sized blocks above.
    const std::int64_t d = 1024, f = 1100;
    for (Layout layout : {Layout::out_in, Layout::in_out}) {
        RandomBlock b(d, f, layout, 21);
        Ffn ffn(b.gate_view(), b.up_view(), b.down_view(), Options{2});
        for (std::int64_t tokens : {1, 3, 6, 17}) {
            CAPTURE(tokens);
            const auto x = test::random_input(tokens, d, static_cast<unsigned>(tokens));
            const auto ref =
                test::reference_ffn(x.data(), tokens, b.gate_view(), b.up_view(), b.down_view());
            CHECK(test::relative_error(run(ffn, x, tokens), ref) <= tolerance(d, f));
        }
    }
}

TEST_CASE("tasks of several row tiles (many column tiles that fit L2) match the fp64 reference") {
    // 32 and 16 column tiles of 1 MiB: a task runs both of the 72 tokens'
    // row tiles (64 + 8) on its column tile (tiling.hpp, row_tiles_per_task).
    const std::int64_t d = 1024, f = 4096, tokens = 72;
    RandomBlock b(d, f, Layout::out_in, 45);
    const auto x = test::random_input(tokens, d, 45);
    const auto ref =
        test::reference_ffn(x.data(), tokens, b.gate_view(), b.up_view(), b.down_view());
    const Ffn one(b.gate_view(), b.up_view(), b.down_view(), Options{1});
    const Ffn two(b.gate_view(), b.up_view(), b.down_view(), Options{2});
    const auto y = run(two, x, tokens);
    CHECK(test::relative_error(y, ref) <= tolerance(d, f));
    CHECK(std::memcmp(y.data(), run(one, x, tokens).data(), y.size() * sizeof(float)) == 0);
}

TEST_CASE("with the panels mode off (oneDNN's f32 kernels) forward matches the fp64 reference") {
    const std::int64_t shapes[][2] = {{1, 1}, {7, 13}, {128, 341}, {1024, 1100}};
    for (const auto& [d, f] : shapes) {
        RandomBlock b(d, f, Layout::out_in, static_cast<unsigned>(d + f));
        Ffn ffn(b.gate_view(), b.up_view(), b.down_view(), test::panels_off(Options{2}));
        CHECK(ffn.implementation().matmul.find("panels") == std::string::npos);
        for (std::int64_t tokens : {1, 3, 17, 70}) {
            CAPTURE(d);
            CAPTURE(f);
            CAPTURE(tokens);
            const auto x = test::random_input(tokens, d, static_cast<unsigned>(tokens));
            const auto ref =
                test::reference_ffn(x.data(), tokens, b.gate_view(), b.up_view(), b.down_view());
            CHECK(test::relative_error(run(ffn, x, tokens), ref) <= tolerance(d, f));
        }
    }
}

TEST_CASE("both layouts give the same block") {
    RandomBlock b(13, 341, Layout::out_in, 7);
    // The same matrices stored transposed.
    auto transpose = [](const std::vector<float>& w, std::int64_t rows, std::int64_t cols) {
        std::vector<float> t(w.size());
        for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t c = 0; c < cols; ++c) t[c * rows + r] = w[r * cols + c];
        return t;
    };
    const auto g = transpose(b.gate, 341, 13), u = transpose(b.up, 341, 13),
               dn = transpose(b.down, 13, 341);
    Ffn a(b.gate_view(), b.up_view(), b.down_view());
    Ffn c(WeightView::in_out(g.data(), 13, 341), WeightView::in_out(u.data(), 13, 341),
          WeightView::in_out(dn.data(), 341, 13));
    const auto x = test::random_input(5, 13, 3);
    CHECK(run(a, x, 5) == run(c, x, 5));
}

TEST_CASE("many chunks, every row-tile height, and the (B, T, d) form") {
    const std::int64_t d = 7, f = 13;
    RandomBlock b(d, f, Layout::out_in, 11);
    Ffn ffn(b.gate_view(), b.up_view(), b.down_view(), Options{2});
    for (std::int64_t tokens : {4, 15, 31, 33, 63, 65, 100, 255, 256, 257, 600, 1000}) {
        CAPTURE(tokens);
        const auto x = test::random_input(tokens, d, static_cast<unsigned>(tokens));
        const auto ref =
            test::reference_ffn(x.data(), tokens, b.gate_view(), b.up_view(), b.down_view());
        CHECK(test::relative_error(run(ffn, x, tokens), ref) <= tolerance(d, f));
    }
    const auto x = test::random_input(6, d, 5);
    std::vector<float> y_bt(x.size());
    ffn.forward(x.data(), y_bt.data(), 2, 3);
    CHECK(y_bt == run(ffn, x, 6));
}

TEST_CASE("in place: y may be x") {
    RandomBlock b(128, 341, Layout::out_in, 5);
    Ffn ffn(b.gate_view(), b.up_view(), b.down_view(), Options{2});
    for (std::int64_t tokens : {1, 5, 300}) {
        auto x = test::random_input(tokens, 128, 9);
        const auto expected = run(ffn, x, tokens);
        ffn.forward(x.data(), x.data(), tokens);
        CHECK(x == expected);
    }
}

TEST_CASE("the caller's weight buffers are not kept") {
    RandomBlock b(13, 7, Layout::out_in, 21);
    Ffn ffn(b.gate_view(), b.up_view(), b.down_view());
    const auto x = test::random_input(3, 13, 1);
    const auto before = run(ffn, x, 3);
    std::fill(b.gate.begin(), b.gate.end(), NAN);
    std::fill(b.down.begin(), b.down.end(), NAN);
    CHECK(run(ffn, x, 3) == before);
}

TEST_CASE("the matmuls run on an optimised oneDNN kernel, never the reference one") {
    RandomBlock b(384, 1024, Layout::out_in, 3);
    Ffn ffn(b.gate_view(), b.up_view(), b.down_view());
    const Implementation impl = ffn.implementation();
    MESSAGE("matmul: ", impl.matmul, ", activation: ", impl.activation,
            ", threads: ", impl.threads);
    CHECK(!impl.matmul.empty());
    CHECK(!impl.activation.empty());
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") || __builtin_cpu_supports("avx512f"))
        CHECK(impl.matmul.find("ref") == std::string::npos);
    if (__builtin_cpu_supports("avx512f")) CHECK(impl.matmul.find("avx512") != std::string::npos);
}

}  // TEST_SUITE

TEST_SUITE("block") {

TEST_CASE("forward_traced reports gate, up, act and down, and y is unchanged") {
    const std::int64_t d = 13, f = 341;
    RandomBlock b(d, f, Layout::in_out, 31);
    Ffn ffn(b.gate_view(), b.up_view(), b.down_view(), Options{2});
    for (std::int64_t tokens : {1, 5, 70, 300}) {
        CAPTURE(tokens);
        const auto x = test::random_input(tokens, d, 8);
        std::vector<float> y(x.size()), y_plain(x.size());
        Trace trace;
        ffn.forward_traced(x.data(), y.data(), tokens, trace);
        ffn.forward(x.data(), y_plain.data(), tokens);
        CHECK(y == y_plain);
        CHECK(trace.down == y);
        REQUIRE(trace.gate.size() == static_cast<std::size_t>(tokens * f));
        double worst = 0;
        for (std::int64_t t = 0; t < tokens; ++t)
            for (std::int64_t j = 0; j < f; ++j) {
                double g = 0, u = 0;
                for (std::int64_t i = 0; i < d; ++i) {
                    g += double(x[t * d + i]) * test::weight(b.gate_view(), i, j);
                    u += double(x[t * d + i]) * test::weight(b.up_view(), i, j);
                }
                const std::size_t k = static_cast<std::size_t>(t * f + j);
                worst = std::max({worst, std::abs(trace.gate[k] - g), std::abs(trace.up[k] - u),
                                  std::abs(trace.act[k] - test::silu(g) * u)});
            }
        // |gate|, |up| <= ~sqrt(d) here; f32 dot products of length 13.
        CHECK(worst <= 1e-5);
    }
    Trace empty;
    ffn.forward_traced(nullptr, nullptr, 0, empty);
    CHECK(empty.gate.empty());
}

}  // TEST_SUITE
