// Weights in panels, and the kernels that stream them, for the row tiles
// oneDNN 2.6 serves poorly: f32 decode and batched decode (without AVX-512
// it has no brgemm, and its gemm:jit reads row-major tiles 128 bytes at a
// time; with it, its brgemm tiles decode slower than these kernels), and bf16 where it has no bf16
// matmul at all (then bf16 weights cost 2 bytes each to read, not 4).
//
// Layout of a (k x n) tile: panels of kPanelColumns output columns, panel p
// holding columns [16 p, 16 p + 16) for every input in order: element (i, j)
// at ((p k + i) 16 + j - 16 p), as f32 or bf16 (PanelType); a last panel is
// padded with zeros. A kernel reads a panel front to back: one 64-byte (f32)
// or 32-byte (bf16) row per input.
//
// Numerics, the same bits on every ISA: for each row m and column c, over
// blocks of kPanelBlock inputs in order (the last one shorter),
//   s = 0; for i in the block, in order: s = fma(x[m][i], w[i][c], s)
//   y[m][c] = s for the first block, y[m][c] + s after it
// in f32, w exact (bf16 widened). One chain of k fmas put cyber's block
// (k = 1024) over the 1e-6 of max |y| that the seed modules are held to;
// blocks bring it well under (docs/measurements.md, "The panel kernels'
// accuracy: blocks of 128 inputs"). For bf16 numerics x
// should hold bf16-rounded values; the kernels take any f32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/isa_dispatch.hpp"

namespace swiglu::detail {

enum class PanelType { f32, bf16 };

inline constexpr std::int64_t kPanelColumns = 16;
// Inputs per block of the accumulation (numerics above).
inline constexpr std::int64_t kPanelBlock = 128;
// How far ahead (bytes) a kernel's only pass over a panel (decode)
// prefetches it: DRAM stays busy though the pass does few fmas per byte.
inline constexpr std::int64_t kPanelPrefetchBytes = 1024;

inline constexpr std::int64_t panel_count(std::int64_t n) {
    return (n + kPanelColumns - 1) / kPanelColumns;
}
inline constexpr std::size_t panel_element_bytes(PanelType type) {
    return type == PanelType::f32 ? 4 : 2;
}
inline constexpr std::size_t panel_tile_bytes(PanelType type, std::int64_t k, std::int64_t n) {
    return static_cast<std::size_t>(panel_count(n) * kPanelColumns * k) * panel_element_bytes(type);
}

// Lays out a (k x n) row-major f32 tile in panels, bf16 rounded to nearest
// even: `tile` holds panel_tile_bytes(type, k, n). Load time only.
void pack_panels(PanelType type, const float* plain, std::int64_t k, std::int64_t n,
                 void* tile) noexcept;

// The inverse of pack_panels for f32 panels: the (k x n) row-major tile.
void unpack_f32_panels(const void* tile, std::int64_t k, std::int64_t n, float* plain) noexcept;

// y (rows x n, row stride ldy) = x (rows x k, row stride ldx) @ tile.
using PanelGemm = void (*)(const void* tile, std::int64_t k, std::int64_t n, const float* x,
                           std::int64_t ldx, std::int64_t rows, float* y,
                           std::int64_t ldy) noexcept;
// The same over inputs [i0, i1) of the tile only (0 <= i0 < i1 <= k, i0 a
// multiple of kPanelBlock), x's columns i0 .. i1 (x still points at column
// 0): the blocks from i0 on, as above, y = their sums when i0 == 0, else y +
// them. So calls over consecutive ranges from 0 to k give the bits of one
// PanelGemm call (the backward's dx runs its inputs in slices).
using PanelGemmRange = void (*)(const void* tile, std::int64_t k, std::int64_t i0, std::int64_t i1,
                                std::int64_t n, const float* x, std::int64_t ldx, std::int64_t rows,
                                float* y, std::int64_t ldy) noexcept;
struct PanelTypeKernels {
    PanelGemm gemm = nullptr;
    PanelGemmRange range = nullptr;
    explicit operator bool() const { return gemm != nullptr; }
};

struct PanelKernels {
    PanelTypeKernels f32, bf16;
    const PanelTypeKernels& operator[](PanelType type) const {
        return type == PanelType::f32 ? f32 : bf16;
    }
    explicit operator bool() const { return static_cast<bool>(f32); }
};

// The panel family: scalar, avx2_fma, avx512 (x86 builds).
const IsaDispatch<PanelKernels>& panel_dispatch() noexcept;

// The kernels of one ISA; empty where this build has none for it. Calling
// them on a CPU without that ISA is undefined.
PanelKernels panel_kernels(Isa isa) noexcept;
// This CPU's, chosen once, and their ISA.
const PanelKernels& panel_kernels() noexcept;
Isa panel_kernels_isa() noexcept;

PanelKernels panel_kernels_scalar() noexcept;
PanelKernels panel_kernels_avx2_fma() noexcept;
PanelKernels panel_kernels_avx512() noexcept;

}  // namespace swiglu::detail
