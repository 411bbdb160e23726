// The MoE shapes the moe/ benchmarks sweep: each expert a SwiGLU block of
// (d, f), E experts of which each token chooses k; and the routings those
// rows cycle through (the ggml peer's MoE rows use the same ones).
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace swiglu_bench {

struct MoeShape {
    const char* name;
    std::int64_t d;        // model width
    std::int64_t f;        // one expert's hidden width
    std::int64_t experts;  // E
    std::int64_t top_k;    // k
};

inline const std::vector<MoeShape>& moe_shapes() {
    static const std::vector<MoeShape> shapes = {
        {"qwen3moe", 2048, 768, 128, 8},  // Qwen3-30B-A3B
        {"olmoe", 2048, 1024, 64, 8},     // OLMoE-1B-7B
        {"mixtral", 4096, 14336, 8, 2},   // Mixtral 8x7B
    };
    return shapes;
}

inline const std::vector<std::int64_t>& moe_tokens() {
    static const std::vector<std::int64_t> tokens = {1, 4, 16, 128, 512};
    return tokens;
}

// Routings a row cycles through, call by call (moe_bench.cpp says why).
inline constexpr int kMoeDraws = 16;

// One call's routing: each token's k distinct experts, drawn uniformly, and
// positive weights summing to 1; the bytes of the distinct experts it reads.
struct MoeDraw {
    std::vector<std::int32_t> ids;  // tokens x k
    std::vector<float> weights;     // tokens x k
    double bytes = 0;
};

// kMoeDraws routings of `tokens` tokens, from a fixed seed per token count
// (the same on every run and machine); `expert_bytes`: one expert's bytes.
inline std::vector<MoeDraw> make_moe_draws(const MoeShape& s, std::int64_t tokens,
                                           double expert_bytes) {
    std::mt19937_64 rng(0x6d6f65u + std::uint64_t(tokens));
    std::uniform_real_distribution<float> uniform(0.1f, 1.0f);
    std::vector<MoeDraw> draws(kMoeDraws);
    std::vector<std::int32_t> order(static_cast<std::size_t>(s.experts));
    for (MoeDraw& draw : draws) {
        std::vector<bool> active(order.size(), false);
        for (std::int64_t t = 0; t < tokens; ++t) {
            std::iota(order.begin(), order.end(), 0);
            float sum = 0;
            std::vector<float> w(static_cast<std::size_t>(s.top_k));
            for (std::int64_t j = 0; j < s.top_k; ++j) {
                // A partial Fisher-Yates shuffle: k distinct experts.
                std::uniform_int_distribution<std::int64_t> pick(j, s.experts - 1);
                std::swap(order[std::size_t(j)], order[std::size_t(pick(rng))]);
                draw.ids.push_back(order[std::size_t(j)]);
                active[std::size_t(order[std::size_t(j)])] = true;
                sum += w[std::size_t(j)] = uniform(rng);
            }
            for (float v : w) draw.weights.push_back(v / sum);
        }
        draw.bytes = double(std::count(active.begin(), active.end(), true)) * expert_bytes;
    }
    return draws;
}

}  // namespace swiglu_bench
