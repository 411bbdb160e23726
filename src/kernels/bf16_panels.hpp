// bf16 weights in panels, and the kernels that stream them: for CPUs whose
// oneDNN has no bf16 matmul (AVX2), so that bf16 weights cost 2 bytes each
// to read instead of the 4 of f32 kernels on rounded weights.
//
// Layout of a (k x n) tile: panels of kPanelColumns output columns, panel p
// holding columns [16 p, 16 p + 16) for every input in order: element (i, j)
// at ((p k + i) 16 + j - 16 p), bf16; a last panel is padded with zeros.
// A kernel reads a panel front to back, one 32-byte row per input.
//
// Numerics, the same bits on every ISA: for each row m and column c,
//   acc = 0; for i = 0 .. k-1 in order: acc = fma(x[m][i], w[i][c], acc)
// in f32, w exact (bf16 widened). x should hold bf16-rounded values for
// bf16 numerics; the kernels take any f32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/isa.hpp"

namespace swiglu::detail {

inline constexpr std::int64_t kPanelColumns = 16;

inline constexpr std::int64_t bf16_panels(std::int64_t n) {
    return (n + kPanelColumns - 1) / kPanelColumns;
}
inline constexpr std::size_t bf16_panel_tile_bytes(std::int64_t k, std::int64_t n) {
    return static_cast<std::size_t>(bf16_panels(n) * kPanelColumns * k) * sizeof(std::uint16_t);
}

// Rounds a (k x n) row-major f32 tile to bf16 (nearest even) and lays it
// out in panels: `tile` holds bf16_panel_tile_bytes(k, n). Load time only.
void pack_bf16_panels(const float* plain, std::int64_t k, std::int64_t n,
                      std::uint16_t* tile) noexcept;

// y (rows x n, row stride ldy) = x (rows x k, row stride ldx) @ tile.
using Bf16PanelGemm = void (*)(const std::uint16_t* tile, std::int64_t k, std::int64_t n,
                               const float* x, std::int64_t ldx, std::int64_t rows, float* y,
                               std::int64_t ldy) noexcept;
// The tile as (k x n) row-major f32, exactly: for oneDNN's f32 kernels.
using Bf16PanelUnpack = void (*)(const std::uint16_t* tile, std::int64_t k, std::int64_t n,
                                 float* out) noexcept;

struct Bf16PanelKernels {
    Bf16PanelGemm gemm = nullptr;
    Bf16PanelUnpack unpack = nullptr;
    explicit operator bool() const { return gemm != nullptr; }
};

// The kernels of one ISA; empty where this build has none for it. Calling
// them on a CPU without that ISA is undefined.
Bf16PanelKernels bf16_panel_kernels(Isa isa) noexcept;
// The ISA whose kernels run on a CPU whose best ISA is `isa` (AVX-512 CPUs
// run the AVX2 ones; below AVX2, scalar).
Isa bf16_panel_kernels_isa(Isa isa) noexcept;
// This CPU's, chosen once, and their ISA.
const Bf16PanelKernels& bf16_panel_kernels() noexcept;
Isa bf16_panel_kernels_isa() noexcept;

Bf16PanelKernels bf16_panel_kernels_scalar() noexcept;
Bf16PanelKernels bf16_panel_kernels_avx2_fma() noexcept;

}  // namespace swiglu::detail
