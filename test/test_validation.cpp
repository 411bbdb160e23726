// Validation the older suites do not reach: boundary values of every size and
// count, products that overflow only once scaled to bytes, and that a refused
// call leaves everything as it was (y, a trace, the Ffn itself), through the
// C++ and the C entry points. (test_errors.cpp and test_c_api.cpp hold the
// basic cases; the CLI's are in test/hostile/run.sh and test_cli.cpp.) And
// .npy input that arrives as a stream (a pipe, a device).
#include <doctest/doctest.h>

#include <climits>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <csignal>
#include <thread>
#include <tuple>
#include <utility>

#include <pthread.h>
#include <unistd.h>

#include <swiglu/swiglu.h>
#include <swiglu/swiglu.hpp>

#include "error_checks.hpp"
#include "cli/npy.hpp"
#include "reference.hpp"
#include "safetensors_writer.hpp"

using namespace swiglu;
using swiglu::test::RandomBlock;
using swiglu::test::c_weight;
using swiglu::test::error_mentions;
using swiglu::test::expect_error;

namespace {

swiglu_options c_options(int threads, swiglu_dtype dtype = SWIGLU_DTYPE_F32) {
    return {threads, dtype};
}


std::vector<float> run(const Ffn& ffn, const std::vector<float>& x, std::int64_t tokens) {
    std::vector<float> y(x.size());
    ffn.forward(x.data(), y.data(), tokens);
    return y;
}

}  // namespace

TEST_SUITE("errors") {

TEST_CASE("construction: boundary sizes and counts, each message naming the argument") {
    RandomBlock b(7, 13, Layout::out_in, 41);
    const WeightView g = b.gate_view(), u = b.up_view(), dn = b.down_view();
    const auto bad = Status::invalid_argument;

    // Every weight, every dimension, zero and negative.
    const char* names[3] = {"gate", "up", "down"};
    for (int which = 0; which < 3; ++which) {
        for (std::int64_t value : {std::int64_t{0}, std::int64_t{-1}, std::numeric_limits<std::int64_t>::min()}) {
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
    expect_error([&] {
        (void)Ffn(WeightView::out_in(&one, big, big), WeightView::out_in(&one, big, big),
                  WeightView::out_in(&one, big, big));
    }, bad, {"d = 2147483648", "f = 2147483648", "overflows"});
    // A shape mismatch names what was expected.
    expect_error([&] { (void)Ffn(g, WeightView::out_in(b.up.data(), 12, 7), dn); }, bad,
                 {"up is (12, 7)", "in d = 7, out f = 13"});
    expect_error([&] { (void)Ffn(g, u, WeightView::out_in(b.down.data(), 7, 12)); }, bad,
                 {"down is (7, 12)", "(in 13, out 7)"});

    // Thread counts: 0 and 1..4096 are valid; the rest names the range.
    for (int threads : {-1, 4097, INT_MAX, INT_MIN})
        expect_error([&] { (void)Ffn(g, u, dn, Options{threads}); }, bad,
                     {"options.threads", "[1, 4096]", "got " + std::to_string(threads)});
    expect_error([&] { (void)Ffn(g, u, dn, Options{1, static_cast<Dtype>(7)}); }, bad,
                 {"options.dtype", "got 7"});
    expect_error([&] { (void)Ffn(g, u, dn, Options{1, static_cast<Dtype>(7)}); }, bad,
                 {"options.dtype", "got 7"});
    CHECK(Ffn(g, u, dn, Options{0}).threads() >= 1);
    CHECK(Ffn(g, u, dn, Options{1}).threads() == 1);
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
    expect_error([&] { ffn.forward(x.data(), y.data(), tokens); }, bad, {"tokens * d", "overflows"});
    // batch * seq fits, times d does not.
    expect_error([&] { ffn.forward(x.data(), y.data(), std::int64_t{1} << 31, std::int64_t{1} << 30); },
                 bad, {"overflows"});
    expect_error([&] { ffn.forward(x.data(), y.data(), std::numeric_limits<std::int64_t>::min()); }, bad,
                 {"tokens must be >= 0"});
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
    expect_error([&] { ffn.forward_traced(x.data(), y.data(), tokens, trace); }, bad, {"overflows"});
    CHECK(trace.gate == std::vector<float>{1.0f});
    CHECK(trace.down == std::vector<float>{2.0f});
    CHECK(y == std::vector<float>(x.size(), 42.0f));

    // The block itself is unchanged by all of the above.
    CHECK(run(ffn, x, 3) == before);
}

TEST_CASE("every member of a moved-from Ffn reports misuse") {
    RandomBlock b(7, 13, Layout::out_in, 43);
    Ffn a(b.gate_view(), b.up_view(), b.down_view(), Options{1});
    const Ffn c = std::move(a);
    const auto bad = Status::invalid_argument;
    float x[7] = {}, y[7] = {};
    Trace trace;
    expect_error([&] { (void)a.d(); }, bad, {"moved from"});
    expect_error([&] { (void)a.f(); }, bad, {"moved from"});
    expect_error([&] { (void)a.threads(); }, bad, {"moved from"});
    expect_error([&] { (void)a.implementation(); }, bad, {"moved from"});
    expect_error([&] { a.forward_traced(x, y, 1, trace); }, bad, {"moved from"});
    expect_error([&] { a.forward(x, y, 1, 1); }, bad, {"moved from"});
    CHECK(c.d() == 7);
    // Moving a live Ffn over the moved-from one revives it.
    a = Ffn(b.gate_view(), b.up_view(), b.down_view(), Options{1});
    CHECK(a.f() == 13);
}

}  // TEST_SUITE

TEST_SUITE("c_api") {

TEST_CASE("C API: sizes, thread counts and overflows at their boundaries") {
    RandomBlock b(7, 13, Layout::out_in, 44);
    const swiglu_weight g = c_weight(b.gate_view()), u = c_weight(b.up_view()),
                        dn = c_weight(b.down_view());
    swiglu_ffn* ffn = reinterpret_cast<swiglu_ffn*>(0x1);

    const char* names[3] = {"gate", "up", "down"};
    for (int which = 0; which < 3; ++which) {
        for (int64_t value : {int64_t{0}, int64_t{-7}}) {
            swiglu_weight w[3] = {g, u, dn};
            w[which].rows = value;
            CHECK(swiglu_ffn_create(&w[0], &w[1], &w[2], nullptr, &ffn) == SWIGLU_INVALID_ARGUMENT);
            CHECK(ffn == nullptr);
            CHECK(error_mentions(names[which]));
            CHECK(error_mentions("must be >= 1"));
        }
        swiglu_weight w[3] = {g, u, dn};
        w[which].layout = static_cast<swiglu_layout>(-1);
        CHECK(swiglu_ffn_create(&w[0], &w[1], &w[2], nullptr, &ffn) == SWIGLU_INVALID_ARGUMENT);
        CHECK(error_mentions("layout must be SWIGLU_LAYOUT_OUT_IN or SWIGLU_LAYOUT_IN_OUT (got -1)"));
    }
    for (int threads : {-1, 4097, 1 << 20, INT_MAX, INT_MIN}) {
        const swiglu_options options = c_options(threads);
        CHECK(swiglu_ffn_create(&g, &u, &dn, &options, &ffn) == SWIGLU_INVALID_ARGUMENT);
        CHECK(error_mentions("threads"));
        CHECK(error_mentions(std::to_string(threads).c_str()));
        CHECK(ffn == nullptr);
    }

    const float one = 1.0f;
    const int64_t big = int64_t{1} << 31;
    const swiglu_weight huge = {&one, big, big, SWIGLU_LAYOUT_OUT_IN};
    CHECK(swiglu_ffn_create(&huge, &huge, &huge, nullptr, &ffn) == SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("overflows"));
    // Fits in 64 bits, but no machine has 192 TiB: out of memory, not a crash,
    // and nothing read from the one float behind the view.
    const int64_t n22 = int64_t{1} << 22;
    const swiglu_weight vast = {&one, n22, n22, SWIGLU_LAYOUT_OUT_IN};
    CHECK(swiglu_ffn_create(&vast, &vast, &vast, nullptr, &ffn) == SWIGLU_OUT_OF_MEMORY);
    CHECK(error_mentions("cannot allocate"));
    CHECK(ffn == nullptr);

    REQUIRE(swiglu_ffn_create(&g, &u, &dn, nullptr, &ffn) == SWIGLU_OK);
    const auto x = test::random_input(3, 7, 2);
    std::vector<float> expected(x.size()), y(x.size(), 9.0f);
    REQUIRE(swiglu_ffn_forward(ffn, x.data(), expected.data(), 3) == SWIGLU_OK);
    const int64_t tokens = std::numeric_limits<int64_t>::max() / 4 / 7 + 1;
    CHECK(swiglu_ffn_forward(ffn, x.data(), y.data(), tokens) == SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("overflows"));
    CHECK(swiglu_ffn_forward(ffn, x.data(), y.data(), std::numeric_limits<int64_t>::min()) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(y == std::vector<float>(x.size(), 9.0f));
    // tokens = 0 is a no-op, null pointers included.
    CHECK(swiglu_ffn_forward(ffn, nullptr, nullptr, 0) == SWIGLU_OK);
    // The handle is unchanged by the refused calls.
    CHECK(swiglu_ffn_forward(ffn, x.data(), y.data(), 3) == SWIGLU_OK);
    CHECK(y == expected);
    int64_t f = 0;
    CHECK(swiglu_ffn_dims(ffn, nullptr, &f) == SWIGLU_OK);
    CHECK(f == 13);
    swiglu_ffn_destroy(ffn);
}

TEST_CASE("C API: a checkpoint with a bad thread count or an unconvertible dtype") {
    RandomBlock b(4, 8, Layout::out_in, 45);
    const std::string dir = test::temp_dir();
    const std::string good = dir + "/good.safetensors", i32 = dir + "/i32.safetensors";
    const std::string p = "model.layers.0.mlp.";
    test::write_file(good, test::safetensors_bytes({{p + "gate_proj.weight", "F32", {8, 4}, b.gate},
                                                    {p + "up_proj.weight", "F32", {8, 4}, b.up},
                                                    {p + "down_proj.weight", "F32", {4, 8}, b.down}}));
    test::write_file(i32, test::safetensors_bytes({{p + "gate_proj.weight", "I32", {8, 4}, b.gate},
                                                   {p + "up_proj.weight", "F32", {8, 4}, b.up},
                                                   {p + "down_proj.weight", "F32", {4, 8}, b.down}}));
    swiglu_ffn* ffn = reinterpret_cast<swiglu_ffn*>(0x1);
    const swiglu_options negative = {-1, SWIGLU_DTYPE_F32}, absurd = {5000, SWIGLU_DTYPE_F32};
    CHECK(swiglu_ffn_create_from_safetensors(good.c_str(), 0, nullptr, &negative, &ffn) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("threads"));
    CHECK(ffn == nullptr);
    CHECK(swiglu_ffn_create_from_safetensors(good.c_str(), 0, nullptr, &absurd, &ffn) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("5000"));
    swiglu_options bad_dtype = c_options(1);
    const int minus_one = -1;
    std::memcpy(&bad_dtype.dtype, &minus_one, sizeof(minus_one));
    CHECK(swiglu_ffn_create_from_safetensors(good.c_str(), 0, nullptr, &bad_dtype, &ffn) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("dtype"));
    CHECK(error_mentions("(got -1)"));
    CHECK(ffn == nullptr);
    CHECK(swiglu_ffn_create_from_safetensors(i32.c_str(), 0, nullptr, nullptr, &ffn) == SWIGLU_UNSUPPORTED);
    CHECK(error_mentions("I32"));
    CHECK(error_mentions("i32.safetensors"));
    CHECK(ffn == nullptr);
    // A layer and a prefix together are refused, naming both.
    CHECK(swiglu_ffn_create_from_safetensors(good.c_str(), 0, "model.layers.0.mlp.", nullptr, &ffn) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("not both"));
    CHECK(ffn == nullptr);
    // The empty prefix means no prefix.
    REQUIRE(swiglu_ffn_create_from_safetensors(good.c_str(), -1, "", nullptr, &ffn) == SWIGLU_OK);
    swiglu_ffn_destroy(ffn);
}

}  // TEST_SUITE

TEST_SUITE("npy") {

TEST_CASE("a streamed input is checked as it arrives and never buffered without bound") {
    // /dev/zero: refused at the first byte.
    expect_error([] { (void)detail::read_npy("/dev/zero"); }, Status::invalid_argument,
                 {"/dev/zero", "not a .npy file"});

    // A pipe: a valid (2, 3) array, then data that never ends. The reader
    // stops one byte past the announced 24 bytes; the writer then fails
    // with EPIPE and stops.
    const std::vector<float> values = {1, 2, 3, 4, 5, 6};
    const std::string good = detail::npy_bytes(values.data(), {2, 3});
    auto through_pipe = [&](const std::string& head, bool endless) {
        int fds[2];
        REQUIRE(::pipe(fds) == 0);
        std::thread writer([&, fd = fds[1]] {
            // EPIPE instead of a signal once the reader is gone: SIGPIPE is
            // sent to the writing thread, where it stays pending, blocked.
            sigset_t pipe_signal;
            sigemptyset(&pipe_signal);
            sigaddset(&pipe_signal, SIGPIPE);
            pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
            std::size_t sent = 0;
            while (sent < head.size()) {
                const ssize_t n = ::write(fd, head.data() + sent, head.size() - sent);
                if (n <= 0) break;
                sent += static_cast<std::size_t>(n);
            }
            const std::string filler(1 << 16, 'y');
            while (endless && sent == head.size() && ::write(fd, filler.data(), filler.size()) > 0) {
            }
            ::close(fd);
        });
        const std::string path = "/dev/fd/" + std::to_string(fds[0]);
        std::string error;
        detail::NpyArray out;
        try {
            out = detail::read_npy(path);
        } catch (const Error& e) {
            error = e.what();
        }
        ::close(fds[0]);
        writer.join();
        return std::make_pair(out, error);
    };
    auto [array, error] = through_pipe(good, false);
    CHECK(error.empty());
    CHECK(array.shape == std::vector<std::int64_t>{2, 3});
    CHECK(array.data == values);
    std::tie(array, error) = through_pipe(good, true);
    CHECK(error.find("data continues past the 24 bytes") != std::string::npos);
    // A header length the limit refuses before any of it is read.
    std::tie(array, error) = through_pipe(std::string("\x93NUMPY\x02\x00\xff\xff\xff\x7f", 12), true);
    CHECK(error.find("exceeds the limit") != std::string::npos);
}

}  // TEST_SUITE
