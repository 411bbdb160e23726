// Every element-wise kernel of one ISA in one table: SiLU(gate)*up, its
// backward and the conversions around the matmuls (contracts in
// f32_silu_mul.hpp, silu_mul_backward.hpp, convert.hpp and, for the grouped
// formats' activation blocks, grouped_layout.hpp). One table per ISA in
// kernel_dispatch(); the library picks this CPU's best once, tests and
// benchmarks walk them all and compare each to the scalar reference.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/isa_dispatch.hpp"

namespace swiglu::detail {

struct ActBlock;  // act_block.hpp

// A plain aggregate on purpose: the per-ISA TUs include this header, and a
// constructor of its own would be an inline function each compiles for its
// own ISA (see convert_xsimd.hpp).
struct KernelTable {
    void (*silu_mul)(const float* gate, const float* up, float* out, std::size_t n) noexcept;
    void (*silu_mul_backward)(const float* gate, const float* up, const float* dact, float* dgate,
                              float* dup, float* act, std::size_t n) noexcept;
    void (*to_bf16)(const float* in, std::uint16_t* out, std::size_t n) noexcept;
    void (*round_to_bf16)(const float* in, float* out, std::size_t n) noexcept;
    float (*quantize_row)(const float* in, std::int8_t* out, std::size_t n) noexcept;
    void (*dequantize)(const float* acc, float* out, std::size_t n, float row_scale,
                       const float* column_scales) noexcept;
    void (*quantize_act_row)(const float* in, std::size_t n, ActBlock* out) noexcept;
};

// The element-wise family: scalar, sse2, avx2_fma, avx512 (x86 builds).
const IsaDispatch<KernelTable>& kernel_dispatch() noexcept;

// The kernels of one ISA; all null if this build doesn't have it. Calling
// them on a CPU without that ISA is undefined: check isa_available first.
KernelTable kernel_table(Isa isa) noexcept;

// This CPU's best table, chosen once (a guard check plus an indirect call
// per use, no walk over the ISAs), and its ISA.
const KernelTable& kernels() noexcept;
Isa kernels_isa() noexcept;

// Each ISA's table, defined in that ISA's convert_<isa>.cpp (compiled with
// its flags; x86 builds only, but for the scalar one).
KernelTable kernel_table_scalar() noexcept;
KernelTable kernel_table_sse2() noexcept;
KernelTable kernel_table_avx2_fma() noexcept;
KernelTable kernel_table_avx512() noexcept;

}  // namespace swiglu::detail
