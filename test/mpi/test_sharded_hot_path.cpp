// ShardedMoeLayer's hot path under mpirun: after the first call of a token
// count, a call of that count allocates nothing of ours (q4_0: our kernels
// only, as in test_hot_path.cpp), even when it routes more slots to a rank
// than the first call did (allocation_counter.cpp counts).
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include <swiglu/mpi.hpp>

#include "allocation_counter.hpp"
#include "moe_files.hpp"
#include "mpi_support.hpp"
#include "reference.hpp"

using namespace swiglu;
using namespace swiglu::test;

TEST_CASE("sharded MoE layer: no allocation after a token count's first call, routing anew") {
    // 8 experts over 2 or 3 ranks, top 2; d and f whole q4_0 blocks.
    const MoeWeights m(64, 32, 8, 0, 5);
    const MoeWeights::Stacked w = m.stacked(Layout::out_in);
    RouterRule rule;
    rule.top_k = 2;
    rule.normalize = true;
    const ShardedMoeLayer layer(MPI_COMM_WORLD, moe_arrays(m, w, Layout::out_in, rule),
                                Options{1, Dtype::q4_0});
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
        const long news = operator_news(), aligned = aligned_allocs();
        layer.forward(x.data(), y.data(), tokens);
        CHECK(operator_news() - news == 0);
        CHECK(aligned_allocs() - aligned == 0);
    }
    // And a smaller call.
    const long news = operator_news();
    layer.forward(same.data(), y.data(), 5);
    CHECK(operator_news() - news == 0);
}
