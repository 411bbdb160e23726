// The backward's weight gradients, dW (rows x cols) = S^T @ B over k token
// rows: an outer-product accumulation with a tile of dW in registers, on
// operands packed per span of token rows (core/backward.hpp). Ours, not
// oneDNN's: its f32 matmul on the same tiles ran slower alone, by half at
// 16 token rows, and cyber's gradients ran up to 3x slower per flop than
// dact and dx (docs/measurements.md, "the backward's weight gradients on
// our own kernel").
//
// Operands, packed from (k x n) row-major matrices:
//   S in strips of kGradientStrip columns (dW's rows): strip p holds, for
//     each token row t in order, S[t][6 p .. 6 p + 6): element (t, c) at
//     ((p k + t) 6 + c - 6 p);
//   B in panels of kPanelColumns columns (dW's columns): panel q holds
//     B[t][16 q .. 16 q + 16) for each t: element (t, c) at
//     ((q k + t) 16 + c - 16 q).
// A last strip or panel is padded with zeros.
//
// Numerics, the same bits on every ISA: for each element of dW,
//   s = 0; for t in order: s = fma(S[t][r], B[t][c], s)
//   dW[r][c] = s, or dW[r][c] + s (`add`)
// in f32. The backward sums up to kGradientSpanRows token rows per call
// and every later call adds its own sum, so a gradient's bits depend on
// that span but never on the thread count.
#pragma once

#include <cstdint>

#include "kernels/isa_dispatch.hpp"
#include "kernels/panel_gemm.hpp"

namespace swiglu::detail {

// dW rows per strip: 6 rows x 4 panels (AVX-512, 24 accumulators) or x 1
// panel as 2 vectors (AVX2, 12) keep the FMA units fed from one broadcast
// per row and one load per vector.
inline constexpr std::int64_t kGradientStrip = 6;

inline constexpr std::int64_t strip_count(std::int64_t n) {
    return (n + kGradientStrip - 1) / kGradientStrip;
}

// Column blocks [b0, b1) of width `width` (kGradientStrip or kPanelColumns)
// of a (k x n) row-major matrix with row stride `ld`, into `packed` laid
// out as above for blocks of `block_rows` >= k rows (block b at packed +
// b block_rows width). block_rows > k packs a range of a longer operand's
// token rows: pass packed + (its first row) width.
void pack_column_blocks(const float* matrix, std::int64_t ld, std::int64_t k, std::int64_t n,
                        std::int64_t width, std::int64_t b0, std::int64_t b1, float* packed,
                        std::int64_t block_rows) noexcept;

// dW's tile (rows x cols at w, row stride ldw) = or += S^T @ B over k token
// rows: `strips` at the tile's first strip, `panels` at its first panel
// (strip_count(rows) strips and panel_count(cols) panels of k rows each).
using GradientGemm = void (*)(const float* strips, const float* panels, std::int64_t k,
                              std::int64_t rows, std::int64_t cols, float* w, std::int64_t ldw,
                              bool add) noexcept;

// The gradient family: scalar, avx2_fma, avx512 (x86 builds).
const IsaDispatch<GradientGemm>& gradient_dispatch() noexcept;

// The kernel of one ISA; null where this build has none for it. Calling it
// on a CPU without that ISA is undefined.
GradientGemm gradient_gemm(Isa isa) noexcept;
// This CPU's, chosen once, and its ISA.
GradientGemm gradient_gemm() noexcept;
Isa gradient_gemm_isa() noexcept;

GradientGemm gradient_gemm_scalar() noexcept;
GradientGemm gradient_gemm_avx2_fma() noexcept;
GradientGemm gradient_gemm_avx512() noexcept;

}  // namespace swiglu::detail
