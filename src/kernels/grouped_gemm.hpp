// The grouped formats' matmul kernels: y = x @ W for a weight tile in the
// grouped layout (grouped_layout.hpp) and activations quantised per block
// of 32 (ActBlock). One TU per ISA (grouped_gemm_<isa>.cpp), the scalar one
// the reference; the library picks this CPU's best once.
//
// Numerics, the same bits on every ISA: for each row m and column c,
//   acc = 0; for each block b in order:
//       acc = fma(float(s_b), d_w * d_x, acc)
// where s_b is the exact integer dot product of the block's quants (Q4_0:
// sum (q - 8) x), d_w the weight block's f16 scale as f32 and d_x the
// activation block's scale. No rounding but the f32 product of the scales
// and one per block in the accumulation (|s_b| < 2^20: exact in f32).
#pragma once

#include <cstdint>

#include "kernels/grouped_layout.hpp"
#include "kernels/isa_dispatch.hpp"

namespace swiglu::detail {

// The kernels of one format:
// y (rows x n, row stride ldy) = x @ tile for a (k x n) tile; x holds `rows`
// rows of ggml_blocks(k) ActBlocks, row r at x + r * x_stride.
using GroupedGemm = void (*)(const std::uint8_t* tile, std::int64_t k, std::int64_t n,
                             const ActBlock* x, std::int64_t x_stride, std::int64_t rows, float* y,
                             std::int64_t ldy) noexcept;

// The values of one block row of a (k x n) tile: inputs [32 b, min(k, 32 b
// + 32)) of every column, input 32 b + i to out + i * ldo (n floats each),
// exactly q * d (Q4_0: (q - 8) * d): both factors and their product are
// exact in f32. For the prefill path, which hands unpacked tiles to oneDNN.
using GroupedUnpack = void (*)(const std::uint8_t* tile, std::int64_t k, std::int64_t n,
                               std::int64_t b, float* out, std::int64_t ldo) noexcept;

struct GroupedFormatKernels {
    GroupedGemm gemm;
    GroupedUnpack unpack;
};

struct GroupedKernels {
    GroupedFormatKernels q8_0;
    GroupedFormatKernels q4_0;

    const GroupedFormatKernels& operator[](GroupedFormat format) const {
        return format == GroupedFormat::q8_0 ? q8_0 : q4_0;
    }
};

// The grouped family: scalar, avx2_fma, avx512_vnni (x86 builds; AVX-512
// CPUs without VNNI fall back to AVX2's).
const IsaDispatch<GroupedKernels>& grouped_dispatch() noexcept;

// The kernels of one ISA; all null where this build has none for it.
// Calling them on a CPU without that ISA is undefined.
GroupedKernels grouped_kernels(Isa isa) noexcept;
// This CPU's, chosen once, and their ISA.
const GroupedKernels& grouped_kernels() noexcept;
Isa grouped_kernels_isa() noexcept;

GroupedKernels grouped_kernels_scalar() noexcept;
GroupedKernels grouped_kernels_avx2_fma() noexcept;
// Its gemms only (unpack null): its registration adds AVX2's.
GroupedKernels grouped_kernels_avx512_vnni() noexcept;

}  // namespace swiglu::detail
