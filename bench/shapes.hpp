// Shapes and token counts the benchmarks sweep. (The weights and inputs for
// a shape: weights.hpp; the dtypes and their bytes: bench_dtypes.hpp.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "swiglu/swiglu.hpp"

namespace swiglu_bench {

struct Shape {
    const char* name;
    std::int64_t d;  // model width
    std::int64_t f;  // hidden width

    // FLOPs of one call for `tokens` rows: three (tokens x d x f) matmuls
    // (int8: integer multiply-adds, counted the same way).
    double flops(std::int64_t tokens) const { return 6.0 * double(tokens) * double(d) * double(f); }
};

inline const std::vector<Shape>& all_shapes() {
    static const std::vector<Shape> shapes = {
        {"glass", 128, 341},
        {"cyber", 384, 1024},
        {"llama7b", 4096, 11008},
    };
    return shapes;
}

inline const std::vector<std::int64_t>& all_tokens() {
    static const std::vector<std::int64_t> tokens = {1, 4, 8, 16, 32, 64, 128, 512};
    return tokens;
}

inline constexpr std::int64_t kMaxTokens = 512;

}  // namespace swiglu_bench
