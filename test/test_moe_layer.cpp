// swiglu::MoeLayer (swiglu/moe.hpp): the router's logits, route(), the
// experts and the shared block together, against a float64 reference;
// in place, threads, validation.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include <swiglu/moe.hpp>
#include "reference.hpp"

using namespace swiglu;

namespace {

// E experts of (d, f) and, optionally, a shared block of (d, fs) with a gate.
struct Model {
    std::int64_t d, f, e;
    std::vector<test::RandomBlock> experts;
    std::vector<float> router;  // (E, d): out_in
    std::vector<float> bias, gate;
    std::unique_ptr<test::RandomBlock> shared;

    Model(std::int64_t d_, std::int64_t f_, std::int64_t e_, std::int64_t fs, unsigned seed)
        : d(d_), f(f_), e(e_) {
        for (std::int64_t i = 0; i < e; ++i)
            experts.emplace_back(d, f, Layout::out_in, seed + 17 * unsigned(i));
        // Logits spread over a few units, so that near-ties are rare.
        router = test::uniform(std::size_t(e * d), 4.0f / std::sqrt(float(d)), seed + 1001);
        bias = test::uniform(std::size_t(e), 0.5f, seed + 1002);
        gate = test::uniform(std::size_t(d), 1.0f / std::sqrt(float(d)), seed + 1003);
        if (fs > 0) shared = std::make_unique<test::RandomBlock>(d, fs, Layout::out_in, seed + 999);
    }

    Experts make_experts(const Options& options) const {
        std::vector<ExpertWeights> w;
        for (const auto& b : experts) w.push_back({b.gate_view(), b.up_view(), b.down_view()});
        return Experts(w, options);
    }

    MoeLayer layer(const RouterRule& rule, bool with_bias, bool gated,
                   const Options& options = {}) const {
        std::unique_ptr<Ffn> s;
        if (shared)
            s = std::make_unique<Ffn>(shared->gate_view(), shared->up_view(), shared->down_view(),
                                      options);
        return MoeLayer(WeightView::out_in(router.data(), e, d), rule, make_experts(options),
                        with_bias ? bias.data() : nullptr, std::move(s),
                        gated ? gate.data() : nullptr);
    }

    // The router's logits of token t in double.
    std::vector<double> logits(const float* x) const {
        std::vector<double> l(std::size_t(e), 0.0);
        for (std::int64_t j = 0; j < e; ++j)
            for (std::int64_t i = 0; i < d; ++i)
                l[std::size_t(j)] += double(x[i]) * double(router[std::size_t(j * d + i)]);
        return l;
    }

    // y of one token in double for given ids and weights.
    std::vector<double> reference(const float* x, const std::int32_t* ids, const float* w,
                                  std::int64_t k, bool gated) const {
        std::vector<double> y(std::size_t(d), 0.0);
        for (std::int64_t j = 0; j < k; ++j) {
            const auto& b = experts[std::size_t(ids[j])];
            const auto r = test::reference_ffn(x, 1, b.gate_view(), b.up_view(), b.down_view());
            for (std::int64_t i = 0; i < d; ++i)
                y[std::size_t(i)] += double(w[j]) * r[std::size_t(i)];
        }
        if (shared) {
            const auto r = test::reference_ffn(x, 1, shared->gate_view(), shared->up_view(),
                                               shared->down_view());
            double g = 1.0;
            if (gated) {
                double dot = 0;
                for (std::int64_t i = 0; i < d; ++i)
                    dot += double(x[i]) * double(gate[std::size_t(i)]);
                g = 1.0 / (1.0 + std::exp(-dot));
            }
            for (std::int64_t i = 0; i < d; ++i) y[std::size_t(i)] += g * r[std::size_t(i)];
        }
        return y;
    }
};

// Descending order by value, ties to the lower id: the top k of v.
std::vector<std::int32_t> top_k(const std::vector<double>& v, std::int64_t k) {
    std::vector<std::int32_t> ids(v.size());
    std::iota(ids.begin(), ids.end(), 0);
    std::stable_sort(ids.begin(), ids.end(), [&](std::int32_t a, std::int32_t b) {
        return v[std::size_t(a)] > v[std::size_t(b)];
    });
    ids.resize(std::size_t(k));
    return ids;
}

// Whether the k-th and (k+1)-th largest logits are apart by more than the
// f32 logits' error could swap (d f32 products summed: ~1e-5 here).
bool clear_choice(const std::vector<double>& v, std::int64_t k) {
    if (k >= std::int64_t(v.size())) return true;
    std::vector<double> s = v;
    std::sort(s.begin(), s.end(), std::greater<double>());
    return s[std::size_t(k - 1)] - s[std::size_t(k)] > 1e-4;
}

}  // namespace

TEST_SUITE("moe_layer") {
TEST_CASE("Mixtral-style layer: the router's choice and y against fp64") {
    const Model m(64, 96, 8, 0, 5);
    RouterRule rule;
    rule.top_k = 2;
    rule.normalize = true;
    const MoeLayer layer = m.layer(rule, false, false);
    const std::int64_t tokens = 13;
    const std::vector<float> x = test::random_input(tokens, m.d, 3);
    std::vector<std::int32_t> ids(std::size_t(tokens * 2));
    std::vector<float> w(ids.size());
    layer.route(x.data(), tokens, ids.data(), w.data());
    int checked = 0;
    for (std::int64_t t = 0; t < tokens; ++t) {
        const auto l = m.logits(x.data() + t * m.d);
        if (!clear_choice(l, 2)) continue;
        ++checked;
        const auto want = top_k(l, 2);
        CHECK(ids[std::size_t(2 * t)] == want[0]);
        CHECK(ids[std::size_t(2 * t + 1)] == want[1]);
        // Normalised softmax of the two: sigmoid of their difference.
        const double p0 = 1.0 / (1.0 + std::exp(l[std::size_t(want[1])] - l[std::size_t(want[0])]));
        CHECK(w[std::size_t(2 * t)] == doctest::Approx(p0).epsilon(1e-5));
    }
    CHECK(checked >= tokens - 2);
    std::vector<float> y(x.size());
    layer.forward(x.data(), y.data(), tokens);
    std::vector<double> ref;
    for (std::int64_t t = 0; t < tokens; ++t) {
        const auto r =
            m.reference(x.data() + t * m.d, ids.data() + 2 * t, w.data() + 2 * t, 2, false);
        ref.insert(ref.end(), r.begin(), r.end());
    }
    CHECK(test::relative_error(y, ref) <= 2 * test::f32_tolerance(m.d, m.f));
}

TEST_CASE("Qwen2-MoE-style layer: a gated shared block, in place, any thread count") {
    const Model m(48, 40, 6, 56, 9);
    RouterRule rule;
    rule.top_k = 3;
    const std::int64_t tokens = 7;
    const std::vector<float> x = test::random_input(tokens, m.d, 4);
    std::vector<float> first;
    for (int threads : {1, 2, 3}) {
        Options o;
        o.threads = threads;
        const MoeLayer layer = m.layer(rule, false, true, o);
        CHECK(layer.shared() != nullptr);
        std::vector<float> y = x;
        layer.forward(y.data(), y.data(), tokens);  // in place
        std::vector<float> out(x.size());
        layer.forward(x.data(), out.data(), tokens);
        CHECK(std::memcmp(y.data(), out.data(), y.size() * sizeof(float)) == 0);
        if (first.empty()) {
            first = y;
            std::vector<std::int32_t> ids(std::size_t(tokens * 3));
            std::vector<float> w(ids.size());
            layer.route(x.data(), tokens, ids.data(), w.data());
            std::vector<double> ref;
            for (std::int64_t t = 0; t < tokens; ++t) {
                const auto r =
                    m.reference(x.data() + t * m.d, ids.data() + 3 * t, w.data() + 3 * t, 3, true);
                ref.insert(ref.end(), r.begin(), r.end());
            }
            CHECK(test::relative_error(y, ref) <= 3 * test::f32_tolerance(m.d, 56));
        } else {
            CHECK(std::memcmp(y.data(), first.data(), y.size() * sizeof(float)) == 0);
        }
    }
}

TEST_CASE("DeepSeek-V3-style layer: sigmoid scores, bias, groups, an ungated shared block") {
    const Model m(32, 24, 16, 48, 13);
    RouterRule rule;
    rule.top_k = 4;
    rule.score = RouterScore::sigmoid;
    rule.groups = 4;
    rule.top_groups = 2;
    rule.group_score = GroupScore::top2_sum;
    rule.normalize = true;
    rule.scaling = 2.5f;
    const MoeLayer layer = m.layer(rule, true, false);
    const std::int64_t tokens = 5;
    const std::vector<float> x = test::random_input(tokens, m.d, 6);
    std::vector<std::int32_t> ids(std::size_t(tokens * 4));
    std::vector<float> w(ids.size());
    layer.route(x.data(), tokens, ids.data(), w.data());
    for (std::int64_t t = 0; t < tokens; ++t) {
        double sum = 0;
        for (int j = 0; j < 4; ++j) sum += w[std::size_t(4 * t + j)];
        CHECK(sum == doctest::Approx(2.5).epsilon(1e-5));  // normalised, then scaled
        // Every chosen expert lies in one of two groups of 4.
        std::vector<int> groups;
        for (int j = 0; j < 4; ++j) groups.push_back(ids[std::size_t(4 * t + j)] / 4);
        std::sort(groups.begin(), groups.end());
        CHECK(std::unique(groups.begin(), groups.end()) - groups.begin() <= 2);
    }
    std::vector<float> y(x.size());
    layer.forward(x.data(), y.data(), tokens);
    std::vector<double> ref;
    for (std::int64_t t = 0; t < tokens; ++t) {
        const auto r =
            m.reference(x.data() + t * m.d, ids.data() + 4 * t, w.data() + 4 * t, 4, false);
        ref.insert(ref.end(), r.begin(), r.end());
    }
    CHECK(test::relative_error(y, ref) <= 4 * test::f32_tolerance(m.d, 48));
}

TEST_CASE("bad layers and calls are refused and write nothing") {
    const Model m(16, 8, 4, 12, 21);
    RouterRule rule;
    rule.top_k = 2;
    const auto refused = [](auto&& make) {
        try {
            make();
        } catch (const Error& e) {
            return e.status() == Status::invalid_argument;
        }
        return false;
    };
    // The router must map d to E.
    CHECK(refused([&] {
        MoeLayer(WeightView::out_in(m.router.data(), m.e - 1, m.d), rule, m.make_experts({}));
    }));
    CHECK(refused(
        [&] { MoeLayer(WeightView::out_in(nullptr, m.e, m.d), rule, m.make_experts({})); }));
    RouterRule bad = rule;
    bad.top_k = 5;
    CHECK(refused(
        [&] { MoeLayer(WeightView::out_in(m.router.data(), m.e, m.d), bad, m.make_experts({})); }));
    std::vector<float> nan_bias(4, 0.0f);
    nan_bias[2] = std::nanf("");
    CHECK(refused([&] {
        MoeLayer(WeightView::out_in(m.router.data(), m.e, m.d), rule, m.make_experts({}),
                 nan_bias.data());
    }));
    CHECK(refused([&] {
        MoeLayer(WeightView::out_in(m.router.data(), m.e, m.d), rule, m.make_experts({}), nullptr,
                 nullptr, m.gate.data());
    }));
    const test::RandomBlock other(12, 8, Layout::out_in, 3);
    CHECK(refused([&] {
        MoeLayer(WeightView::out_in(m.router.data(), m.e, m.d), rule, m.make_experts({}), nullptr,
                 std::make_unique<Ffn>(other.gate_view(), other.up_view(), other.down_view()));
    }));

    const MoeLayer layer = m.layer(rule, false, true);
    std::vector<float> x = test::random_input(3, m.d, 1);
    std::vector<float> y(x.size(), 7.0f);
    CHECK(refused([&] { layer.forward(x.data(), y.data(), -1); }));
    CHECK(refused([&] { layer.forward(nullptr, y.data(), 3); }));
    CHECK(refused([&] { layer.forward(x.data(), nullptr, 3); }));
    CHECK(refused([&] { layer.forward(x.data(), x.data() + 1, 2); }));
    x[m.d + 3] = std::nanf("");  // token 1: no expert ranks
    CHECK(refused([&] { layer.forward(x.data(), y.data(), 3); }));
    CHECK(std::all_of(y.begin(), y.end(), [](float v) { return v == 7.0f; }));
    layer.forward(x.data(), y.data(), 0);  // nothing to do
}

TEST_CASE("parts of a layer (MoeLayer::part) sum to the layer; a part of every expert is it") {
    const Model m(48, 40, 6, 56, 9);
    RouterRule rule;
    rule.top_k = 3;
    const std::int64_t tokens = 9;
    const std::vector<float> x = test::random_input(tokens, m.d, 4);
    const MoeLayer whole = m.layer(rule, true, true);
    std::vector<float> y(x.size());
    whole.forward(x.data(), y.data(), tokens);
    // Experts [first, end), the shared block where asked.
    const auto part = [&](std::int64_t first, std::int64_t end, bool with_shared) {
        std::vector<ExpertWeights> w;
        for (std::int64_t e = first; e < end; ++e) {
            const auto& b = m.experts[std::size_t(e)];
            w.push_back({b.gate_view(), b.up_view(), b.down_view()});
        }
        std::unique_ptr<Ffn> s;
        if (with_shared)
            s = std::make_unique<Ffn>(m.shared->gate_view(), m.shared->up_view(),
                                      m.shared->down_view());
        return MoeLayer::part(WeightView::out_in(m.router.data(), m.e, m.d), rule, Experts(w),
                              first, m.bias.data(), std::move(s),
                              with_shared ? m.gate.data() : nullptr);
    };
    // Every expert and the shared block: the whole layer, bit for bit.
    const MoeLayer all = part(0, m.e, true);
    CHECK(all.routed_experts() == m.e);
    CHECK(all.first_expert() == 0);
    std::vector<float> y_all(x.size());
    all.forward(x.data(), y_all.data(), tokens);
    CHECK(std::memcmp(y.data(), y_all.data(), y.size() * sizeof(float)) == 0);

    // Three parts, the shared block in the last, the second in place: the
    // same terms as the layer, added in another order. Only the order of at
    // most k + 1 = 4 additions of f32 terms differs, each within (k + 1) u
    // of their exact sum relative to the sum of |terms| (a few max |y| on
    // these layers): the block's f32 tolerance (16 u (sqrt d + sqrt f), 200
    // u here) bounds it with room.
    const MoeLayer a = part(0, 1, false), b = part(1, 4, false), c = part(4, 6, true);
    CHECK(b.first_expert() == 1);
    CHECK(b.experts().experts() == 3);
    CHECK(c.routed_experts() == m.e);
    std::vector<float> ya(x.size()), yb = x, yc(x.size());
    a.forward(x.data(), ya.data(), tokens);
    b.forward(yb.data(), yb.data(), tokens);
    c.forward(x.data(), yc.data(), tokens);
    std::vector<double> sum(x.size());
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] = double(ya[i]) + yb[i] + yc[i];
    std::vector<double> whole_y(y.begin(), y.end());
    std::vector<float> sum_f(sum.begin(), sum.end());
    CHECK(test::relative_error(sum_f, whole_y) <= test::f32_tolerance(m.d, 56));
    // Expert 0 alone: the tokens that did not choose it get exactly 0.
    std::vector<std::int32_t> ids(std::size_t(tokens * 3));
    std::vector<float> w(ids.size());
    a.route(x.data(), tokens, ids.data(), w.data());
    for (std::int64_t t = 0; t < tokens; ++t) {
        const bool chose = std::count(ids.begin() + 3 * t, ids.begin() + 3 * t + 3, 0) > 0;
        if (!chose)
            CHECK(std::all_of(ya.begin() + t * m.d, ya.begin() + (t + 1) * m.d,
                              [](float v) { return v == 0.0f; }));
    }
    // terms(): the parts' terms, each token's added in j order and then the
    // shared term (expert parallelism's combine), are the layer bit for bit.
    std::vector<std::int32_t> all_ids(std::size_t(tokens * 3));
    std::vector<float> all_w(all_ids.size());
    whole.route(x.data(), tokens, all_ids.data(), all_w.data());
    const MoeLayer* parts[3] = {&a, &b, &c};
    std::vector<float> terms[3], shared_terms(x.size());
    std::size_t next[3] = {0, 0, 0};
    for (int p = 0; p < 3; ++p) {
        terms[p].resize(std::size_t(parts[p]->held_slots(all_ids.data(), tokens) * m.d));
        parts[p]->terms(x.data(), tokens, all_ids.data(), all_w.data(), terms[p].data(),
                        shared_terms.data());
    }
    std::vector<float> combined(x.size());
    for (std::int64_t t = 0; t < tokens; ++t) {
        float* yt = combined.data() + t * m.d;
        for (std::int64_t j = 0; j < 3; ++j) {
            const std::int32_t id = all_ids[std::size_t(t * 3 + j)];
            const int p = id < 1 ? 0 : id < 4 ? 1 : 2;
            const float* term = terms[p].data() + next[p];
            next[p] += std::size_t(m.d);
            for (std::int64_t i = 0; i < m.d; ++i) yt[i] = j == 0 ? term[i] : yt[i] + term[i];
        }
        for (std::int64_t i = 0; i < m.d; ++i)
            yt[i] = yt[i] + shared_terms[std::size_t(t * m.d + i)];
    }
    CHECK(std::memcmp(combined.data(), y.data(), y.size() * sizeof(float)) == 0);
    std::vector<std::int32_t> bad_ids = all_ids;
    bad_ids[2] = 6;
    CHECK_THROWS_AS(c.terms(x.data(), tokens, bad_ids.data(), all_w.data(), terms[2].data(),
                            shared_terms.data()),
                    Error);
    CHECK_THROWS_AS(
        c.terms(x.data(), tokens, all_ids.data(), all_w.data(), terms[2].data(), nullptr),
        Error);  // c has the shared block

    // A range outside the router's E.
    CHECK_THROWS_AS(part(4, 7, false), Error);
}
}
