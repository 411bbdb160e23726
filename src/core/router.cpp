// MoE routers (swiglu/moe.hpp): route().
//
// Every score is computed in double and rounded to float once, at the end.
// A router is E exps per token, nothing next to the experts it feeds, and
// double buys two things a float pipeline would not: the weights are the
// float nearest the exact value (up to the tiny double error), whatever the
// order of the sums, and ranks are those of scores that keep apart what
// float would merge (float's sigmoid is 1 from a logit of ~17 on, double's
// from ~37; float's softmax underflows 103 below the max, double's 745).
#include <swiglu/moe.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "common/messages.hpp"
#include "core/router_scratch.hpp"

namespace swiglu {

namespace {

using detail::invalid;

// ids are int32, so E - 1 must be one.
constexpr std::int64_t kMaxExperts = std::int64_t{1} << 31;

// HF's DeepSeek-V3 adds it to the denominator so that k sigmoids that all
// underflow divide to 0, not NaN; softmax's k largest sum to >= 1/E, so
// Mixtral's and Qwen's plain sums need none.
constexpr double kSigmoidSumEpsilon = 1e-20;

std::string number_text(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+inf" : "-inf";
    char text[32];
    std::snprintf(text, sizeof text, "%.9g", v);
    return text;
}

void check_rule(const RouterRule& rule, std::int64_t experts) {
    const std::string e = std::to_string(experts);
    if (rule.top_k < 1 || rule.top_k > experts)
        invalid("route: rule.top_k must be in [1, experts = " + e + "] (got " +
                std::to_string(rule.top_k) + ")");
    if (rule.score != RouterScore::softmax && rule.score != RouterScore::sigmoid)
        invalid("route: rule.score must be RouterScore::softmax or sigmoid (got " +
                std::to_string(static_cast<int>(rule.score)) + ")");
    if (rule.group_score != GroupScore::max && rule.group_score != GroupScore::top2_sum)
        invalid("route: rule.group_score must be GroupScore::max or top2_sum (got " +
                std::to_string(static_cast<int>(rule.group_score)) + ")");
    if (rule.groups < 1 || experts % rule.groups != 0)
        invalid("route: rule.groups must be >= 1 and divide experts = " + e + " (got " +
                std::to_string(rule.groups) + ")");
    const std::int64_t group_size = experts / rule.groups;
    if (rule.top_groups < 1 || rule.top_groups > rule.groups)
        invalid("route: rule.top_groups must be in [1, groups = " + std::to_string(rule.groups) +
                "] (got " + std::to_string(rule.top_groups) + ")");
    if (rule.top_k > rule.top_groups * group_size)
        invalid("route: rule.top_k = " + std::to_string(rule.top_k) + " exceeds the " +
                std::to_string(rule.top_groups * group_size) + " experts of the top_groups = " +
                std::to_string(rule.top_groups) + " kept groups of " + std::to_string(group_size));
    // A top-2 of one score is undefined (HF's topk(2) raises on it).
    if (rule.groups > 1 && rule.group_score == GroupScore::top2_sum && group_size < 2)
        invalid("route: rule.group_score top2_sum needs >= 2 experts per group (groups = " +
                std::to_string(rule.groups) + " of experts = " + e + ")");
    if (!std::isfinite(rule.scaling))
        invalid("route: rule.scaling must be finite (got " + number_text(rule.scaling) + ")");
}

struct Range {
    const char* name;
    const void* data;
    std::uintptr_t bytes;
};

// Any overlap means an output would change an input, or the other output,
// halfway through.
void check_overlaps(std::initializer_list<Range> ranges) {
    for (auto i = ranges.begin(); i != ranges.end(); ++i)
        for (auto j = i + 1; j != ranges.end(); ++j) {
            if (!i->data || !j->data) continue;
            const auto a = reinterpret_cast<std::uintptr_t>(i->data),
                       b = reinterpret_cast<std::uintptr_t>(j->data);
            if (a < b + j->bytes && b < a + i->bytes)
                invalid(std::string("route: ") + i->name + " and " + j->name + " overlap");
        }
}

// Checks every argument and value before anything is written; returns false
// when there is nothing to do.
bool check_route(const float* logits, std::int64_t tokens, std::int64_t experts,
                 const RouterRule& rule, const float* bias, const std::int32_t* ids,
                 const float* weights) {
    if (tokens < 0) invalid("route: tokens must be >= 0 (got " + std::to_string(tokens) + ")");
    if (experts < 1 || experts > kMaxExperts)
        invalid("route: experts must be in [1, 2^31] (got " + std::to_string(experts) + ")");
    // The rule is checked even for no tokens: a bad one is a bug in the
    // caller's config, whatever the batch.
    check_rule(rule, experts);
    if (tokens == 0) return false;
    if (!logits) invalid("route: logits is null");
    if (!ids) invalid("route: ids is null");
    if (!weights) invalid("route: weights is null");
    std::int64_t elems = 0;
    if (__builtin_mul_overflow(tokens, experts, &elems) ||
        elems > std::numeric_limits<std::int64_t>::max() / std::int64_t{sizeof(float)})
        invalid("route: tokens * experts = " + std::to_string(tokens) + " * " +
                std::to_string(experts) + " overflows");
    const auto k = static_cast<std::uintptr_t>(rule.top_k);
    const auto t = static_cast<std::uintptr_t>(tokens), e = static_cast<std::uintptr_t>(experts);
    check_overlaps({{"logits", logits, t * e * sizeof(float)},
                    {"bias", bias, e * sizeof(float)},
                    {"ids", ids, t * k * sizeof(std::int32_t)},
                    {"weights", weights, t * k * sizeof(float)}});
    if (bias)
        for (std::int64_t i = 0; i < experts; ++i)
            if (!std::isfinite(bias[i]))
                invalid("route: bias[expert " + std::to_string(i) + "] is " + number_text(bias[i]) +
                        "; it must be finite");
    // A NaN ranks nowhere, and softmax or sigmoid of +-inf is NaN or a hard
    // 0 / 1 that no trained router produces: a non-finite logit is a bug
    // upstream, better named than routed.
    for (std::int64_t r = 0; r < tokens; ++r)
        for (std::int64_t i = 0; i < experts; ++i) {
            const float v = logits[r * experts + i];
            if (!std::isfinite(v))
                invalid("route: logits[token " + std::to_string(r) + ", expert " +
                        std::to_string(i) + "] is " + number_text(v) + "; it must be finite");
        }
    return true;
}

// The ranking of experts and of groups: higher key first, ties to the lower
// id. A strict total order (keys are never NaN), so the result does not
// depend on the sort's algorithm.
struct RanksBefore {
    const double* key;
    bool operator()(std::int32_t a, std::int32_t b) const {
        return key[a] > key[b] || (key[a] == key[b] && a < b);
    }
};

void route_token(const float* row, std::int64_t experts, const RouterRule& rule, const float* bias,
                 detail::RouteScratch& s, std::int32_t* ids, float* weights) {
    double* score = s.score.data();
    double* key = s.key.data();
    if (rule.score == RouterScore::softmax) {
        // Subtracting the max keeps every exp in (0, 1], so the sum is in
        // [1, E] and neither overflows nor vanishes.
        const float max = *std::max_element(row, row + experts);
        double sum = 0.0;
        for (std::int64_t i = 0; i < experts; ++i) {
            score[i] = std::exp(static_cast<double>(row[i]) - static_cast<double>(max));
            sum += score[i];
        }
        for (std::int64_t i = 0; i < experts; ++i) score[i] /= sum;
    } else {
        for (std::int64_t i = 0; i < experts; ++i)
            score[i] = 1.0 / (1.0 + std::exp(-static_cast<double>(row[i])));
    }
    for (std::int64_t i = 0; i < experts; ++i)
        key[i] = bias ? score[i] + static_cast<double>(bias[i]) : score[i];

    std::int64_t candidates = 0;
    if (rule.groups > 1 && rule.top_groups < rule.groups) {
        const std::int64_t size = experts / rule.groups;
        for (std::int64_t g = 0; g < rule.groups; ++g) {
            const double* k = key + g * size;
            double first = k[0], second = -std::numeric_limits<double>::infinity();
            for (std::int64_t i = 1; i < size; ++i) {
                if (k[i] > first) {
                    second = first;
                    first = k[i];
                } else if (k[i] > second) {
                    second = k[i];
                }
            }
            s.group_key[g] = rule.group_score == GroupScore::max ? first : first + second;
            s.group_order[g] = static_cast<std::int32_t>(g);
        }
        std::partial_sort(s.group_order.begin(), s.group_order.begin() + rule.top_groups,
                          s.group_order.begin() + rule.groups, RanksBefore{s.group_key.data()});
        std::fill(s.kept.begin(), s.kept.begin() + rule.groups, 0);
        for (std::int64_t j = 0; j < rule.top_groups; ++j) s.kept[s.group_order[j]] = 1;
        // Experts of the other groups are left out, not given a score of 0
        // as HF's masked_fill does: the two agree whenever the k best kept
        // keys are above 0 (softmax's always are, until float underflows),
        // and only this one keeps the header's promise when a bias makes
        // them negative.
        for (std::int64_t g = 0; g < rule.groups; ++g)
            if (s.kept[g])
                for (std::int64_t i = g * size; i < (g + 1) * size; ++i)
                    s.order[candidates++] = static_cast<std::int32_t>(i);
    } else {
        for (std::int64_t i = 0; i < experts; ++i) s.order[i] = static_cast<std::int32_t>(i);
        candidates = experts;
    }
    const std::int64_t k = rule.top_k;
    std::partial_sort(s.order.begin(), s.order.begin() + k, s.order.begin() + candidates,
                      RanksBefore{key});

    double denominator = 1.0;
    if (rule.normalize) {
        double sum = 0.0;
        for (std::int64_t j = 0; j < k; ++j) sum += score[s.order[j]];
        denominator = rule.score == RouterScore::sigmoid ? sum + kSigmoidSumEpsilon : sum;
    }
    const double scaling = rule.scaling;
    for (std::int64_t j = 0; j < k; ++j) {
        ids[j] = s.order[j];
        weights[j] = static_cast<float>(score[s.order[j]] / denominator * scaling);
    }
}

}  // namespace

void detail::route_into(const float* logits, std::int64_t tokens, std::int64_t experts,
                        const RouterRule& rule, const float* bias, std::int32_t* ids,
                        float* weights, RouteScratch& s) {
    if (!check_route(logits, tokens, experts, rule, bias, ids, weights)) return;
    try {
        // resize() to the size a vector has is no allocation: a layer's
        // calls after its first route on the arrays of its first.
        const auto e = static_cast<std::size_t>(experts);
        const auto g = static_cast<std::size_t>(rule.groups);
        s.score.resize(std::max(s.score.size(), e));
        s.key.resize(std::max(s.key.size(), e));
        s.order.resize(std::max(s.order.size(), e));
        s.group_key.resize(std::max(s.group_key.size(), g));
        s.group_order.resize(std::max(s.group_order.size(), g));
        s.kept.resize(std::max(s.kept.size(), g));
    } catch (const std::bad_alloc&) {
        throw Error(Status::out_of_memory,
                    "route: out of memory for " + std::to_string(experts) + " experts' scores");
    }
    const std::int64_t k = rule.top_k;
    for (std::int64_t t = 0; t < tokens; ++t)
        route_token(logits + t * experts, experts, rule, bias, s, ids + t * k, weights + t * k);
}

void route(const float* logits, std::int64_t tokens, std::int64_t experts, const RouterRule& rule,
           const float* bias, std::int32_t* ids, float* weights) {
    detail::RouteScratch scratch;
    detail::route_into(logits, tokens, experts, rule, bias, ids, weights, scratch);
}

}  // namespace swiglu
