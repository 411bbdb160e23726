// The pool runs every task exactly once, on valid worker indices.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <initializer_list>
#include <string>
#include <thread>

#include <atomic>
#include <vector>

#include "core/thread_pool.hpp"

using swiglu::detail::ThreadPool;

TEST_SUITE("thread_pool") {

TEST_CASE("every task runs exactly once, for many sizes and repeated runs") {
    for (int threads : {1, 2, 3, 8}) {
        ThreadPool pool(threads);
        CHECK(pool.threads() == threads);
        for (std::int64_t tasks : {0, 1, 2, 3, 7, 64, 1000}) {
            for (int repeat = 0; repeat < 20; ++repeat) {
                std::vector<std::atomic<int>> hits(static_cast<std::size_t>(tasks));
                std::atomic<int> bad_worker{0};
                auto body = [&](std::int64_t t, int w) {
                    hits[static_cast<std::size_t>(t)].fetch_add(1);
                    if (w < 0 || w >= threads) bad_worker.fetch_add(1);
                };
                pool.run(tasks, body);
                for (auto& h : hits) CHECK(h.load() == 1);
                CHECK(bad_worker.load() == 0);
            }
        }
    }
}

TEST_CASE("workers that went to sleep wake up for the next run") {
    ThreadPool pool(3);
    std::atomic<int> sum{0};
    auto body = [&](std::int64_t t, int) { sum.fetch_add(static_cast<int>(t)); };
    for (int i = 0; i < 3; ++i) {
        pool.run(100, body);
        // Longer than the spin phase: the workers are asleep now.
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    CHECK(sum.load() == 3 * 4950);
}

TEST_CASE("all threads take part in a long run") {
    ThreadPool pool(2);
    std::vector<std::atomic<int>> per_worker(2);
    auto body = [&](std::int64_t, int w) {
        per_worker[static_cast<std::size_t>(w)].fetch_add(1);
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    };
    pool.run(64, body);
    CHECK(per_worker[0].load() + per_worker[1].load() == 64);
    CHECK(per_worker[1].load() > 0);
}

}  // TEST_SUITE
