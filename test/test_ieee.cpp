// NaN and infinities in x or in the weights propagate as the formula says,
//   y = (SiLU(x Wg) * (x Wu)) Wd,  SiLU(+inf) = +inf, SiLU(-inf) = NaN,
// under IEEE 754 arithmetic: never a crash, a hang, or a NaN leaking into
// another token's row.
//
// What an element becomes (NaN, +inf, -inf or finite) does not depend on the
// order of a sum: it is NaN iff a term is NaN or terms of both infinite signs
// meet, else infinite iff a term is. So every element's class must equal the
// class the fp64 reference computes, finite elements must match it closely,
// and the rows without specials must be bit-identical to a clean run.
#include <doctest/doctest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <swiglu/swiglu.hpp>

#include "reference.hpp"

using namespace swiglu;
using swiglu::test::RandomBlock;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

enum class Class { finite, pos_inf, neg_inf, nan };
using C = Class;

template <class T>
Class class_of(T v) {
    if (std::isnan(v)) return C::nan;
    if (std::isinf(v)) return v > 0 ? C::pos_inf : C::neg_inf;
    return C::finite;
}

const char* class_name(Class c) {
    switch (c) {
        case C::finite: return "finite";
        case C::pos_inf: return "+inf";
        case C::neg_inf: return "-inf";
        default: return "NaN";
    }
}

// Runs `tokens` rows of x through `ffn` and compares every element with the
// fp64 reference: same class, and finite ones within a relative 1e-4.
// Returns y.
std::vector<float> check_classes(const Ffn& ffn, const RandomBlock& b, const std::vector<float>& x,
                                 std::int64_t tokens) {
    std::vector<float> y(x.size(), 12345.0f);
    ffn.forward(x.data(), y.data(), tokens);
    const std::vector<double> ref =
        test::reference_ffn(x.data(), tokens, b.gate_view(), b.up_view(), b.down_view());
    double scale = 1e-30;
    for (double r : ref)
        if (std::isfinite(r)) scale = std::max(scale, std::abs(r));
    int class_mismatches = 0, value_mismatches = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
        if (class_of(y[i]) != class_of(ref[i])) {
            if (class_mismatches++ < 5)
                MESSAGE("element ", i, " (row ", i / static_cast<std::size_t>(b.d), "): got ", y[i],
                        " (", class_name(class_of(y[i])), "), reference ", ref[i], " (",
                        class_name(class_of(ref[i])), ")");
        } else if (class_of(y[i]) == C::finite && std::abs(y[i] - ref[i]) > 1e-4 * scale) {
            if (value_mismatches++ < 5)
                MESSAGE("element ", i, ": got ", y[i], ", reference ", ref[i]);
        }
    }
    CHECK(class_mismatches == 0);
    CHECK(value_mismatches == 0);
    return y;
}

std::vector<float> run(const Ffn& ffn, const std::vector<float>& x, std::int64_t tokens) {
    std::vector<float> y(x.size());
    ffn.forward(x.data(), y.data(), tokens);
    return y;
}

// Rows of y other than `skip` are bit-identical in a and b.
bool other_rows_identical(const std::vector<float>& a, const std::vector<float>& b, std::int64_t d,
                          std::int64_t skip) {
    for (std::size_t i = 0; i < a.size(); ++i)
        if (static_cast<std::int64_t>(i) / d != skip &&
            std::memcmp(&a[i], &b[i], sizeof(float)) != 0)
            return false;
    return true;
}

struct Shape {
    std::int64_t d, f;
};
// Tiny (runs on the calling thread), several column tiles, and one over
// 8 MiB of weights (row tiles padded to at least 4 rows).
constexpr Shape kShapes[] = {{13, 29}, {128, 341}, {512, 1408}};

}  // namespace

TEST_SUITE("ieee") {

TEST_CASE("the documented formula at the edges: d = f = 1") {
    // y = SiLU(x g) * (x u) * w, with SiLU(+inf) = +inf, SiLU(-inf) = NaN.
    struct Case {
        float g, u, w, x;
        Class expected;
    };
    // One case a line, the comments aligned:
    // clang-format off
    const Case cases[] = {
        {1, 1, 1, kInf, C::pos_inf},       // inf * inf
        {1, -1, 1, kInf, C::neg_inf},      // inf * -inf
        {1, 1, -2, kInf, C::neg_inf},
        {1, 1, 1, -kInf, C::nan},          // SiLU(-inf) = -inf * 0
        {-1, 1, 1, kInf, C::nan},          // the same through the weight's sign
        {1, 1, 1, kNan, C::nan},
        {kNan, 1, 1, 1, C::nan},
        {1, kNan, 1, 1, C::nan},
        {1, 1, kNan, 1, C::nan},
        {kInf, 1, 1, 1, C::pos_inf},       // gate = inf, up = 1
        {kInf, 1, 1, 0, C::nan},           // inf * 0 in the gate
        {1, kInf, 1, 0, C::nan},           // 0 * inf in up
        {1, 1, kInf, 0, C::nan},           // act = 0, times inf
        {1, 1, kInf, 2, C::pos_inf},
        {1, 0, kInf, 2, C::nan},           // act = SiLU(2) * 0 = 0, times inf
        {-kInf, 1, 1, 1, C::nan},          // gate = -inf
        {FLT_MAX, 1, 1, 4, C::pos_inf},    // finite operands overflow to inf: gate
        {1, 1, 1, 1e30f, C::pos_inf},      // SiLU(1e30) * 1e30 overflows
        {1, 1, 1, -1e30f, C::finite},      // SiLU(-1e30) * -1e30 = 0 * ... (exp(-|z|) underflows)
        {1, 1, 1, FLT_MIN / 4, C::finite}, // subnormal x
    };
    // clang-format on
    for (const Case& c : cases) {
        CAPTURE(c.g);
        CAPTURE(c.u);
        CAPTURE(c.w);
        CAPTURE(c.x);
        for (int threads : {1, 2}) {
            const Ffn ffn(WeightView::out_in(&c.g, 1, 1), WeightView::out_in(&c.u, 1, 1),
                          WeightView::out_in(&c.w, 1, 1), Options{threads});
            float y = 7.0f;
            ffn.forward(&c.x, &y, 1);
            CHECK(class_of(y) == c.expected);
        }
    }
}

TEST_CASE("a NaN or infinity in x reaches its own row only") {
    for (const Shape s : kShapes) {
        RandomBlock b(s.d, s.f, Layout::out_in, 71);
        const Ffn ffn(b.gate_view(), b.up_view(), b.down_view(), Options{2});
        const std::int64_t counts[] = {1, 5, 70};
        for (std::int64_t tokens : counts) {
            if (s.d >= 512 && tokens > 5) continue;  // the fp64 reference is slow
            const std::vector<float> clean = test::random_input(tokens, s.d, 3);
            const std::vector<float> y_clean = run(ffn, clean, tokens);
            const std::int64_t row = tokens / 2;
            for (float special : {kNan, kInf, -kInf}) {
                CAPTURE(s.d);
                CAPTURE(tokens);
                CAPTURE(special);
                std::vector<float> x = clean;
                x[static_cast<std::size_t>(row * s.d + s.d / 3)] = special;
                const std::vector<float> y = check_classes(ffn, b, x, tokens);
                CHECK(other_rows_identical(y, y_clean, s.d, row));
                // A whole row of the special value, and the same in place.
                for (std::int64_t i = 0; i < s.d; ++i)
                    x[static_cast<std::size_t>(row * s.d + i)] = special;
                const std::vector<float> y_row = check_classes(ffn, b, x, tokens);
                CHECK(other_rows_identical(y_row, y_clean, s.d, row));
                ffn.forward(x.data(), x.data(), tokens);
                CHECK(std::memcmp(x.data(), y_row.data(), x.size() * sizeof(float)) == 0);
            }
        }
    }
}

TEST_CASE("a NaN or infinity in a weight propagates as the formula says") {
    for (const Shape s : kShapes) {
        for (Layout layout : {Layout::out_in, Layout::in_out}) {
            const RandomBlock clean(s.d, s.f, layout, 72);
            const std::int64_t tokens = s.d >= 512 ? 2 : 9;
            const std::vector<float> x = test::random_input(tokens, s.d, 4);
            // One special in each weight in turn, at an index away from the edges.
            for (int which = 0; which < 3; ++which) {
                for (float special : {kNan, kInf, -kInf}) {
                    CAPTURE(s.d);
                    CAPTURE(which);
                    CAPTURE(special);
                    RandomBlock b = clean;
                    std::vector<float>& w = which == 0 ? b.gate : which == 1 ? b.up : b.down;
                    w[w.size() / 2 + 1] = special;
                    const Ffn ffn(b.gate_view(), b.up_view(), b.down_view(), Options{2});
                    const std::vector<float> y = check_classes(ffn, b, x, tokens);
                    // A NaN weight hits every row the same way (an infinite
                    // one depends on the signs of x).
                    if (std::isnan(special))
                        for (std::int64_t t = 1; t < tokens; ++t)
                            for (std::int64_t i = 0; i < s.d; ++i)
                                CHECK(class_of(y[static_cast<std::size_t>(t * s.d + i)]) ==
                                      class_of(y[static_cast<std::size_t>(i)]));
                }
            }
        }
    }
}

TEST_CASE("all-special inputs or weights finish, and NaN or infinities give NaN") {
    // A row of +inf (or weights all +inf) meets weights (or x) of both signs:
    // every sum is inf - inf. +-FLT_MAX overflows somewhere in a way that
    // depends on the summation order (the ISA), so it only has to finish.
    const std::int64_t d = 128, f = 341, tokens = 70;
    for (float special : {kNan, kInf, -kInf, FLT_MAX, -FLT_MAX}) {
        CAPTURE(special);
        const bool exact = !std::isfinite(special);
        RandomBlock b(d, f, Layout::out_in, 73);
        const std::vector<float> x(static_cast<std::size_t>(tokens * d), special);
        {
            const Ffn ffn(b.gate_view(), b.up_view(), b.down_view(), Options{2});
            const std::vector<float> y = run(ffn, x, tokens);
            if (exact)
                CHECK(std::all_of(y.begin(), y.end(), [](float v) { return std::isnan(v); }));
        }
        std::fill(b.gate.begin(), b.gate.end(), special);
        std::fill(b.up.begin(), b.up.end(), special);
        std::fill(b.down.begin(), b.down.end(), special);
        const Ffn ffn(b.gate_view(), b.up_view(), b.down_view(), Options{2});
        const std::vector<float> y = run(ffn, test::random_input(tokens, d, 5), tokens);
        if (exact) CHECK(std::all_of(y.begin(), y.end(), [](float v) { return std::isnan(v); }));
        // And both at once.
        (void)run(ffn, x, tokens);
    }
}

}  // TEST_SUITE
