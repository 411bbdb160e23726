// The K-quants' matmul kernels: y = x @ W for a weight tile of Q4_K, Q5_K or
// Q6_K super-blocks in our layout (kquant_layout.hpp) and activations
// quantised per block of 256 (ActBlockK, llama.cpp's Q8_K). One TU per ISA
// (kquant_gemm_<isa>.cpp), the scalar one the reference; the library picks
// this CPU's best once.
//
// Numerics, the same bits on every ISA: for each row m and column c,
//   acc = 0; for each super-block b in order, a = row m's ActBlockK b:
//     Q4_K, Q5_K (8 sub-blocks i of 32 inputs, scale sc_i, min m_i):
//       isum = sum_i sc_i * (sum over sub-block i of q * a.qs)
//       msum = sum_i m_i * (a.bsums[2 i] + a.bsums[2 i + 1])
//       acc = fma(float(isum), d * a.d, acc)
//       acc = fma(float(-msum), dmin * a.d, acc)
//     Q6_K (16 sub-blocks i of 16 inputs, s8 scale sc_i):
//       isum = sum_i sc_i * (sum over sub-block i of q * a.qs - 32 * a.bsums[i])
//       acc = fma(float(isum), d * a.d, acc)
// where every sum is an exact 32-bit integer (|isum| < 2^29), d and dmin
// the column's f16 scales as f32, and float() rounds to nearest even. The
// value each weight stands for is GGUF's: d * sc * q - dmin * m (Q4_K,
// Q5_K), d * sc * (q - 32) (Q6_K).
#pragma once

#include <cstdint>

#include "kernels/grouped_layout.hpp"
#include "kernels/isa_dispatch.hpp"

namespace swiglu::detail {

// y (rows x n, row stride ldy) = x @ tile for a (k x n) tile; x holds `rows`
// rows of format_blocks(format, k) ActBlockKs, row r at x + r * x_stride.
using KQuantGemm = void (*)(const std::uint8_t* tile, std::int64_t k, std::int64_t n,
                            const ActBlockK* x, std::int64_t x_stride, std::int64_t rows, float* y,
                            std::int64_t ldy) noexcept;

struct KQuantKernels {
    KQuantGemm q4_k = nullptr;
    KQuantGemm q5_k = nullptr;
    KQuantGemm q6_k = nullptr;

    KQuantGemm operator[](GroupedFormat format) const {
        return format == GroupedFormat::q4_k ? q4_k : format == GroupedFormat::q5_k ? q5_k : q6_k;
    }
};

// The family: scalar, avx2_fma, avx512_vnni (x86 builds; AVX-512 CPUs
// without VNNI fall back to AVX2's).
const IsaDispatch<KQuantKernels>& kquant_dispatch() noexcept;

// The kernels of one ISA; all null where this build has none for it.
KQuantKernels kquant_kernels(Isa isa) noexcept;
// This CPU's, chosen once, and their ISA.
const KQuantKernels& kquant_kernels() noexcept;
Isa kquant_kernels_isa() noexcept;

KQuantKernels kquant_kernels_scalar() noexcept;
KQuantKernels kquant_kernels_avx2_fma() noexcept;
KQuantKernels kquant_kernels_avx512_vnni() noexcept;

}  // namespace swiglu::detail
