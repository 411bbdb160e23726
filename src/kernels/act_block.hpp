// The block of 32 activations the grouped kernels read (grouped_gemm.hpp),
// on its own so that the per-ISA conversion TUs that make it
// (convert_xsimd.hpp) need no more than this.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/ggml_blocks.hpp"

namespace swiglu::detail {

// s8 values with an f32 scale (ggml's Q8_0 activations keep an f16 one; f32
// loses less) and the sum of the s8 values (Q4_0's kernels fold its -8
// offset in with it: sum (q - 8) x = sum q x - 8 sum x).
struct ActBlock {
    std::int8_t qs[kGgmlBlock];
    float d;
    std::int32_t sum;
};
static_assert(sizeof(ActBlock) == 40, "ActBlock is 40 bytes");

// The K-quants' activations (llama.cpp's Q8_K): 256 s8 values with one f32
// scale, d = max|x| / 127 and q = round-even(x * 127 / max|x|) as
// quantize_row (convert.hpp) gives them (NaN or +-inf in the block: d = NaN,
// q = 0), and the sums of each 16 consecutive q, with which the kernels
// take out the weights' mins and offsets (kquant_gemm.hpp).
inline constexpr std::size_t kActBlockKValues = 256;
struct ActBlockK {
    std::int8_t qs[kActBlockKValues];
    float d;
    std::int16_t bsums[kActBlockKValues / 16];
};
static_assert(sizeof(ActBlockK) == 292, "ActBlockK is 292 bytes");

}  // namespace swiglu::detail
