// Shapes, dtypes and token counts the benchmarks sweep. (The weights and
// inputs for a shape: weights.hpp.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <vector>

#include "swiglu/swiglu.hpp"

namespace swiglu_bench {

// Bytes of one packed weight: 4 (f32), 2 (bf16), 1 (int8; the per-channel
// scales are negligible), 34 / 32 (q8_0) and 18 / 32 (q4_0): GGUF's blocks
// of 32 with their f16 scale.
inline double bytes_per_weight(swiglu::Dtype dtype) {
    switch (dtype) {
        case swiglu::Dtype::bf16: return 2.0;
        case swiglu::Dtype::int8: return 1.0;
        case swiglu::Dtype::q8_0: return 34.0 / 32.0;
        case swiglu::Dtype::q4_0: return 18.0 / 32.0;
        case swiglu::Dtype::f32: break;
    }
    return 4.0;
}

// GGUF's grouped formats: their baseline is the f32 one on their rounded
// weights (baseline.hpp), their compute peak the bf16 one.
inline bool is_grouped(swiglu::Dtype dtype) {
    return dtype == swiglu::Dtype::q8_0 || dtype == swiglu::Dtype::q4_0;
}

struct Shape {
    const char* name;
    std::int64_t d;  // model width
    std::int64_t f;  // hidden width

    // FLOPs of one call for `tokens` rows: three (tokens x d x f) matmuls
    // (int8: integer multiply-adds, counted the same way).
    double flops(std::int64_t tokens) const { return 6.0 * double(tokens) * double(d) * double(f); }
    // Weight bytes one call streams: 3 d f weights of `dtype`.
    double weight_bytes(swiglu::Dtype dtype = swiglu::Dtype::f32) const {
        return 3.0 * double(d) * double(f) * bytes_per_weight(dtype);
    }
};

inline const std::vector<Shape>& all_shapes() {
    static const std::vector<Shape> shapes = {
        {"glass", 128, 341},
        {"cyber", 384, 1024},
        {"llama7b", 4096, 11008},
    };
    return shapes;
}

inline const std::vector<swiglu::Dtype>& all_dtypes() {
    static const std::vector<swiglu::Dtype> dtypes(std::begin(swiglu::kDtypes),
                                                   std::end(swiglu::kDtypes));
    return dtypes;
}

inline const std::vector<std::int64_t>& all_tokens() {
    static const std::vector<std::int64_t> tokens = {1, 4, 8, 16, 32, 64, 128, 512};
    return tokens;
}

inline constexpr std::int64_t kMaxTokens = 512;

}  // namespace swiglu_bench
