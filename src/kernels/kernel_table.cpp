// Picks this CPU's kernel table, once. Compiled with the baseline flags: it
// only hands out pointers into the per-ISA TUs.
#include "kernels/kernel_table.hpp"

#include "kernels/convert.hpp"
#include "kernels/f32_silu_mul.hpp"
#include "kernels/grouped_layout.hpp"
#include "kernels/silu_mul_backward.hpp"

namespace swiglu::detail {

KernelTable kernel_table(Isa isa) noexcept {
    switch (isa) {
        case Isa::scalar: return kernel_table_scalar();
#if SWIGLU_X86
        case Isa::sse2: return kernel_table_sse2();
        case Isa::avx2_fma: return kernel_table_avx2_fma();
        case Isa::avx512: return kernel_table_avx512();
#else
        default: break;
#endif
    }
    return KernelTable{};
}

Isa kernels_isa() noexcept {
    static const Isa chosen = best_isa();
    return chosen;
}

const KernelTable& kernels() noexcept {
    static const KernelTable chosen = kernel_table(kernels_isa());
    return chosen;
}

const char* kernels_isa_name() noexcept { return isa_name(kernels_isa()); }

// The free functions of f32_silu_mul.hpp, convert.hpp and grouped_layout.hpp
// (quantize_act_row): this CPU's kernels.
void silu_mul(const float* gate, const float* up, float* out, std::size_t n) noexcept {
    kernels().silu_mul(gate, up, out, n);
}

void silu_mul_backward(const float* gate, const float* up, const float* dact, float* dgate,
                       float* dup, float* act, std::size_t n) noexcept {
    kernels().silu_mul_backward(gate, up, dact, dgate, dup, act, n);
}

void to_bf16(const float* in, std::uint16_t* out, std::size_t n) noexcept {
    kernels().to_bf16(in, out, n);
}

void round_to_bf16(const float* in, float* out, std::size_t n) noexcept {
    kernels().round_to_bf16(in, out, n);
}

float quantize_row(const float* in, std::int8_t* out, std::size_t n) noexcept {
    return kernels().quantize_row(in, out, n);
}

void dequantize(const float* acc, float* out, std::size_t n, float row_scale,
                const float* column_scales) noexcept {
    kernels().dequantize(acc, out, n, row_scale, column_scales);
}

void quantize_act_row(const float* x, std::size_t n, ActBlock* out) noexcept {
    kernels().quantize_act_row(x, n, out);
}

}  // namespace swiglu::detail
