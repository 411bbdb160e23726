// The MoE shapes the moe/ benchmarks sweep: each expert a SwiGLU block of
// (d, f), E experts of which each token chooses k.
#pragma once

#include <cstdint>
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

}  // namespace swiglu_bench
