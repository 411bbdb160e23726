// Threads change who computes a tile, never how: results are bit-identical
// for any thread count. (Concurrent calls on one Ffn: test_concurrency.cpp.)
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
    struct Shape {
        std::int64_t d, f;
    };
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

}  // TEST_SUITE
