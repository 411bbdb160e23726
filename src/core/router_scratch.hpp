// route()'s working arrays, for callers that route again and again (a
// MoeLayer's every call): kept in the caller's scratch, so that routing
// allocates nothing once they are sized for a layer's E and groups.
#pragma once

#include <cstdint>
#include <vector>

#include <swiglu/moe.hpp>

namespace swiglu::detail {

struct RouteScratch {
    std::vector<double> score;        // softmax / sigmoid, per expert
    std::vector<double> key;          // score + bias: what ranks the experts
    std::vector<std::int32_t> order;  // candidates, then the top k first
    std::vector<double> group_key;
    std::vector<std::int32_t> group_order;
    std::vector<char> kept;  // per group
};

// route() (swiglu/moe.hpp), its checks and errors included, with its
// arrays in `scratch`: grown to E and the rule's groups when smaller, never
// shrunk, so a second call for the same layer allocates nothing.
void route_into(const float* logits, std::int64_t tokens, std::int64_t experts,
                const RouterRule& rule, const float* bias, std::int32_t* ids, float* weights,
                RouteScratch& scratch);

}  // namespace swiglu::detail
