// The block of 32 activations the grouped kernels read (grouped_gemm.hpp),
// on its own so that the per-ISA conversion TUs that make it
// (convert_xsimd.hpp) need no more than this.
#pragma once

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

}  // namespace swiglu::detail
