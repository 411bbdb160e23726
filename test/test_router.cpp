// route() (swiglu/moe.hpp) against a float64 reference of each family's rule.
//
// The reference below is each rule written out as the model's code reads
// (softmax / sigmoid, + bias, group scores, keep the best groups, top-k,
// normalize, scale), in double and with full sorts, so that it shares no
// structure with route()'s partial sorts over candidate lists. Ids must
// match exactly; weights within the bound of kWeightTolerance.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <swiglu/moe.hpp>

#include "error_checks.hpp"

using namespace swiglu;
using swiglu::test::expect_error;

namespace {

struct Routed {
    std::vector<std::int32_t> ids;  // tokens x k
    std::vector<double> weights;    // tokens x k
};

// a ranks before b: the higher score, or on a tie the lower id.
bool before(double score_a, std::int64_t a, double score_b, std::int64_t b) {
    return score_a > score_b || (score_a == score_b && a < b);
}

Routed reference(const std::vector<float>& logits, std::int64_t tokens, std::int64_t experts,
                 const RouterRule& rule, const float* bias) {
    const std::int64_t k = rule.top_k, n = experts / rule.groups;
    Routed out;
    for (std::int64_t t = 0; t < tokens; ++t) {
        const float* row = logits.data() + t * experts;
        std::vector<double> score(experts), choice(experts);
        if (rule.score == RouterScore::softmax) {
            const double m = *std::max_element(row, row + experts);
            double sum = 0;
            for (std::int64_t i = 0; i < experts; ++i) sum += std::exp(double(row[i]) - m);
            for (std::int64_t i = 0; i < experts; ++i)
                score[i] = std::exp(double(row[i]) - m) / sum;
        } else {
            for (std::int64_t i = 0; i < experts; ++i)
                score[i] = 1.0 / (1.0 + std::exp(-double(row[i])));
        }
        for (std::int64_t i = 0; i < experts; ++i)
            choice[i] = score[i] + (bias ? double(bias[i]) : 0.0);

        // Group scores from each group's choice scores sorted descending.
        std::vector<std::int64_t> groups(rule.groups);
        std::vector<double> group_score(rule.groups);
        for (std::int64_t g = 0; g < rule.groups; ++g) {
            std::vector<double> members(choice.begin() + g * n, choice.begin() + (g + 1) * n);
            std::sort(members.begin(), members.end(), std::greater<double>());
            group_score[g] = rule.group_score == GroupScore::max || rule.groups == 1
                                 ? members[0]
                                 : members[0] + members[1];
            groups[g] = g;
        }
        std::sort(groups.begin(), groups.end(), [&](std::int64_t a, std::int64_t b) {
            return before(group_score[a], a, group_score[b], b);
        });
        std::vector<bool> allowed(experts, false);
        for (std::int64_t j = 0; j < rule.top_groups; ++j)
            for (std::int64_t i = groups[j] * n; i < (groups[j] + 1) * n; ++i) allowed[i] = true;

        std::vector<std::int64_t> candidates;
        for (std::int64_t i = 0; i < experts; ++i)
            if (allowed[i]) candidates.push_back(i);
        std::sort(candidates.begin(), candidates.end(), [&](std::int64_t a, std::int64_t b) {
            return before(choice[a], a, choice[b], b);
        });
        REQUIRE(std::int64_t(candidates.size()) >= k);

        double sum = 0;
        for (std::int64_t j = 0; j < k; ++j) sum += score[candidates[j]];
        if (rule.score == RouterScore::sigmoid) sum += 1e-20;  // as HF's DeepSeek-V3
        for (std::int64_t j = 0; j < k; ++j) {
            const double w = score[candidates[j]];
            out.ids.push_back(std::int32_t(candidates[j]));
            out.weights.push_back((rule.normalize ? w / sum : w) * double(rule.scaling));
        }
    }
    return out;
}

// route() computes in double and rounds each weight to float once: the
// double pipeline's own error (exp's ulp, a sum of E <= 256 terms, a divide
// and a multiply: < 300 * 2^-53 relative) is ~2^-44, so the float is within
// 2^-24 + 2^-44 of the exact value relative; 2^-23 bounds that with room.
// 2^-149 (float's least subnormal) absolute covers a weight that rounds
// into the subnormals, where relative error is unbounded.
constexpr double kWeightTolerance = 1.0 / (1 << 23);

void check_against_reference(const std::vector<float>& logits, std::int64_t tokens,
                             std::int64_t experts, const RouterRule& rule, const float* bias) {
    const std::int64_t k = rule.top_k;
    std::vector<std::int32_t> ids(tokens * k, -1);
    std::vector<float> weights(tokens * k, -1.0f);
    route(logits.data(), tokens, experts, rule, bias, ids.data(), weights.data());
    const Routed ref = reference(logits, tokens, experts, rule, bias);
    for (std::int64_t i = 0; i < tokens * k; ++i) {
        CAPTURE(i);
        REQUIRE(ids[i] == ref.ids[i]);
        CHECK(std::abs(double(weights[i]) - ref.weights[i]) <=
              kWeightTolerance * std::abs(ref.weights[i]) + std::ldexp(1.0, -149));
    }
}

// Continuous logits (ties have probability ~0) or a few repeated values
// (ties everywhere, so the tie rule is compared at scale too).
std::vector<float> random_logits(std::mt19937& rng, std::int64_t n, bool tied, float scale) {
    std::uniform_real_distribution<float> uniform(-scale, scale);
    std::uniform_int_distribution<int> level(-3, 3);
    std::vector<float> v(n);
    for (float& x : v) x = tied ? 0.5f * float(level(rng)) : uniform(rng);
    return v;
}

RouterRule rule_of(std::int64_t k, RouterScore score, bool normalize, std::int64_t groups = 1,
                   std::int64_t top_groups = 1, GroupScore group_score = GroupScore::max,
                   float scaling = 1.0f) {
    RouterRule r;
    r.top_k = k;
    r.score = score;
    r.normalize = normalize;
    r.groups = groups;
    r.top_groups = top_groups;
    r.group_score = group_score;
    r.scaling = scaling;
    return r;
}

// route() of one token as (ids, weights).
struct One {
    std::vector<std::int32_t> ids;
    std::vector<float> weights;
};
One route_one(const std::vector<float>& logits, const RouterRule& rule,
              const float* bias = nullptr) {
    One o{std::vector<std::int32_t>(rule.top_k, -1), std::vector<float>(rule.top_k, -1.0f)};
    route(logits.data(), 1, std::int64_t(logits.size()), rule, bias, o.ids.data(),
          o.weights.data());
    return o;
}

constexpr std::int32_t kIdSentinel = -12345;
constexpr float kWeightSentinel = -777.25f;

// `call(ids, weights)` must throw invalid_argument naming every needle, and
// leave both 64-entry buffers as they were.
template <class F>
void expect_refused(F&& call, std::initializer_list<std::string> needles) {
    std::vector<std::int32_t> ids(64, kIdSentinel);
    std::vector<float> weights(64, kWeightSentinel);
    expect_error([&] { call(ids.data(), weights.data()); }, Status::invalid_argument, needles);
    CHECK(std::count(ids.begin(), ids.end(), kIdSentinel) == 64);
    CHECK(std::count(weights.begin(), weights.end(), kWeightSentinel) == 64);
}

}  // namespace

TEST_SUITE("router") {

TEST_CASE("softmax families (Mixtral, Qwen3-MoE, OLMoE / Qwen2-MoE) against fp64") {
    struct Family {
        const char* name;
        bool normalize;
    };
    // Mixtral and Qwen3-MoE renormalize the k weights; OLMoE and Qwen2-MoE
    // (norm_topk_prob = false) keep them as softmax gave them.
    for (const Family family :
         {Family{"Mixtral / Qwen3-MoE", true}, Family{"OLMoE / Qwen2", false}})
        for (const std::int64_t experts : {1, 2, 7, 8, 64, 128})
            for (const std::int64_t k : {1, 2, 6, 8}) {
                if (k > experts) continue;
                for (const unsigned seed : {1u, 2u, 3u})
                    for (const bool tied : {false, true}) {
                        CAPTURE(family.name);
                        CAPTURE(experts);
                        CAPTURE(k);
                        CAPTURE(seed);
                        CAPTURE(tied);
                        std::mt19937 rng(seed * 1000 + unsigned(experts * 10 + k));
                        const std::int64_t tokens = std::uniform_int_distribution<int>(1, 17)(rng);
                        const auto logits = random_logits(rng, tokens * experts, tied, 6.0f);
                        check_against_reference(logits, tokens, experts,
                                                rule_of(k, RouterScore::softmax, family.normalize),
                                                nullptr);
                    }
            }
}

TEST_CASE("sigmoid top-k, with and without bias, against fp64") {
    for (const std::int64_t experts : {1, 2, 7, 8, 64, 128})
        for (const std::int64_t k : {1, 2, 6, 8}) {
            if (k > experts) continue;
            for (const unsigned seed : {4u, 5u})
                for (const bool with_bias : {false, true}) {
                    CAPTURE(experts);
                    CAPTURE(k);
                    CAPTURE(seed);
                    CAPTURE(with_bias);
                    std::mt19937 rng(seed * 1000 + unsigned(experts * 10 + k));
                    const std::int64_t tokens = std::uniform_int_distribution<int>(1, 17)(rng);
                    const auto logits = random_logits(rng, tokens * experts, false, 6.0f);
                    const auto bias = random_logits(rng, experts, false, 0.3f);
                    check_against_reference(logits, tokens, experts,
                                            rule_of(k, RouterScore::sigmoid, true),
                                            with_bias ? bias.data() : nullptr);
                }
        }
}

TEST_CASE("DeepSeek-V2 greedy and group_limited_greedy against fp64") {
    struct Config {
        const char* name;
        std::int64_t experts;
        RouterRule rule;
    };
    const Config configs[] = {
        // V2-Lite: 64 experts, greedy, k = 6, no normalization, factor 1.
        {"V2-Lite greedy", 64, rule_of(6, RouterScore::softmax, false)},
        {"greedy, factor 16", 64,
         rule_of(6, RouterScore::softmax, false, 1, 1, GroupScore::max, 16)},
        {"group_limited 8/3, factor 16", 64,
         rule_of(6, RouterScore::softmax, false, 8, 3, GroupScore::max, 16.0f)},
        {"group_limited 8/3, normalized, factor 2.5", 64,
         rule_of(6, RouterScore::softmax, true, 8, 3, GroupScore::max, 2.5f)},
        // V2 itself: 160 experts in 8 groups of 20.
        {"V2 group_limited 160 8/3, factor 16", 160,
         rule_of(6, RouterScore::softmax, false, 8, 3, GroupScore::max, 16.0f)},
    };
    for (const Config& c : configs)
        for (const unsigned seed : {1u, 2u, 3u, 4u})
            for (const bool tied : {false, true}) {
                CAPTURE(c.name);
                CAPTURE(seed);
                CAPTURE(tied);
                std::mt19937 rng(seed);
                const std::int64_t tokens = std::uniform_int_distribution<int>(1, 17)(rng);
                const auto logits = random_logits(rng, tokens * c.experts, tied, 4.0f);
                check_against_reference(logits, tokens, c.experts, c.rule, nullptr);
            }
}

TEST_CASE("DeepSeek-V3 (sigmoid, bias, top2_sum groups, normalized, 2.5) against fp64") {
    const std::int64_t experts = 256;
    const RouterRule v3 = rule_of(8, RouterScore::sigmoid, true, 8, 4, GroupScore::top2_sum, 2.5f);
    const RouterRule plain = rule_of(8, RouterScore::sigmoid, true);
    // The groups and the bias must change some choices, or the comparison
    // would not be testing them.
    int group_changed = 0, bias_changed = 0;
    for (const unsigned seed : {1u, 2u, 3u, 4u, 5u, 6u})
        for (const bool tied : {false, true}) {
            CAPTURE(seed);
            CAPTURE(tied);
            std::mt19937 rng(seed + 100);
            const std::int64_t tokens = std::uniform_int_distribution<int>(1, 17)(rng);
            const auto logits = random_logits(rng, tokens * experts, tied, 4.0f);
            // Tied logits with a bias of few levels: sums tie too.
            std::vector<float> bias = random_logits(rng, experts, tied, 0.3f);
            if (tied)
                for (float& b : bias) b *= 0.25f;
            check_against_reference(logits, tokens, experts, v3, bias.data());
            check_against_reference(logits, tokens, experts, v3, nullptr);

            const Routed with = reference(logits, tokens, experts, v3, bias.data());
            const Routed without = reference(logits, tokens, experts, v3, nullptr);
            const Routed ungrouped = reference(logits, tokens, experts, plain, bias.data());
            for (std::int64_t t = 0; t < tokens; ++t) {
                const auto a = with.ids.begin() + t * 8;
                bias_changed += !std::equal(a, a + 8, without.ids.begin() + t * 8);
                group_changed += !std::equal(a, a + 8, ungrouped.ids.begin() + t * 8);
            }
        }
    CHECK(bias_changed > 0);
    CHECK(group_changed > 0);
}

TEST_CASE("hand-worked softmax: E = 3, logits [1, 2, 3], k = 2") {
    const std::vector<float> logits = {1, 2, 3};
    // [e^3, e^2] / (e + e^2 + e^3), in descending order of score.
    const One raw = route_one(logits, rule_of(2, RouterScore::softmax, false));
    CHECK(raw.ids == std::vector<std::int32_t>{2, 1});
    CHECK(raw.weights[0] == doctest::Approx(0.665241).epsilon(1e-6));
    CHECK(raw.weights[1] == doctest::Approx(0.244728).epsilon(1e-6));
    // Normalized: [e, 1] / (e + 1).
    const One norm = route_one(logits, rule_of(2, RouterScore::softmax, true));
    CHECK(norm.ids == std::vector<std::int32_t>{2, 1});
    CHECK(norm.weights[0] == doctest::Approx(0.731059).epsilon(1e-6));
    CHECK(norm.weights[1] == doctest::Approx(0.268941).epsilon(1e-6));
    // Scaling multiplies last, after the normalization.
    const One scaled =
        route_one(logits, rule_of(2, RouterScore::softmax, true, 1, 1, GroupScore::max, 2.5f));
    CHECK(scaled.weights[0] == doctest::Approx(2.5 * 0.731059).epsilon(1e-6));
    CHECK(scaled.weights[1] == doctest::Approx(2.5 * 0.268941).epsilon(1e-6));
    // k = E: every expert, best first, and the softmax itself.
    const One all = route_one(logits, rule_of(3, RouterScore::softmax, false));
    CHECK(all.ids == std::vector<std::int32_t>{2, 1, 0});
    CHECK(all.weights[2] == doctest::Approx(0.090031).epsilon(1e-5));
}

TEST_CASE("ties go to the lower expert id, in experts and in groups") {
    // All equal: the k lowest ids, each 1/E.
    const One flat = route_one({0, 0, 0, 0}, rule_of(2, RouterScore::softmax, false));
    CHECK(flat.ids == std::vector<std::int32_t>{0, 1});
    CHECK(flat.weights == std::vector<float>{0.25f, 0.25f});
    // Two tied at the top, then two tied below: lower id first in each.
    const One pairs = route_one({1, 3, 3, 1}, rule_of(3, RouterScore::softmax, false));
    CHECK(pairs.ids == std::vector<std::int32_t>{1, 2, 0});
    const One sig = route_one({-1, 2, -1, 2}, rule_of(3, RouterScore::sigmoid, false));
    CHECK(sig.ids == std::vector<std::int32_t>{1, 3, 0});
    // Groups {0, 1} and {2, 3} tie (max 2 each): group 0 is kept.
    const One groups =
        route_one({2, 0, 0, 2}, rule_of(2, RouterScore::softmax, false, 2, 1, GroupScore::max));
    CHECK(groups.ids == std::vector<std::int32_t>{0, 1});
    // As top2_sum: both groups sum sigmoid(2) + sigmoid(0).
    const One sums = route_one({0, 2, 2, 0},
                               rule_of(1, RouterScore::sigmoid, false, 2, 1, GroupScore::top2_sum));
    CHECK(sums.ids == std::vector<std::int32_t>{1});
}

TEST_CASE("group-limited: a better expert in a losing group is not chosen") {
    // DeepSeek-V2 (group score = max): groups {0, 1} (max 5) and {2, 3}
    // (max 4). Group 0 wins, so with k = 2 expert 1 (-10) is chosen over
    // experts 2 and 3 (4, 3).
    const std::vector<float> v2 = {5, -10, 4, 3};
    const One limited =
        route_one(v2, rule_of(2, RouterScore::softmax, false, 2, 1, GroupScore::max));
    CHECK(limited.ids == std::vector<std::int32_t>{0, 1});
    const One greedy = route_one(v2, rule_of(2, RouterScore::softmax, false));
    CHECK(greedy.ids == std::vector<std::int32_t>{0, 2});
    // The weights stay the softmax over all four experts.
    const double sum = std::exp(5.0) + std::exp(-10.0) + std::exp(4.0) + std::exp(3.0);
    CHECK(limited.weights[1] == doctest::Approx(std::exp(-10.0) / sum).epsilon(1e-6));

    // DeepSeek-V3 (top2_sum): expert 0 is the best single expert, but its
    // group sums sigmoid(5) + sigmoid(-10) ~ 0.993 < group 1's 2 sigmoid(4)
    // ~ 1.964. Expert 0 must not be chosen.
    const std::vector<float> v3 = {5, -10, 4, 4};
    const One top2 =
        route_one(v3, rule_of(1, RouterScore::sigmoid, true, 2, 1, GroupScore::top2_sum));
    CHECK(top2.ids == std::vector<std::int32_t>{2});
    CHECK(top2.weights[0] == doctest::Approx(1.0).epsilon(1e-6));
    const One by_max = route_one(v3, rule_of(1, RouterScore::sigmoid, true, 2, 1, GroupScore::max));
    CHECK(by_max.ids == std::vector<std::int32_t>{0});
}

TEST_CASE("bias changes the choice, never the weights") {
    const std::vector<float> logits = {1.0f, 0.5f, 0.0f, 0.0f};
    const std::vector<float> bias = {0.0f, 1.0f, 0.0f, 0.0f};
    const RouterRule rule = rule_of(1, RouterScore::sigmoid, false);
    CHECK(route_one(logits, rule).ids == std::vector<std::int32_t>{0});
    const One biased = route_one(logits, rule, bias.data());
    CHECK(biased.ids == std::vector<std::int32_t>{1});
    // sigmoid(0.5), not sigmoid(0.5) + 1.
    CHECK(biased.weights[0] == doctest::Approx(1.0 / (1.0 + std::exp(-0.5))).epsilon(1e-6));

    // k = 2, normalized and scaled: the weights are the two sigmoids
    // divided by their sum (+ 1e-20), times 2.5; the bias only reorders.
    const RouterRule v3ish = rule_of(2, RouterScore::sigmoid, true, 1, 1, GroupScore::max, 2.5f);
    const std::vector<float> flip = {0.0f, 0.6f, 0.0f, 0.0f};
    const One two = route_one(logits, v3ish, flip.data());
    CHECK(two.ids == std::vector<std::int32_t>{1, 0});
    const double s0 = 1.0 / (1.0 + std::exp(-1.0)), s1 = 1.0 / (1.0 + std::exp(-0.5));
    CHECK(two.weights[0] == doctest::Approx(2.5 * s1 / (s0 + s1)).epsilon(1e-6));
    CHECK(two.weights[1] == doctest::Approx(2.5 * s0 / (s0 + s1)).epsilon(1e-6));
}

TEST_CASE("extreme finite logits stay finite") {
    // The max subtraction keeps softmax finite; the losers underflow to 0
    // even in double, and so tie: expert 1 (-max) goes before expert 2 (0),
    // the header's "a tie is two equal double scores".
    const float big = std::numeric_limits<float>::max();
    const One soft = route_one({big, -big, 0.0f}, rule_of(3, RouterScore::softmax, true));
    CHECK(soft.ids == std::vector<std::int32_t>{0, 1, 2});
    CHECK(soft.weights == std::vector<float>{1.0f, 0.0f, 0.0f});
    // Sigmoids that all underflow: HF's 1e-20 turns 0 / 0 into 0.
    const One sig = route_one({-big, -big, -big},
                              rule_of(2, RouterScore::sigmoid, true, 1, 1, GroupScore::max, 2.5f));
    CHECK(sig.ids == std::vector<std::int32_t>{0, 1});
    CHECK(sig.weights == std::vector<float>{0.0f, 0.0f});
    // ... and weights of 1e-26 over 1e-20 stay as HF's: ~1e-6 each.
    const One tiny = route_one({-60, -60}, rule_of(2, RouterScore::sigmoid, true));
    const double s = std::exp(-60.0);
    CHECK(tiny.weights[0] == doctest::Approx(s / (2 * s + 1e-20)).epsilon(1e-6));
}

TEST_CASE("several tokens: each row routed on its own") {
    const std::vector<float> logits = {1, 2, 3, 3, 2, 1, 0, 5, 0};
    std::vector<std::int32_t> ids(6, -1);
    std::vector<float> weights(6, -1.0f);
    route(logits.data(), 3, 3, rule_of(2, RouterScore::softmax, true), nullptr, ids.data(),
          weights.data());
    CHECK(ids == std::vector<std::int32_t>{2, 1, 0, 1, 1, 0});
    CHECK(weights[0] == doctest::Approx(0.731059).epsilon(1e-6));
    CHECK(weights[2] == doctest::Approx(0.731059).epsilon(1e-6));
    // [0, 5, 0]: expert 1, then experts 0 and 2 tie and 0 goes first.
    CHECK(weights[4] == doctest::Approx(0.993307).epsilon(1e-6));
    CHECK(weights[5] == doctest::Approx(0.00669285).epsilon(1e-5));
}

TEST_CASE("validation: each bad argument is named, and nothing is written") {
    const std::vector<float> logits(32, 0.5f);  // up to 4 tokens x 8 experts
    const std::vector<float> bias(8, 0.0f);
    const RouterRule ok = rule_of(2, RouterScore::softmax, true);
    auto with = [&](auto change) {
        RouterRule r = ok;
        change(r);
        return r;
    };
    auto call = [&](std::int64_t tokens, std::int64_t experts, const RouterRule& rule,
                    const float* b = nullptr) {
        return [&logits, tokens, experts, rule, b](std::int32_t* ids, float* weights) {
            route(logits.data(), tokens, experts, rule, b, ids, weights);
        };
    };

    expect_refused(call(-1, 8, ok), {"route: tokens must be >= 0", "-1"});
    expect_refused(call(1, 0, ok), {"route: experts must be in [1, 2^31]", "got 0"});
    expect_refused(call(0, (std::int64_t{1} << 31) + 1, ok), {"route: experts"});
    expect_refused([&](std::int32_t* ids, float* w) { route(nullptr, 1, 8, ok, nullptr, ids, w); },
                   {"route: logits is null"});
    expect_refused(
        [&](std::int32_t*, float* w) { route(logits.data(), 1, 8, ok, nullptr, nullptr, w); },
        {"route: ids is null"});
    expect_refused(
        [&](std::int32_t* ids, float*) { route(logits.data(), 1, 8, ok, nullptr, ids, nullptr); },
        {"route: weights is null"});

    expect_refused(call(1, 8, with([](RouterRule& r) { r.top_k = 0; })), {"rule.top_k", "got 0"});
    expect_refused(call(1, 8, with([](RouterRule& r) { r.top_k = 9; })),
                   {"rule.top_k", "experts = 8", "got 9"});
    expect_refused(call(1, 8, with([](RouterRule& r) { r.score = static_cast<RouterScore>(7); })),
                   {"rule.score", "got 7"});
    expect_refused(
        call(1, 8, with([](RouterRule& r) { r.group_score = static_cast<GroupScore>(-1); })),
        {"rule.group_score", "got -1"});
    expect_refused(call(1, 8, with([](RouterRule& r) { r.groups = 0; })), {"rule.groups", "got 0"});
    expect_refused(call(1, 8, with([](RouterRule& r) { r.groups = 3; })),
                   {"rule.groups", "divide experts = 8", "got 3"});
    expect_refused(call(1, 8, with([](RouterRule& r) {
                            r.groups = 4;
                            r.top_groups = 0;
                        })),
                   {"rule.top_groups", "got 0"});
    expect_refused(call(1, 8, with([](RouterRule& r) {
                            r.groups = 4;
                            r.top_groups = 5;
                        })),
                   {"rule.top_groups", "groups = 4", "got 5"});
    // 4 groups of 2, 1 kept: 2 experts, fewer than k = 3.
    expect_refused(call(1, 8, with([](RouterRule& r) {
                            r.top_k = 3;
                            r.groups = 4;
                            r.top_groups = 1;
                        })),
                   {"rule.top_k = 3", "exceeds the 2 experts"});
    expect_refused(call(1, 8, with([](RouterRule& r) {
                            r.top_k = 1;
                            r.groups = 8;
                            r.group_score = GroupScore::top2_sum;
                        })),
                   {"top2_sum", ">= 2 experts per group"});
    expect_refused(call(1, 8, with([](RouterRule& r) { r.scaling = std::nanf(""); })),
                   {"rule.scaling", "NaN"});
    expect_refused(
        call(1, 8, with([](RouterRule& r) { r.scaling = std::numeric_limits<float>::infinity(); })),
        {"rule.scaling", "+inf"});
    // A bad rule is refused even with no tokens.
    expect_refused(call(0, 8, with([](RouterRule& r) { r.top_k = 0; })), {"rule.top_k"});

    // The product is checked before a logit is read.
    expect_refused(call(std::int64_t{1} << 62, 8, ok), {"tokens * experts", "overflows"});

    // Non-finite logits, named by token and expert, in a later token so
    // that the good first token shows nothing is written early.
    for (const float bad : {std::nanf(""), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity()}) {
        std::vector<float> rows(24, 0.25f);
        rows[2 * 8 + 5] = bad;
        expect_refused(
            [&](std::int32_t* ids, float* w) { route(rows.data(), 3, 8, ok, nullptr, ids, w); },
            {"logits[token 2, expert 5]", std::isnan(bad) ? "NaN" : "inf", "must be finite"});
    }
    for (const float bad : {std::nanf(""), -std::numeric_limits<float>::infinity()}) {
        std::vector<float> b(8, 0.0f);
        b[3] = bad;
        expect_refused(
            [&](std::int32_t* ids, float* w) { route(logits.data(), 2, 8, ok, b.data(), ids, w); },
            {"bias[expert 3]", std::isnan(bad) ? "NaN" : "-inf"});
    }

    // Overlapping buffers.
    expect_refused(
        [&](std::int32_t* ids, float*) {
            route(logits.data(), 2, 8, ok, nullptr, ids, reinterpret_cast<float*>(ids + 1));
        },
        {"ids and weights overlap"});
    std::vector<float> shared(32, 0.5f);
    expect_refused([&](std::int32_t* ids,
                       float*) { route(shared.data(), 2, 8, ok, nullptr, ids, shared.data() + 4); },
                   {"logits and weights overlap"});
    expect_refused([&](std::int32_t* ids,
                       float* w) { route(shared.data(), 2, 8, ok, shared.data() + 8, ids, w); },
                   {"logits and bias overlap"});
}

TEST_CASE("no tokens: nothing is read or written") {
    const RouterRule ok = rule_of(2, RouterScore::softmax, true);
    CHECK_NOTHROW(route(nullptr, 0, 8, ok, nullptr, nullptr, nullptr));
    std::vector<std::int32_t> ids(4, kIdSentinel);
    std::vector<float> weights(4, kWeightSentinel);
    route(nullptr, 0, 8, ok, nullptr, ids.data(), weights.data());
    CHECK(std::count(ids.begin(), ids.end(), kIdSentinel) == 4);
    CHECK(std::count(weights.begin(), weights.end(), kWeightSentinel) == 4);
}

}  // TEST_SUITE
