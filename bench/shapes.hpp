// Shapes, token counts and thread counts the benchmarks sweep, plus the
// deterministic weight and input generators that the ffn and baseline
// benchmarks share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace swiglu_bench {

struct Shape {
    const char* name;
    std::int64_t d;  // model width
    std::int64_t f;  // hidden width

    // FLOPs of one call for `tokens` rows: three (tokens x d x f) matmuls.
    double flops(std::int64_t tokens) const { return 6.0 * double(tokens) * double(d) * double(f); }
    // f32 weight bytes one call streams: 3 d f floats.
    double weight_bytes() const { return 3.0 * double(d) * double(f) * 4.0; }
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
// from a small Ffn built at start-up; `error` is set (and threads falls back
// to this process's CPU affinity count) when building it failed.
struct LibraryInfo {
    int threads_default = 1;
    std::string matmul, activation, error;
};
LibraryInfo library_info();

// Thread counts of the ffn/baseline benchmarks: 1, 2, and the default when > 2.
std::vector<int> bench_thread_counts(int threads_default);

// Registers baseline/<shape>/f32/M:<tokens>/T:<threads> and
// ffn/<shape>/f32/M:<tokens>/T:<threads>: shape by shape (llama7b last,
// skipped when `quick`), then by threads, then by tokens, baseline before ffn.
void register_ffn_benchmarks(bool quick, const std::vector<int>& threads);

// --profile: glass, cyber and llama7b (unless `quick`) at 1, 16 and 512
// tokens on all cores, ffn and baseline; prints one table. Returns the exit
// status.
int run_profile(bool quick);

}  // namespace swiglu_bench
