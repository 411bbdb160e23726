// The backward pass: the fused SiLU*up backward kernels of every ISA against
// the scalar reference and double precision; Ffn::backward's four gradients
// against the fp64 reference (odd shapes, both layouts, saved or recomputed
// activations, token counts across the 256-row chunk); central finite
// differences; accumulate against write; dx in place; bit-identical results
// for any thread count; dx in slices of its inputs; the seed's known values;
// saturated and non-finite gates; and bad arguments, which write nothing.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <swiglu/swiglu.hpp>

#include "error_checks.hpp"
#include "kernels/kernel_table.hpp"
#include "kernels/silu_mul_backward.hpp"
#include "reference.hpp"
#include "reference_backward.hpp"

using namespace swiglu;
using swiglu::test::RandomBlock;

namespace {

struct Result {
    std::vector<float> dx, gate, up, down;
};

// backward() on fresh buffers (NaN-filled: every element must be written).
Result run_backward(const Ffn& ffn, const std::vector<float>& x, const std::vector<float>& dy,
                    std::int64_t tokens, const float* saved = nullptr) {
    const auto df = static_cast<std::size_t>(ffn.d() * ffn.f());
    const float nan = std::numeric_limits<float>::quiet_NaN();
    Result r{std::vector<float>(x.size(), nan), std::vector<float>(df, nan),
             std::vector<float>(df, nan), std::vector<float>(df, nan)};
    ffn.backward(x.data(), dy.data(), r.dx.data(), tokens,
                 Gradients{r.gate.data(), r.up.data(), r.down.data()}, saved);
    return r;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

bool same_bits(const Result& a, const Result& b) {
    return same_bits(a.dx, b.dx) && same_bits(a.gate, b.gate) && same_bits(a.up, b.up) &&
           same_bits(a.down, b.down);
}

double silu_grad_ref(double z) {
    const double s = 1.0 / (1.0 + std::exp(-z));
    return s * (1.0 + z * (1.0 - s));
}

}  // namespace

TEST_SUITE("backward") {

TEST_CASE("the fused SiLU*up backward of every ISA against double precision") {
    using swiglu::detail::Isa;
    std::vector<float> gate, up, dact;
    for (int i = -2000; i <= 2000; ++i) {  // gates over [-100, 100], and the edges
        gate.push_back(float(i) * 0.05f);
        up.push_back(0.5f + float(i % 7) * 0.3f);
        dact.push_back(1.0f - float(i % 5) * 0.4f);
    }
    for (float z : {1000.0f, -1000.0f, 87.0f, -87.0f, 88.0f, -88.0f, 0.0f, -0.0f}) {
        gate.push_back(z);
        up.push_back(1.5f);
        dact.push_back(-2.0f);
    }
    const std::size_t n = gate.size();
    for (const auto& entry : swiglu::detail::kernel_dispatch().runnable()) {
        const Isa isa = entry.isa;
        const auto fn = entry.table.silu_mul_backward;
        CAPTURE(swiglu::detail::isa_name(isa));
        // Every length up to 2 vectors and more, so tails run too.
        for (std::size_t len :
             {std::size_t{1}, std::size_t{7}, std::size_t{13}, std::size_t{33}, n}) {
            std::vector<float> dg(len), du(len), act(len);
            fn(gate.data(), up.data(), dact.data(), dg.data(), du.data(), act.data(), len);
            for (std::size_t i = 0; i < len; ++i) {
                const double z = gate[i], u = up[i], a = dact[i];
                const double s = 1.0 / (1.0 + std::exp(-z));
                const double want[3] = {a * u * silu_grad_ref(z), a * z * s, z * s * u};
                // dgate's scale: the terms of 1 + z (1 - s), which cancel
                // near z = -1.2785 (where SiLU' = 0).
                const double scale[3] = {std::abs(a * u * s) * (1 + std::abs(z * (1 - s))),
                                         std::abs(want[1]), std::abs(want[2])};
                const float got[3] = {dg[i], du[i], act[i]};
                for (int k = 0; k < 3; ++k) {
                    CAPTURE(z);
                    CAPTURE(k);
                    // 6 ulp of the scale (silu_mul_backward.hpp); below
                    // gate = -87.3, where s is taken as 0, absolute: the
                    // true values are under 1.1e-36 (1 + |dact|) (1 + |up|).
                    CHECK(std::abs(double(got[k]) - want[k]) <=
                          4e-7 * scale[k] + 1.1e-36 * (1 + std::abs(a)) * (1 + std::abs(u)));
                }
            }
        }
    }
}

TEST_CASE("the seed's verified values, and its block's gradients") {
    // gate = [-1, 0, 1], up = [2, 3, 4] (d = 1, f = 3, x = 1), down = ones, dy = 1.
    const float gate_w[] = {-1, 0, 1}, up_w[] = {2, 3, 4}, down_w[] = {1, 1, 1};
    const Ffn ffn(WeightView::out_in(gate_w, 3, 1), WeightView::out_in(up_w, 3, 1),
                  WeightView::out_in(down_w, 1, 3), Options{1});
    const float x[] = {1}, dy[] = {1};
    float dx[1], dg[3], du[3], dd[3];
    ffn.backward(x, dy, dx, 1, Gradients{dg, du, dd});
    const double dgate[] = {0.144659, 1.5, 3.710682}, dup[] = {-0.268941, 0, 0.731059};
    const double act[] = {-0.537883, 0, 2.924234};
    for (int j = 0; j < 3; ++j) {
        CHECK(dg[j] == doctest::Approx(dgate[j]).epsilon(1e-6));  // x = 1: dW = dgate
        CHECK(du[j] == doctest::Approx(dup[j]).epsilon(1e-6));
        CHECK(dd[j] == doctest::Approx(act[j]).epsilon(1e-6));  // dy = 1: dWd = act
    }
    // dx = sum_j dgate_j Wg_j + dup_j Wu_j.
    CHECK(dx[0] ==
          doctest::Approx(-0.144659 + 3.710682 - 2 * 0.268941 + 4 * 0.731059).epsilon(1e-6));
}

TEST_CASE("all four gradients against the fp64 reference: odd shapes, both layouts") {
    struct Shape {
        std::int64_t d, f;
    };
    for (const Shape s : {Shape{1, 1}, Shape{7, 13}, Shape{13, 7}, Shape{33, 61}, Shape{128, 341}})
        for (const Layout layout : {Layout::out_in, Layout::in_out})
            for (const std::int64_t tokens : {1, 7, 64, 300}) {
                if (s.d * s.f > 10000 && tokens > 64) continue;  // the fp64 reference is slow
                CAPTURE(s.d);
                CAPTURE(s.f);
                CAPTURE(tokens);
                CAPTURE(layout == Layout::out_in);
                RandomBlock b(s.d, s.f, layout, static_cast<unsigned>(s.d * 7 + s.f));
                const Ffn ffn(b.gate_view(), b.up_view(), b.down_view(), Options{2});
                const auto x = test::random_input(tokens, s.d, 11);
                const auto dy = test::random_input(tokens, s.d, 12);
                const auto ref = test::reference_backward(
                    x.data(), dy.data(), tokens, b.gate_view(), b.up_view(), b.down_view());
                const double tol = test::backward_tolerance(s.d, s.f, tokens);
                const Result got = run_backward(ffn, x, dy, tokens);
                CHECK(test::relative_error(got.dx, ref.dx) <= tol);
                CHECK(test::relative_error(got.gate, ref.gate) <= tol);
                CHECK(test::relative_error(got.up, ref.up) <= tol);
                CHECK(test::relative_error(got.down, ref.down) <= tol);
                // Saved activations give the same bits as recomputed ones.
                std::vector<float> y(x.size()),
                    saved(static_cast<std::size_t>(ffn.saved_floats(tokens)));
                ffn.forward_for_backward(x.data(), y.data(), saved.data(), tokens);
                std::vector<float> plain(x.size());
                ffn.forward(x.data(), plain.data(), tokens);
                CHECK(same_bits(y, plain));
                CHECK(same_bits(run_backward(ffn, x, dy, tokens, saved.data()), got));
            }
}

TEST_CASE("central finite differences of L = sum(y * r)") {
    const std::int64_t d = 5, f = 7, tokens = 3;
    RandomBlock b(d, f, Layout::out_in, 41);
    const auto x = test::random_input(tokens, d, 42);
    const auto r = test::random_input(tokens, d, 43);  // dy = dL/dy = r
    auto loss = [&](const RandomBlock& blk, const std::vector<float>& in) {
        const auto y =
            test::reference_ffn(in.data(), tokens, blk.gate_view(), blk.up_view(), blk.down_view());
        double l = 0;
        for (std::size_t i = 0; i < y.size(); ++i) l += y[i] * r[i];
        return l;
    };
    const Ffn ffn(b.gate_view(), b.up_view(), b.down_view(), Options{1});
    const Result got = run_backward(ffn, x, r, tokens);
    // The loss in fp64 of f32 inputs: a step of 1e-3 leaves a truncation
    // error of O(h^2) ~ 1e-6 and a rounding error far below; the gradient is
    // f32 (~1e-6 relative): 1e-4 absolute on O(1) values.
    const float h = 1e-3f;
    for (std::size_t i = 0; i < x.size(); ++i) {
        auto plus = x, minus = x;
        plus[i] += h;
        minus[i] -= h;
        const double fd = (loss(b, plus) - loss(b, minus)) / (double(plus[i]) - double(minus[i]));
        CHECK(got.dx[i] == doctest::Approx(fd).epsilon(1e-4).scale(1.0));
    }
    for (int which = 0; which < 3; ++which)
        for (std::size_t i = 0; i < b.gate.size(); ++i) {
            RandomBlock p = b, m = b;
            std::vector<float>& wp = which == 0 ? p.gate : which == 1 ? p.up : p.down;
            std::vector<float>& wm = which == 0 ? m.gate : which == 1 ? m.up : m.down;
            wp[i] += h;
            wm[i] -= h;
            const double fd = (loss(p, x) - loss(m, x)) / (double(wp[i]) - double(wm[i]));
            const std::vector<float>& g = which == 0 ? got.gate : which == 1 ? got.up : got.down;
            CAPTURE(which);
            CHECK(g[i] == doctest::Approx(fd).epsilon(1e-4).scale(1.0));
        }
}

TEST_CASE("accumulate adds into the buffers; write overwrites them") {
    // Three chunks: a gradient span of two (dW written), then one (added).
    const std::int64_t d = 33, f = 61, tokens = 600;
    RandomBlock b(d, f, Layout::in_out, 51);
    const Ffn ffn(b.gate_view(), b.up_view(), b.down_view(), Options{2});
    const auto x = test::random_input(tokens, d, 52);
    const auto dy = test::random_input(tokens, d, 53);
    const Result fresh = run_backward(ffn, x, dy, tokens);
    const auto start = test::uniform(static_cast<std::size_t>(d * f), 3.0f, 54);
    Result acc{std::vector<float>(x.size()), start, start, start};
    ffn.backward(x.data(), dy.data(), acc.dx.data(), tokens,
                 Gradients{acc.gate.data(), acc.up.data(), acc.down.data(), true});
    CHECK(same_bits(acc.dx, fresh.dx));
    // start + the fp64 gradient, within the gradients' own tolerance.
    auto ref = test::reference_backward(x.data(), dy.data(), tokens, b.gate_view(), b.up_view(),
                                        b.down_view());
    for (std::vector<double>* g : {&ref.gate, &ref.up, &ref.down})
        for (std::size_t i = 0; i < start.size(); ++i) (*g)[i] += start[i];
    const double tol = test::backward_tolerance(d, f, tokens);
    CHECK(test::relative_error(acc.gate, ref.gate) <= tol);
    CHECK(test::relative_error(acc.up, ref.up) <= tol);
    CHECK(test::relative_error(acc.down, ref.down) <= tol);
    Result again{std::vector<float>(x.size()), start, start, start};
    ffn.backward(x.data(), dy.data(), again.dx.data(), tokens,
                 Gradients{again.gate.data(), again.up.data(), again.down.data(), false});
    CHECK(same_bits(again, fresh));
    // Only the gradients asked for are touched; zero tokens write zeros.
    std::vector<float> only_down(start), untouched(start), dx(x.size());
    ffn.backward(x.data(), dy.data(), dx.data(), tokens,
                 Gradients{nullptr, nullptr, only_down.data()});
    CHECK(same_bits(only_down, fresh.down));
    ffn.backward(nullptr, nullptr, nullptr, 0, Gradients{untouched.data(), nullptr, nullptr, true});
    CHECK(same_bits(untouched, start));
    ffn.backward(nullptr, nullptr, nullptr, 0, Gradients{untouched.data()});
    CHECK(untouched == std::vector<float>(start.size(), 0.0f));
}

TEST_CASE("dx may be x or dy itself") {
    const std::int64_t d = 13, f = 29;
    RandomBlock b(d, f, Layout::out_in, 61);
    const Ffn ffn(b.gate_view(), b.up_view(), b.down_view(), Options{2});
    // 300: a chunk's dx overwrites its x and dy before its span's gradients run.
    for (const std::int64_t tokens : {37, 300}) {
        CAPTURE(tokens);
        const auto x = test::random_input(tokens, d, 62);
        const auto dy = test::random_input(tokens, d, 63);
        const Result want = run_backward(ffn, x, dy, tokens);
        Result in_x{x, want.gate, want.up, want.down};
        ffn.backward(in_x.dx.data(), dy.data(), in_x.dx.data(), tokens,
                     Gradients{in_x.gate.data(), in_x.up.data(), in_x.down.data()});
        CHECK(same_bits(in_x, want));
        Result in_dy{dy, want.gate, want.up, want.down};
        ffn.backward(x.data(), in_dy.dx.data(), in_dy.dx.data(), tokens,
                     Gradients{in_dy.gate.data(), in_dy.up.data(), in_dy.down.data()});
        CHECK(same_bits(in_dy, want));
    }
}

TEST_CASE("bit-identical for any thread count") {
    const std::int64_t d = 96, f = 256;
    RandomBlock b(d, f, Layout::out_in, 71);
    for (const std::int64_t tokens : {1, 5, 64, 257, 600}) {
        const auto x = test::random_input(tokens, d, 72);
        const auto dy = test::random_input(tokens, d, 73);
        const Result one =
            run_backward(Ffn(b.gate_view(), b.up_view(), b.down_view(), Options{1}), x, dy, tokens);
        for (int threads : {2, 3, 4}) {
            CAPTURE(tokens);
            CAPTURE(threads);
            CHECK(same_bits(
                run_backward(Ffn(b.gate_view(), b.up_view(), b.down_view(), Options{threads}), x,
                             dy, tokens),
                one));
        }
    }
}

// dx's inputs in slices (core/backward.hpp, dx_input_slices): 256 rows of
// [dgate | dup] 2 x 2100 wide are over 4 MiB, so the first chunk runs dx in
// two slices (4096 inputs and 104), the second (44 rows) in one.
TEST_CASE(
    "dx in slices of its inputs: against the fp64 reference, the same bits for any thread "
    "count") {
    const std::int64_t d = 24, f = 2100, tokens = 300;
    for (const Layout layout : {Layout::out_in, Layout::in_out}) {
        CAPTURE(layout == Layout::out_in);
        RandomBlock b(d, f, layout, 81);
        const auto x = test::random_input(tokens, d, 82);
        const auto dy = test::random_input(tokens, d, 83);
        const auto ref = test::reference_backward(x.data(), dy.data(), tokens, b.gate_view(),
                                                  b.up_view(), b.down_view());
        const double tol = test::backward_tolerance(d, f, tokens);
        const Result one =
            run_backward(Ffn(b.gate_view(), b.up_view(), b.down_view(), Options{1}), x, dy, tokens);
        CHECK(test::relative_error(one.dx, ref.dx) <= tol);
        CHECK(test::relative_error(one.gate, ref.gate) <= tol);
        CHECK(test::relative_error(one.up, ref.up) <= tol);
        CHECK(test::relative_error(one.down, ref.down) <= tol);
        for (int threads : {2, 3}) {
            CAPTURE(threads);
            CHECK(same_bits(
                run_backward(Ffn(b.gate_view(), b.up_view(), b.down_view(), Options{threads}), x,
                             dy, tokens),
                one));
        }
    }
}

TEST_CASE("saturated and non-finite gates follow the formulas") {
    // d = 1, f = 4: gate weights put the gate at +-1000, +inf and NaN for x = 1.
    const float inf = std::numeric_limits<float>::infinity();
    const float gate_w[] = {1000, -1000, inf, std::numeric_limits<float>::quiet_NaN()};
    const float up_w[] = {2, 2, 2, 2}, down_w[] = {1, 1, 1, 1};
    const Ffn ffn(WeightView::out_in(gate_w, 4, 1), WeightView::out_in(up_w, 4, 1),
                  WeightView::out_in(down_w, 1, 4), Options{1});
    const float x[] = {1}, dy[] = {1};
    float dx[1], dg[4], du[4], dd[4];
    ffn.backward(x, dy, dx, 1, Gradients{dg, du, dd});
    CHECK(dg[0] == 2.0f);     // s = 1: dgate = dact * up
    CHECK(du[0] == 1000.0f);  // SiLU(1000) = 1000
    CHECK(dg[1] == 0.0f);     // s = 0
    CHECK(du[1] == 0.0f);
    CHECK(std::isnan(dg[2]));  // inf * (1 - s) = inf * 0
    CHECK(std::isinf(du[2]));
    CHECK(std::isnan(dg[3]));
    CHECK(std::isnan(du[3]));
    CHECK(std::isnan(dx[0]));
}

TEST_CASE("bad arguments: a clear error, and nothing written") {
    const std::int64_t d = 8, f = 12, tokens = 3;
    RandomBlock b(d, f, Layout::out_in, 81);
    const Ffn ffn(b.gate_view(), b.up_view(), b.down_view(), Options{1});
    const auto x = test::random_input(tokens, d, 82);
    const auto dy = test::random_input(tokens, d, 83);
    // Every buffer a call names lies inside an allocation, whole: a buffer
    // that ran past its vector could overlap whatever the heap put next to
    // it (x, say), and the error would name that pair instead.
    std::vector<float> dx(x.size(), 7.0f), g(static_cast<std::size_t>(d * f), 7.0f);
    std::vector<float> g2(g.size() + 1, 7.0f);  // grads.gate, and grads.up one further on
    const auto untouched = [&] {
        CHECK(dx == std::vector<float>(x.size(), 7.0f));
        CHECK(g == std::vector<float>(g.size(), 7.0f));
        CHECK(g2 == std::vector<float>(g2.size(), 7.0f));
    };
    const Status bad = Status::invalid_argument;
    test::expect_error([&] { ffn.backward(nullptr, dy.data(), dx.data(), tokens, {g.data()}); },
                       bad, "x is null");
    test::expect_error([&] { ffn.backward(x.data(), nullptr, dx.data(), tokens, {g.data()}); }, bad,
                       "dy is null");
    test::expect_error([&] { ffn.backward(x.data(), dy.data(), nullptr, tokens, {g.data()}); }, bad,
                       "dx is null");
    test::expect_error([&] { ffn.backward(x.data(), dy.data(), dx.data(), -1, {g.data()}); }, bad,
                       "tokens must be >= 0");
    test::expect_error(
        [&] {
            ffn.backward(x.data(), dy.data(), dx.data(), tokens, {g2.data(), g2.data() + 1});
        },
        bad, "grads.gate and grads.up overlap");
    std::vector<float> xs(x.size() + 1, 7.0f);  // x, and dx one element further on
    test::expect_error(
        [&] { ffn.backward(xs.data(), dy.data(), xs.data() + 1, tokens, {g.data()}); }, bad,
        "x and dx overlap (only dx may be x or dy itself)");
    test::expect_error([&] { ffn.backward(x.data(), dy.data(), g.data(), tokens, {g.data()}); },
                       bad, "dx and grads.gate overlap");
    test::expect_error(
        [&] { ffn.backward(x.data(), dy.data(), dx.data(), std::int64_t{1} << 62, {g.data()}); },
        bad, "overflows");
    test::expect_error([&] { ffn.saved_floats(std::numeric_limits<std::int64_t>::max()); }, bad,
                       "overflows");
    untouched();
    // Other dtypes: the backward needs f32 weights.
    const Ffn bf16(b.gate_view(), b.up_view(), b.down_view(), Options{1, Dtype::bf16});
    test::expect_error([&] { bf16.backward(x.data(), dy.data(), dx.data(), tokens, {g.data()}); },
                       Status::unsupported, "needs an Ffn of dtype f32 (this one is bf16)");
    test::expect_error([&] { bf16.enable_backward(); }, Status::unsupported, "dtype f32");
    untouched();
    // forward_for_backward checks its buffers the same way.
    std::vector<float> y(x.size()), saved(static_cast<std::size_t>(ffn.saved_floats(tokens)));
    test::expect_error([&] { ffn.forward_for_backward(x.data(), y.data(), nullptr, tokens); }, bad,
                       "saved is null");
    test::expect_error(
        [&] { ffn.forward_for_backward(x.data(), saved.data(), saved.data(), tokens); }, bad,
        "y and saved overlap");
}

}  // TEST_SUITE
