// The block in double precision, written to be read at a glance: the ground
// truth every test compares against.
#pragma once

#include <cstdint>
#include <vector>

#include <swiglu/swiglu.hpp>

namespace swiglu::test {

double silu(double z);
// W[in][out] as x @ W sees it, whatever the storage layout.
double weight(const WeightView& w, std::int64_t in, std::int64_t out);
// y (tokens x d) for x (tokens x d).
std::vector<double> reference_ffn(const float* x, std::int64_t tokens, const WeightView& gate,
                                  const WeightView& up, const WeightView& down);

// Random weights of one block, stored in `layout`, values ~ U(-1, 1)/sqrt(in).
struct RandomBlock {
    RandomBlock(std::int64_t d, std::int64_t f, Layout layout, unsigned seed);
    std::int64_t d, f;
    std::vector<float> gate, up, down;
    WeightView gate_view() const;
    WeightView up_view() const;
    WeightView down_view() const;
    Layout layout;
};

std::vector<float> random_input(std::int64_t tokens, std::int64_t d, unsigned seed);
// n values ~ U(-scale, scale), reproducible from `seed`.
std::vector<float> uniform(std::size_t n, float scale, unsigned seed);

// max |got - ref| / max |ref| (0 when both are 0).
double relative_error(const std::vector<float>& got, const std::vector<double>& ref);

// The f32 block's tolerance relative to max|y|. Each output is two dot
// products deep (length d, then f); f32 rounding (u = 2^-24) accumulates like
// a random walk, ~u sqrt(K) relative to the magnitudes summed, and the
// activation adds ~3e-7. 16 u (sqrt(d) + sqrt(f)) leaves 4x or more over what
// is measured on random data (see the MESSAGE in test_block's sweep) while
// still catching any real bug: a wrong tile, row or layout shows up as an
// O(1) error.
double f32_tolerance(std::int64_t d, std::int64_t f);

}  // namespace swiglu::test
