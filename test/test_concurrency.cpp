// Many callers at once. One Ffn shared by 16 threads, each calling forward
// with varying token counts (in place, (B, T, d), traced) for a bounded time:
// every output must be bit-identical to a serial call on a one-thread Ffn.
// The same through the C API, with failing calls mixed in to show that each
// thread's error message is its own. 16 callers is twice the Ffn's workspace
// slots, so calls also take the overflow path (scratch of their own).
// (Bit-identical results for any thread count of one Ffn: test_threads.cpp.)
//
// Time: about 0.8 s per case; SWIGLU_CONCURRENCY_SECONDS=N runs each case N
// seconds (longer soaks). Every thread makes at least 3 calls whatever the
// budget, so a slow sanitizer build still covers every path.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <swiglu/swiglu.h>
#include <swiglu/swiglu.hpp>

#include "reference.hpp"

using namespace swiglu;
using swiglu::test::RandomBlock;

namespace {

constexpr int kThreads = 16;
constexpr int kMinCalls = 3;
// Token counts around the row-tile heights and the 256-row chunk.
constexpr std::int64_t kTokenCounts[] = {1, 2, 3, 5, 7, 16, 63, 64, 65, 130, 256, 257, 300};
constexpr std::size_t kCounts = sizeof(kTokenCounts) / sizeof(kTokenCounts[0]);

double budget_seconds() {
    if (const char* s = std::getenv("SWIGLU_CONCURRENCY_SECONDS")) {
        const double v = std::atof(s);
        if (v > 0) return v;
    }
    return 0.8;
}

// Inputs and the serial outputs for every token count.
struct Expected {
    std::vector<std::vector<float>> x, y;
    Expected(const Ffn& serial, std::int64_t d) {
        for (std::size_t k = 0; k < kCounts; ++k) {
            const std::int64_t t = kTokenCounts[k];
            x.push_back(test::random_input(t, d, static_cast<unsigned>(100 + k)));
            y.emplace_back(x.back().size());
            serial.forward(x.back().data(), y.back().data(), t);
        }
    }
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Runs `call(thread, iteration)` on kThreads threads, released together,
// until the budget is spent (at least kMinCalls each). Returns total calls.
template <class Call>
long hammer(Call&& call) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<long> calls(kThreads, 0);
    std::vector<std::thread> threads;
    const auto budget = std::chrono::duration<double>(budget_seconds());
    for (int c = 0; c < kThreads; ++c) {
        threads.emplace_back([&, c] {
            ready.fetch_add(1);
            while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
            const auto start = std::chrono::steady_clock::now();
            long i = 0;
            while (i < kMinCalls || std::chrono::steady_clock::now() - start < budget) call(c, i++);
            calls[static_cast<std::size_t>(c)] = i;
        });
    }
    while (ready.load() < kThreads) std::this_thread::yield();
    go.store(true, std::memory_order_release);
    for (std::thread& t : threads) t.join();
    long total = 0;
    for (long n : calls) total += n;
    return total;
}

// Threads of this process (Linux: one entry per thread in /proc/self/task).
long process_threads() {
    long n = 0;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
        (void)entry;
        ++n;
    }
    return n;
}

}  // namespace

TEST_SUITE("concurrency") {

TEST_CASE("16 threads on one Ffn: every output bit-identical to a serial call") {
    const std::int64_t d = 384, f = 1024;
    RandomBlock b(d, f, Layout::out_in, 91);
    const Ffn serial(b.gate_view(), b.up_view(), b.down_view(), Options{1});
    const Expected expected(serial, d);
    const Ffn shared(b.gate_view(), b.up_view(), b.down_view(), Options{2});

    std::vector<int> mismatches(kThreads, 0), errors(kThreads, 0);
    const long calls = hammer([&](int c, long i) {
        const std::size_t k = static_cast<std::size_t>(c * 5 + i * 7) % kCounts;
        const std::int64_t t = kTokenCounts[k];
        const std::vector<float>& x = expected.x[k];
        std::vector<float> y(x.size(), -1.0f);
        try {
            switch ((c + i) % 4) {
                case 0: shared.forward(x.data(), y.data(), t); break;
                case 1:  // in place
                    y = x;
                    shared.forward(y.data(), y.data(), t);
                    break;
                case 2:  // (B, T, d): one batch of t
                    shared.forward(x.data(), y.data(), 1, t);
                    break;
                default: {  // traced: y and trace.down both
                    Trace trace;
                    shared.forward_traced(x.data(), y.data(), t, trace);
                    if (!same_bits(trace.down, expected.y[k]))
                        ++mismatches[static_cast<std::size_t>(c)];
                }
            }
        } catch (const Error&) {
            ++errors[static_cast<std::size_t>(c)];
        }
        if (!same_bits(y, expected.y[k])) ++mismatches[static_cast<std::size_t>(c)];
    });
    MESSAGE(calls, " concurrent forward calls from ", kThreads, " threads");
    for (int c = 0; c < kThreads; ++c) {
        CAPTURE(c);
        CHECK(mismatches[static_cast<std::size_t>(c)] == 0);
        CHECK(errors[static_cast<std::size_t>(c)] == 0);
    }
    CHECK(calls >= kThreads * kMinCalls);
}

TEST_CASE("16 threads on one C handle: bit-identical, and error messages stay per thread") {
    const std::int64_t d = 128, f = 341;
    RandomBlock b(d, f, Layout::in_out, 92);
    const Ffn serial(b.gate_view(), b.up_view(), b.down_view(), Options{1});
    const Expected expected(serial, d);
    const swiglu_weight g = {b.gate.data(), d, f, SWIGLU_LAYOUT_IN_OUT},
                        u = {b.up.data(), d, f, SWIGLU_LAYOUT_IN_OUT},
                        dn = {b.down.data(), f, d, SWIGLU_LAYOUT_IN_OUT};
    swiglu_ffn* ffn = nullptr;
    // Before any sharing: a failed call's message is this thread's alone.
    CHECK(swiglu_ffn_create(nullptr, nullptr, nullptr, nullptr, &ffn) == SWIGLU_INVALID_ARGUMENT);
    std::string other;
    std::thread([&] { other = swiglu_last_error(); }).join();
    CHECK(other.empty());
    CHECK(!std::string(swiglu_last_error()).empty());

    swiglu_options two_threads;
    std::memset(&two_threads, 0, sizeof two_threads);  // the fields we do not set: zero
    two_threads.threads = 2;
    REQUIRE(swiglu_ffn_create(&g, &u, &dn, &two_threads, &ffn) == SWIGLU_OK);

    std::vector<int> mismatches(kThreads, 0), bad_status(kThreads, 0), bad_message(kThreads, 0);
    const long calls = hammer([&](int c, long i) {
        const std::size_t slot = static_cast<std::size_t>(c);
        const std::size_t k = static_cast<std::size_t>(c * 3 + i * 5) % kCounts;
        const std::vector<float>& x = expected.x[k];
        std::vector<float> y(x.size(), -1.0f);
        if ((c + i) % 3 == 0) {
            // A failing call: this thread's message names its own mistake.
            if (swiglu_ffn_forward(ffn, x.data(), y.data(), -1 - c) != SWIGLU_INVALID_ARGUMENT)
                ++bad_status[slot];
            if (std::string(swiglu_last_error()).find("(got " + std::to_string(-1 - c) + ")") ==
                std::string::npos)
                ++bad_message[slot];
            return;
        }
        if (swiglu_ffn_forward(ffn, x.data(), y.data(), kTokenCounts[k]) != SWIGLU_OK)
            ++bad_status[slot];
        if (*swiglu_last_error() != '\0') ++bad_message[slot];  // a success clears it
        int64_t got_d = 0, got_f = 0;
        if (swiglu_ffn_dims(ffn, &got_d, &got_f) != SWIGLU_OK || got_d != d || got_f != f)
            ++bad_status[slot];
        if (!same_bits(y, expected.y[k])) ++mismatches[slot];
    });
    swiglu_ffn_destroy(ffn);
    MESSAGE(calls, " concurrent C API calls from ", kThreads, " threads");
    for (int c = 0; c < kThreads; ++c) {
        CAPTURE(c);
        CHECK(mismatches[static_cast<std::size_t>(c)] == 0);
        CHECK(bad_status[static_cast<std::size_t>(c)] == 0);
        CHECK(bad_message[static_cast<std::size_t>(c)] == 0);
    }
}

TEST_CASE("Ffns built and destroyed while others run") {
    // Construction shares oneDNN's engine and primitive cache with running
    // forward calls; neither may disturb the other.
    const std::int64_t d = 128, f = 341;
    RandomBlock b(d, f, Layout::out_in, 93);
    const Ffn serial(b.gate_view(), b.up_view(), b.down_view(), Options{1});
    const Expected expected(serial, d);
    const Ffn shared(b.gate_view(), b.up_view(), b.down_view(), Options{2});
    std::vector<int> mismatches(kThreads, 0);
    hammer([&](int c, long i) {
        const std::size_t k = static_cast<std::size_t>(c + i) % kCounts;
        std::vector<float> y(expected.x[k].size());
        if (c % 4 == 0) {  // a private Ffn, used once
            const Ffn own(b.gate_view(), b.up_view(), b.down_view(), Options{1 + c % 3});
            own.forward(expected.x[k].data(), y.data(), kTokenCounts[k]);
        } else {
            shared.forward(expected.x[k].data(), y.data(), kTokenCounts[k]);
        }
        if (!same_bits(y, expected.y[k])) ++mismatches[static_cast<std::size_t>(c)];
    });
    for (int c = 0; c < kThreads; ++c) CHECK(mismatches[static_cast<std::size_t>(c)] == 0);
}

TEST_CASE("a model's layers share one pool: 12 blocks of 3 threads start 2 workers in all") {
    // Each block owning its workers would leave the last block's spinning on
    // the cores the next block needs (core/shared_pool.hpp).
    const std::int64_t d = 33, f = 61;
    RandomBlock b(d, f, Layout::out_in, 94);
    const long before = process_threads();
    std::vector<std::unique_ptr<Ffn>> layers;
    for (int l = 0; l < 12; ++l)
        layers.push_back(
            std::make_unique<Ffn>(b.gate_view(), b.up_view(), b.down_view(), Options{3}));
    // The pool may exist already (another case's block of 3 threads).
    CHECK(process_threads() - before <= 2);

    // Different blocks called at once: one claims the pool, the others run
    // alone; every result matches a serial one-thread call bit for bit.
    const Ffn serial(b.gate_view(), b.up_view(), b.down_view(), Options{1});
    const Expected expected(serial, d);
    std::vector<int> mismatches(kThreads, 0);
    hammer([&](int c, long i) {
        const std::size_t k = static_cast<std::size_t>(c + i) % kCounts;
        std::vector<float> y(expected.x[k].size());
        layers[static_cast<std::size_t>(c + i) % layers.size()]->forward(expected.x[k].data(),
                                                                         y.data(), kTokenCounts[k]);
        if (!same_bits(y, expected.y[k])) ++mismatches[static_cast<std::size_t>(c)];
    });
    for (int c = 0; c < kThreads; ++c) CHECK(mismatches[static_cast<std::size_t>(c)] == 0);
}

}  // TEST_SUITE
