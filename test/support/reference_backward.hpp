// The block's backward in double precision: the ground truth of
// test_backward.cpp, written from the formulas (core/backward.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include <swiglu/swiglu.hpp>

namespace swiglu::test {

struct ReferenceGradients {
    std::vector<double> dx;              // (tokens, d)
    std::vector<double> gate, up, down;  // each as its weight is stored
};

ReferenceGradients reference_backward(const float* x, const float* dy, std::int64_t tokens,
                                      const WeightView& gate, const WeightView& up,
                                      const WeightView& down);

// The tolerance of every f32 gradient relative to its max |value|: each is
// at most two dot products deep, of lengths among d, 2f (dx) and tokens
// (the weight gradients), so f32_tolerance's reasoning gives 16 u times the
// sum of their square roots.
double backward_tolerance(std::int64_t d, std::int64_t f, std::int64_t tokens);

}  // namespace swiglu::test
