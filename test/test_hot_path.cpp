// The hot path allocates nothing of its own. oneDNN 2.6's public execute()
// builds a small argument map per primitive execution (6 operator new calls
// here, inside dnnl_primitive_execute, served from the thread's malloc cache),
// which no public API avoids; so the test counts allocations per forward()
// and checks they are exactly that: the same on every call, and no more than
// oneDNN's per-execution share.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include <swiglu/moe.hpp>
#include <swiglu/swiglu.hpp>

#include "allocation_counter.hpp"
#include "reference.hpp"

using namespace swiglu;

TEST_SUITE("hot_path") {

TEST_CASE("forward allocates the same on every call, only inside oneDNN's execute") {
    struct Case {
        std::int64_t d, f, tokens;
        int threads;
        long executions;
    };
    // executions = primitive runs per call: (row tiles) x (column tiles), both phases.
    for (Case c : {Case{128, 341, 1, 1, 2}, Case{128, 341, 64, 2, 8}, Case{13, 7, 5, 2, 2}}) {
        CAPTURE(c.d);
        CAPTURE(c.tokens);
        test::RandomBlock b(c.d, c.f, Layout::out_in, 3);
        Ffn ffn(b.gate_view(), b.up_view(), b.down_view(), Options{c.threads});
        const auto x = test::random_input(c.tokens, c.d, 1);
        std::vector<float> y(x.size());
        ffn.forward(x.data(), y.data(), c.tokens);  // first call: workspace made here
        long counts[3];
        for (long& n : counts) {
            const long before = test::operator_news();
            for (int i = 0; i < 10; ++i) ffn.forward(x.data(), y.data(), c.tokens);
            n = test::operator_news() - before;
        }
        CHECK(counts[0] == counts[1]);
        CHECK(counts[1] == counts[2]);
        MESSAGE("operator new per forward: ", counts[0] / 10.0, " for ", c.executions,
                " primitive executions");
        CHECK(counts[0] <= 10 * 6 * c.executions);
    }
}

TEST_CASE("a block on our own kernels allocates nothing at all after its first call") {
    // q4_0 and q8_0 under 64 tokens run the grouped kernels only (no
    // oneDNN execute, whose argument maps are the one allowance above), so
    // any allocation here is ours: argument checks included.
    test::RandomBlock b(96, 200, Layout::out_in, 4);
    for (Dtype dtype : {Dtype::q4_0, Dtype::q8_0})
        for (std::int64_t tokens : {1, 3, 17}) {
            CAPTURE(int(dtype));
            CAPTURE(tokens);
            Ffn ffn(b.gate_view(), b.up_view(), b.down_view(), Options{2, dtype});
            const auto x = test::random_input(tokens, b.d, 2);
            std::vector<float> y(x.size());
            ffn.forward(x.data(), y.data(), tokens);
            const long before = test::operator_news();
            for (int i = 0; i < 10; ++i) ffn.forward(x.data(), y.data(), tokens);
            CHECK(test::operator_news() - before == 0);
        }
}

TEST_CASE("Experts allocate nothing after their first call of a size, nor for smaller calls") {
    // q4_0 with under 64 rows per expert: our kernels only, as above. The
    // scratch Experts keeps (the gathered rows, the sort) grows to the
    // largest call and stays: aligned_alloc is counted too.
    const std::int64_t E = 4, k = 2;
    std::vector<test::RandomBlock> blocks;
    std::vector<ExpertWeights> weights;
    for (std::int64_t e = 0; e < E; ++e) blocks.emplace_back(96, 200, Layout::out_in, 7 + e);
    for (const auto& b : blocks) weights.push_back({b.gate_view(), b.up_view(), b.down_view()});
    const Experts experts(weights, Options{2, Dtype::q4_0});
    bool first = true;
    for (std::int64_t tokens : {17, 3}) {
        CAPTURE(tokens);
        const auto x = test::random_input(tokens, 96, 2);
        std::vector<float> y(x.size());
        std::vector<std::int32_t> ids;
        for (std::int64_t t = 0; t < tokens; ++t)
            for (std::int64_t j = 0; j < k; ++j) ids.push_back(std::int32_t((t + j) % E));
        const std::vector<float> w(ids.size(), 0.5f);
        if (first) experts.forward(x.data(), y.data(), tokens, ids.data(), w.data(), k);
        first = false;
        const long news = test::operator_news(), aligned = test::aligned_allocs();
        for (int i = 0; i < 10; ++i)
            experts.forward(x.data(), y.data(), tokens, ids.data(), w.data(), k);
        CHECK(test::operator_news() - news == 0);
        CHECK(test::aligned_allocs() - aligned == 0);
    }
}

TEST_CASE("a MoeLayer allocates nothing after its first call of a size, nor for smaller calls") {
    // Router, route() and the experts (q4_0, our kernels only, as above),
    // with a shared block and its gate: the router's logits, the routing's
    // arrays, ids and weights all live in the layer's leased scratch.
    const std::int64_t E = 4, d = 96;
    std::vector<test::RandomBlock> blocks;
    std::vector<ExpertWeights> weights;
    for (std::int64_t e = 0; e < E; ++e) blocks.emplace_back(d, 200, Layout::out_in, 11 + e);
    for (const auto& b : blocks) weights.push_back({b.gate_view(), b.up_view(), b.down_view()});
    const Options options{2, Dtype::q4_0};
    const auto router = test::random_input(E, d, 5);
    const auto gate = test::random_input(1, d, 6);
    test::RandomBlock shared(d, 64, Layout::out_in, 12);
    RouterRule rule;
    rule.top_k = 2;
    rule.normalize = true;
    const MoeLayer layer(
        WeightView::out_in(router.data(), E, d), rule, Experts(weights, options), nullptr,
        std::make_unique<Ffn>(shared.gate_view(), shared.up_view(), shared.down_view(), options),
        gate.data());
    bool first = true;
    for (std::int64_t tokens : {17, 3}) {
        CAPTURE(tokens);
        const auto x = test::random_input(tokens, d, 2);
        std::vector<float> y(x.size());
        if (first) layer.forward(x.data(), y.data(), tokens);
        first = false;
        const long news = test::operator_news(), aligned = test::aligned_allocs();
        for (int i = 0; i < 10; ++i) layer.forward(x.data(), y.data(), tokens);
        CHECK(test::operator_news() - news == 0);
        CHECK(test::aligned_allocs() - aligned == 0);
    }
}

TEST_CASE("backward allocates the same on every call") {
    test::RandomBlock b(64, 160, Layout::out_in, 5);
    Ffn ffn(b.gate_view(), b.up_view(), b.down_view(), Options{2});
    const std::int64_t tokens = 9;
    const auto x = test::random_input(tokens, b.d, 3);
    const auto dy = test::random_input(tokens, b.d, 4);
    std::vector<float> dx(x.size()), g(std::size_t(b.d * b.f)), u(g.size()), w(g.size());
    const Gradients grads{g.data(), u.data(), w.data()};
    ffn.backward(x.data(), dy.data(), dx.data(), tokens, grads);  // first call: prepared here
    long counts[3];
    for (long& n : counts) {
        const long before = test::operator_news();
        for (int i = 0; i < 10; ++i) ffn.backward(x.data(), dy.data(), dx.data(), tokens, grads);
        n = test::operator_news() - before;
    }
    CHECK(counts[0] == counts[1]);
    CHECK(counts[1] == counts[2]);
    MESSAGE("operator new per backward: ", counts[0] / 10.0, " (oneDNN's execute)");
}

}  // TEST_SUITE
