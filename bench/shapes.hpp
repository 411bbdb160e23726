// Shapes, dtypes, token counts and thread counts the benchmarks sweep, plus
// the deterministic weight and input generators that the ffn and baseline
// benchmarks share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "swiglu/swiglu.hpp"

namespace swiglu_bench {

// Bytes of one packed weight: 4 (f32), 2 (bf16), 1 (int8; the per-channel
// scales are negligible).
inline double bytes_per_weight(swiglu::Dtype dtype) {
    switch (dtype) {
        case swiglu::Dtype::bf16: return 2.0;
        case swiglu::Dtype::int8: return 1.0;
        case swiglu::Dtype::f32: break;
    }
    return 4.0;
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
    static const std::vector<swiglu::Dtype> dtypes = {swiglu::Dtype::f32, swiglu::Dtype::bf16,
                                                      swiglu::Dtype::int8};
    return dtypes;
}

inline const std::vector<std::int64_t>& all_tokens() {
    static const std::vector<std::int64_t> tokens = {1, 16, 64, 128, 512};
    return tokens;
}

inline constexpr std::int64_t kMaxTokens = 512;

// f32 weights of one block, PyTorch (out, in) layout:
//   gate, up: (f, d);  down: (d, f).
struct ShapeWeights {
    Shape shape;
    std::unique_ptr<float[]> gate, up, down;
};

// Random weights, uniform in +-1/sqrt(in), from a fixed seed (the same values
// on every run and every machine).
std::unique_ptr<ShapeWeights> make_weights(const Shape& shape);

// Random activations, uniform in [-1, 1], from a fixed seed.
std::vector<float> make_input(std::int64_t rows, std::int64_t cols, std::uint64_t seed);

// ---- ffn_bench.cpp, called by main.cpp

// What swiglu::Options{threads = 0} resolves to and what runs underneath,
// from small Ffns (one per dtype) built at start-up; `error` is set (and
// threads falls back to this process's CPU affinity count) when building the
// f32 one failed. `matmul` and `dtype_error` are per dtype (indexed by
// int(swiglu::Dtype)): the implementation, or why that dtype can't run here.
struct LibraryInfo {
    int threads_default = 1;
    std::string matmul, activation, error;
    std::string dtype_matmul[3], dtype_error[3];
};
LibraryInfo library_info();

// Thread counts of the ffn/baseline benchmarks: 1, 2, and the default when > 2.
std::vector<int> bench_thread_counts(int threads_default);

// Registers baseline/<shape>/<dtype>/M:<tokens>/T:<threads> and
// ffn/<shape>/<dtype>/M:<tokens>/T:<threads> for each of `dtypes`: shape by
// shape (llama7b last, skipped when `quick`), then by dtype, then by threads,
// then by tokens, baseline before ffn. This order keeps one shape's weights,
// one Ffn and one baseline alive at a time, each built as rarely as possible.
void register_ffn_benchmarks(bool quick, const std::vector<int>& threads,
                             const std::vector<swiglu::Dtype>& dtypes);

// --profile: glass, cyber and llama7b (unless `quick`) at 1, 16 and 512
// tokens on all cores, ffn and baseline, for each of `dtypes`; prints one
// table. Returns the exit status.
int run_profile(bool quick, const std::vector<swiglu::Dtype>& dtypes);

}  // namespace swiglu_bench
