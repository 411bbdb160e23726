// Ffn's C++ entry points (construction, forward, forward_traced, moves, the
// size helpers) and their validation: bad input gets a clear swiglu::Error
// naming the argument, at every boundary value of every size and count and
// for products that overflow only once scaled to bytes, and a refused call
// leaves everything as it was (y, a trace, the Ffn itself). The C API's
// validation is in test_c_api.cpp; the CLI's in test_cli.cpp and
// test/hostile/run.sh.
#include <doctest/doctest.h>

#include <climits>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <swiglu/swiglu.hpp>

#include "error_checks.hpp"
#include "reference.hpp"

using namespace swiglu;
using swiglu::test::RandomBlock;

using swiglu::test::expect_error;

namespace {

std::vector<float> run(const Ffn& ffn, const std::vector<float>& x, std::int64_t tokens) {
    std::vector<float> y(x.size());
    ffn.forward(x.data(), y.data(), tokens);
    return y;
}

}  // namespace

TEST_SUITE("ffn_api") {

TEST_CASE("construction rejects bad weights and options") {
    RandomBlock b(7, 13, Layout::out_in, 1);
    const WeightView g = b.gate_view(), u = b.up_view(), dn = b.down_view();
    const auto bad = Status::invalid_argument;

    WeightView null_gate = g;
    null_gate.data = nullptr;
    expect_error([&] { (void)Ffn(null_gate, u, dn); }, bad, "gate: data is null");

    WeightView empty_up = u;
    empty_up.rows = 0;
    expect_error([&] { (void)Ffn(g, empty_up, dn); }, bad, "up: rows and cols must be >= 1");

    WeightView negative = dn;
    negative.cols = -5;
    expect_error([&] { (void)Ffn(g, u, negative); }, bad, "down: rows and cols must be >= 1");

    WeightView odd_layout = g;
    odd_layout.layout = static_cast<Layout>(7);
    expect_error([&] { (void)Ffn(odd_layout, u, dn); }, bad, "layout");

    // up (13, 8): in = 8, but gate's in d = 7.
    expect_error([&] { (void)Ffn(g, WeightView::out_in(b.up.data(), 13, 7 + 1), dn); }, bad,
                 "up is (13, 8)");
    // down as if it were f -> f.
    expect_error([&] { (void)Ffn(g, u, WeightView::out_in(b.down.data(), 13, 13)); }, bad,
                 "down is (13, 13)");
    // Transposed layout flag on down alone.
    expect_error([&] { (void)Ffn(g, u, WeightView::in_out(b.down.data(), 7, 13)); }, bad,
                 "must map f -> d");

    const float one = 1.0f;
    const std::int64_t huge = std::int64_t{1} << 40;
    expect_error(
        [&] {
            (void)Ffn(WeightView::out_in(&one, huge, huge), WeightView::out_in(&one, huge, huge),
                      WeightView::out_in(&one, huge, huge));
        },
        bad, "overflows");

    expect_error([&] { (void)Ffn(g, u, dn, Options{-1}); }, bad, "options.threads");
    expect_error([&] { (void)Ffn(g, u, dn, Options{1 << 20}); }, bad, "options.threads");
}

TEST_CASE("construction: boundary sizes and counts, each message naming the argument") {
    RandomBlock b(7, 13, Layout::out_in, 41);
    const WeightView g = b.gate_view(), u = b.up_view(), dn = b.down_view();
    const auto bad = Status::invalid_argument;

    // Every weight, every dimension, zero and negative.
    const char* names[3] = {"gate", "up", "down"};
    for (int which = 0; which < 3; ++which) {
        for (std::int64_t value :
             {std::int64_t{0}, std::int64_t{-1}, std::numeric_limits<std::int64_t>::min()}) {
            for (int dim = 0; dim < 2; ++dim) {
                WeightView views[3] = {g, u, dn};
                (dim == 0 ? views[which].rows : views[which].cols) = value;
                CAPTURE(which);
                CAPTURE(value);
                expect_error([&] { (void)Ffn(views[0], views[1], views[2]); }, bad,
                             {std::string("Ffn: ") + names[which], "must be >= 1"});
            }
        }
        WeightView views[3] = {g, u, dn};
        views[which].data = nullptr;
        expect_error([&] { (void)Ffn(views[0], views[1], views[2]); }, bad,
                     {std::string(names[which]) + ": data is null"});
    }

    // d * f fits in 64 bits but the bytes of three weights (12 d f) do not.
    const float one = 1.0f;
    const std::int64_t big = std::int64_t{1} << 31;
    expect_error(
        [&] {
            (void)Ffn(WeightView::out_in(&one, big, big), WeightView::out_in(&one, big, big),
                      WeightView::out_in(&one, big, big));
        },
        bad, {"d = 2147483648", "f = 2147483648", "overflows"});
    // A shape mismatch names what was expected.
    expect_error([&] { (void)Ffn(g, WeightView::out_in(b.up.data(), 12, 7), dn); }, bad,
                 {"up is (12, 7)", "in d = 7, out f = 13"});
    expect_error([&] { (void)Ffn(g, u, WeightView::out_in(b.down.data(), 7, 12)); }, bad,
                 {"down is (7, 12)", "(in 13, out 7)"});

    // Thread counts: 0 and 1..4096 are valid; the rest names the range.
    for (int threads : {-1, 4097, INT_MAX, INT_MIN})
        expect_error([&] { (void)Ffn(g, u, dn, Options{threads}); }, bad,
                     {"options.threads", "[1, 4096]", "got " + std::to_string(threads)});
    expect_error(
        [&] {
            (void)Ffn(g, u, dn, Options{1, static_cast<Dtype>(99)});
        },
        bad, {"options.dtype", "got 99"});
    CHECK(Ffn(g, u, dn, Options{0}).threads() >= 1);
    CHECK(Ffn(g, u, dn, Options{1}).threads() == 1);
}

TEST_CASE("forward rejects bad calls and leaves y untouched") {
    RandomBlock b(7, 13, Layout::out_in, 2);
    Ffn ffn(b.gate_view(), b.up_view(), b.down_view());
    const auto bad = Status::invalid_argument;
    std::vector<float> x(7 * 4, 0.5f), y(7 * 4, 42.0f);
    const auto y_before = y;

    expect_error([&] { ffn.forward(x.data(), y.data(), -1); }, bad, "tokens must be >= 0");
    expect_error([&] { ffn.forward(nullptr, y.data(), 1); }, bad, "x is null");
    expect_error([&] { ffn.forward(x.data(), nullptr, 1); }, bad, "y is null");
    expect_error([&] { ffn.forward(x.data(), y.data(), std::numeric_limits<std::int64_t>::max()); },
                 bad, "overflows");
    expect_error([&] { ffn.forward(x.data(), x.data() + 1, 2); }, bad, "overlap");
    expect_error([&] { ffn.forward(x.data(), y.data(), -1, 2); }, bad, "batch and seq");
    expect_error(
        [&] { ffn.forward(x.data(), y.data(), std::int64_t{1} << 40, std::int64_t{1} << 40); }, bad,
        "overflows");
    CHECK(y == y_before);

    // Zero tokens is a valid no-op, even with null pointers.
    ffn.forward(nullptr, nullptr, 0);
    ffn.forward(x.data(), y.data(), 0, 5);
    CHECK(y == y_before);
}

TEST_CASE("a refused forward leaves y, the trace and the Ffn as they were") {
    RandomBlock b(7, 13, Layout::in_out, 42);
    const Ffn ffn(b.gate_view(), b.up_view(), b.down_view(), Options{2});
    const auto x = test::random_input(3, 7, 1);
    const std::vector<float> before = run(ffn, x, 3);
    const auto bad = Status::invalid_argument;

    std::vector<float> y(x.size(), 42.0f);
    // tokens * d fits in 64 bits, tokens * d * 4 bytes does not.
    const std::int64_t tokens = std::numeric_limits<std::int64_t>::max() / 4 / 7 + 1;
    expect_error([&] { ffn.forward(x.data(), y.data(), tokens); }, bad,
                 {"tokens * d", "overflows"});
    // batch * seq fits, times d does not.
    expect_error(
        [&] { ffn.forward(x.data(), y.data(), std::int64_t{1} << 31, std::int64_t{1} << 30); }, bad,
        {"overflows"});
    expect_error([&] { ffn.forward(x.data(), y.data(), std::numeric_limits<std::int64_t>::min()); },
                 bad, {"tokens must be >= 0"});
    expect_error([&] { ffn.forward(x.data(), y.data(), 3, -1); }, bad, {"batch and seq"});
    // Overlap in either direction; only y == x is allowed.
    std::vector<float> both(2 * x.size(), 1.0f);
    expect_error([&] { ffn.forward(both.data() + 1, both.data(), 3); }, bad, {"overlap"});
    expect_error([&] { ffn.forward(both.data(), both.data() + 20, 3); }, bad, {"overlap"});
    CHECK(y == std::vector<float>(x.size(), 42.0f));
    CHECK(both == std::vector<float>(2 * x.size(), 1.0f));

    Trace trace;
    trace.gate = {1.0f};
    trace.down = {2.0f};
    expect_error([&] { ffn.forward_traced(x.data(), y.data(), -3, trace); }, bad, {"tokens"});
    expect_error([&] { ffn.forward_traced(nullptr, y.data(), 3, trace); }, bad, {"x is null"});
    expect_error([&] { ffn.forward_traced(x.data(), y.data(), tokens, trace); }, bad,
                 {"overflows"});
    CHECK(trace.gate == std::vector<float>{1.0f});
    CHECK(trace.down == std::vector<float>{2.0f});
    CHECK(y == std::vector<float>(x.size(), 42.0f));

    // The block itself is unchanged by all of the above.
    CHECK(run(ffn, x, 3) == before);
}

TEST_CASE(
    "moving an Ffn: the moved-to one computes the same, every member of the moved-from one reports "
    "misuse") {
    RandomBlock b(7, 13, Layout::in_out, 2);
    Ffn a(b.gate_view(), b.up_view(), b.down_view());
    const auto x = test::random_input(2, 7, 4);
    const auto expected = run(a, x, 2);
    const Ffn c = std::move(a);
    CHECK(run(c, x, 2) == expected);
    CHECK(c.d() == 7);

    const auto bad = Status::invalid_argument;
    float x1[7] = {}, y1[7] = {};
    Trace trace;
    expect_error([&] { (void)a.d(); }, bad, {"moved from"});
    expect_error([&] { (void)a.f(); }, bad, {"moved from"});
    expect_error([&] { (void)a.threads(); }, bad, {"moved from"});
    expect_error([&] { (void)a.implementation(); }, bad, {"moved from"});
    expect_error([&] { a.forward(x1, y1, 1); }, bad, "moved from");
    expect_error([&] { a.forward(x1, y1, 1, 1); }, bad, {"moved from"});
    expect_error([&] { a.forward_traced(x1, y1, 1, trace); }, bad, {"moved from"});
    // Moving a live Ffn over the moved-from one revives it.
    a = Ffn(b.gate_view(), b.up_view(), b.down_view(), Options{1});
    CHECK(a.f() == 13);
}

TEST_CASE("a BuildPolicy shapes its own block only, not those built after it") {
    RandomBlock b(64, 96, Layout::out_in, 3);
    Options off{1};
    off.build.panels = false;
    Options f32_prefill{1, Dtype::q4_0};
    f32_prefill.build.grouped_prefill = GroupedPrefill::f32;
    const Ffn a(b.gate_view(), b.up_view(), b.down_view(), off);
    const Ffn p(b.gate_view(), b.up_view(), b.down_view(), f32_prefill);
    const Ffn d(b.gate_view(), b.up_view(), b.down_view(), Options{1});
    const Ffn q(b.gate_view(), b.up_view(), b.down_view(), Options{1, Dtype::q4_0});
    CHECK(a.implementation().matmul.find("panels") == std::string::npos);
    CHECK(p.implementation().matmul.find("unpacked to f32") != std::string::npos);
    CHECK(q.implementation().matmul.find("unpacked to f32") == std::string::npos);
    MESSAGE("f32 by default here: ", d.implementation().matmul);

    // A policy out of its range is refused, naming the field.
    const auto bad = Status::invalid_argument;
    for (std::int64_t rows : {std::int64_t{-2}, std::int64_t{65}}) {
        Options o{1, Dtype::int8};
        o.build.int8_own_rows = rows;
        expect_error([&] { Ffn(b.gate_view(), b.up_view(), b.down_view(), o); }, bad,
                     "options.build.int8_own_rows");
    }
    for (std::int64_t rows : {std::int64_t{-2}, std::int64_t{2}}) {
        Options o{1, Dtype::bf16};
        o.build.bf16_own_rows = rows;
        expect_error([&] { Ffn(b.gate_view(), b.up_view(), b.down_view(), o); }, bad,
                     "options.build.bf16_own_rows");
    }
    Options o{1, Dtype::q4_0};
    o.build.grouped_prefill = static_cast<GroupedPrefill>(7);
    expect_error([&] { Ffn(b.gate_view(), b.up_view(), b.down_view(), o); }, bad,
                 "options.build.grouped_prefill");
}

TEST_CASE("helpers reject bad sizes") {
    expect_error([] { llama_hidden(0); }, Status::invalid_argument, "llama_hidden");
    expect_error([] { parameter_count(-1, 3); }, Status::invalid_argument, "parameter_count");
    expect_error([] { parameter_count(std::int64_t{1} << 40, std::int64_t{1} << 40); },
                 Status::invalid_argument, "parameter_count");
}

}  // TEST_SUITE
