// Threads change who computes a tile, never how: results are bit-identical
// for any thread count, and concurrent calls on one Ffn do not interfere.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <initializer_list>
#include <string>
#include <thread>

#include <thread>
#include <vector>

#include <swiglu/swiglu.hpp>

#include "reference.hpp"

using namespace swiglu;
using swiglu::test::RandomBlock;

TEST_SUITE("threads") {

TEST_CASE("bit-identical output for 1..N threads") {
    const int max_threads = std::max(4, static_cast<int>(std::thread::hardware_concurrency()));
    struct Shape { std::int64_t d, f; };
    for (Shape s : {Shape{128, 341}, Shape{384, 1024}, Shape{13, 2000}, Shape{1000, 7}}) {
        RandomBlock b(s.d, s.f, Layout::out_in, 17);
        Ffn serial(b.gate_view(), b.up_view(), b.down_view(), Options{1});
        for (std::int64_t tokens : {1, 3, 17, 64, 129, 300}) {
            const auto x = test::random_input(tokens, s.d, 5);
            std::vector<float> expected(x.size());
            serial.forward(x.data(), expected.data(), tokens);
            for (int threads = 2; threads <= max_threads; ++threads) {
                CAPTURE(s.d);
                CAPTURE(s.f);
                CAPTURE(tokens);
                CAPTURE(threads);
                Ffn ffn(b.gate_view(), b.up_view(), b.down_view(), Options{threads});
                std::vector<float> y(x.size());
                ffn.forward(x.data(), y.data(), tokens);
                CHECK(y == expected);
            }
        }
    }
}

TEST_CASE("default thread count is every available core") {
    RandomBlock b(7, 13, Layout::out_in, 1);
    Ffn ffn(b.gate_view(), b.up_view(), b.down_view());
    CHECK(ffn.threads() >= 1);
    CHECK(ffn.implementation().threads == ffn.threads());
}

TEST_CASE("concurrent forward calls on one Ffn") {
    RandomBlock b(384, 1024, Layout::out_in, 23);
    Ffn ffn(b.gate_view(), b.up_view(), b.down_view(), Options{2});
    const std::int64_t token_counts[] = {1, 7, 64, 130};
    std::vector<std::vector<float>> inputs, expected;
    for (std::int64_t t : token_counts) {
        inputs.push_back(test::random_input(t, 384, static_cast<unsigned>(t)));
        expected.emplace_back(inputs.back().size());
        ffn.forward(inputs.back().data(), expected.back().data(), t);
    }
    // More callers than workspace slots, so the overflow path runs too.
    constexpr int kCallers = 12;
    std::vector<int> mismatches(kCallers, 0);
    std::vector<std::thread> callers;
    for (int c = 0; c < kCallers; ++c) {
        callers.emplace_back([&, c] {
            for (int i = 0; i < 6; ++i) {
                const std::size_t k = static_cast<std::size_t>(c + i) % std::size(token_counts);
                std::vector<float> y(inputs[k].size());
                ffn.forward(inputs[k].data(), y.data(), token_counts[k]);
                if (y != expected[k]) ++mismatches[static_cast<std::size_t>(c)];
            }
        });
    }
    for (auto& t : callers) t.join();
    for (int c = 0; c < kCallers; ++c) CHECK(mismatches[static_cast<std::size_t>(c)] == 0);
}

}  // TEST_SUITE
