// ShardedMoeLayer's hot path under mpirun: after the first call of a token
// count, a call of that count allocates nothing of ours (q4_0: our kernels
// only, as in test_hot_path.cpp), even when it routes more slots to a rank
// than the first call did. Replaces operator new and aligned_alloc for this
// whole binary: counting only.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include <swiglu/mpi.hpp>

#include "moe_files.hpp"
#include "mpi_support.hpp"
#include "reference.hpp"

namespace {
std::atomic<long> g_news{0}, g_aligned{0};
}

void* operator new(std::size_t n) {
    g_news.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
    g_news.fetch_add(1, std::memory_order_relaxed);
    return std::malloc(n ? n : 1);
}
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }

extern "C" void* aligned_alloc(std::size_t alignment, std::size_t size) noexcept {
    g_aligned.fetch_add(1, std::memory_order_relaxed);
    void* p = nullptr;
    if (alignment < sizeof(void*)) alignment = sizeof(void*);
    return posix_memalign(&p, alignment, size) == 0 ? p : nullptr;
}

using namespace swiglu;
using namespace swiglu::test;

TEST_CASE("sharded MoE layer: no allocation after a token count's first call, routing anew") {
    // 8 experts over 2 or 3 ranks, top 2; d and f whole q4_0 blocks.
    const MoeWeights m(64, 32, 8, 0, 5);
    const MoeWeights::Stacked w = m.stacked(Layout::out_in);
    MoeArrays a;
    a.router = WeightView::out_in(m.router.data(), m.e, m.d);
    a.rule.top_k = 2;
    a.rule.normalize = true;
    a.gate = w.gate.data();
    a.up = w.up.data();
    a.down = w.down.data();
    a.experts = m.e;
    a.d = m.d;
    a.f = m.f;
    const ShardedMoeLayer layer(MPI_COMM_WORLD, a, Options{1, Dtype::q4_0});
    // Every expert's Ffn makes its own scratch on its first call, as in one
    // process: a first call of another count (20 tokens) runs them all.
    const std::vector<float> warm = random_input(20, m.d, 4);
    std::vector<std::int32_t> ids(40);
    std::vector<float> weights(ids.size()), y(static_cast<std::size_t>(24 * m.d));
    layer.local().route(warm.data(), 20, ids.data(), weights.data());
    for (std::int32_t e = 0; e < m.e; ++e)
        REQUIRE(std::find(ids.begin(), ids.end(), e) != ids.end());
    layer.forward(warm.data(), y.data(), 20);
    // The first call of 24 tokens: every token the same, so all choose the
    // same 2 experts and some rank holds none of their slots; the later
    // calls of 24 route anew, more slots to that rank.
    const std::int64_t tokens = 24;
    const std::vector<float> one = random_input(1, m.d, 3);
    std::vector<float> same(static_cast<std::size_t>(tokens * m.d));
    for (std::int64_t t = 0; t < tokens; ++t)
        std::copy(one.begin(), one.end(), same.begin() + t * m.d);
    layer.forward(same.data(), y.data(), tokens);
    for (unsigned seed : {7u, 8u, 9u}) {
        CAPTURE(seed);
        const std::vector<float> x = random_input(tokens, m.d, seed);
        const long news = g_news.load(), aligned = g_aligned.load();
        layer.forward(x.data(), y.data(), tokens);
        CHECK(g_news.load() - news == 0);
        CHECK(g_aligned.load() - aligned == 0);
    }
    // And a smaller call.
    const long news = g_news.load();
    layer.forward(same.data(), y.data(), 5);
    CHECK(g_news.load() - news == 0);
}
