// Bad input gets a clear swiglu::Error and changes nothing.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <initializer_list>
#include <string>
#include <thread>

#include <cstdint>
#include <limits>
#include <vector>

#include <swiglu/swiglu.hpp>

#include "error_checks.hpp"
#include "reference.hpp"

using namespace swiglu;
using swiglu::test::RandomBlock;

using swiglu::test::expect_error;

TEST_SUITE("errors") {

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
    expect_error([&] {
        (void)Ffn(WeightView::out_in(&one, huge, huge), WeightView::out_in(&one, huge, huge),
            WeightView::out_in(&one, huge, huge));
    }, bad, "overflows");

    expect_error([&] { (void)Ffn(g, u, dn, Options{-1}); }, bad, "options.threads");
    expect_error([&] { (void)Ffn(g, u, dn, Options{1 << 20}); }, bad, "options.threads");
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
    expect_error([&] {
        ffn.forward(x.data(), y.data(), std::int64_t{1} << 40, std::int64_t{1} << 40);
    }, bad, "overflows");
    CHECK(y == y_before);

    // Zero tokens is a valid no-op, even with null pointers.
    ffn.forward(nullptr, nullptr, 0);
    ffn.forward(x.data(), y.data(), 0, 5);
    CHECK(y == y_before);
}

TEST_CASE("a moved-from Ffn reports misuse instead of crashing") {
    RandomBlock b(7, 13, Layout::out_in, 3);
    Ffn a(b.gate_view(), b.up_view(), b.down_view());
    Ffn c = std::move(a);
    float x[7] = {}, y[7];
    expect_error([&] { a.forward(x, y, 1); }, Status::invalid_argument, "moved from");
    c.forward(x, y, 1);
}

TEST_CASE("helpers reject bad sizes") {
    expect_error([] { llama_hidden(0); }, Status::invalid_argument, "llama_hidden");
    expect_error([] { parameter_count(-1, 3); }, Status::invalid_argument, "parameter_count");
    expect_error([] { parameter_count(std::int64_t{1} << 40, std::int64_t{1} << 40); },
                 Status::invalid_argument, "parameter_count");
}

}  // TEST_SUITE
