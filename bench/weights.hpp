// The deterministic weight and input generators that the ffn and baseline
// benchmarks share, so both run the same block on the same input.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "shapes.hpp"

namespace swiglu_bench {

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

}  // namespace swiglu_bench
