// Registers the element-wise kernels of each ISA. Compiled with the baseline flags: it
// only hands out pointers into the per-ISA TUs.
#include "kernels/kernel_table.hpp"

#include "kernels/convert.hpp"
#include "kernels/f32_silu_mul.hpp"
#include "kernels/grouped_layout.hpp"
#include "kernels/silu_mul_backward.hpp"

namespace swiglu::detail {

namespace {
constexpr IsaEntry<KernelTable> kEntries[] = {
    {Isa::scalar, kernel_table_scalar},
#if SWIGLU_X86
    {Isa::sse2, kernel_table_sse2},
    {Isa::avx2_fma, kernel_table_avx2_fma},
    {Isa::avx512, kernel_table_avx512},
#endif
};
}  // namespace

const IsaDispatch<KernelTable>& kernel_dispatch() noexcept { return registered<kEntries>(); }

KernelTable kernel_table(Isa isa) noexcept { return kernel_dispatch().table(isa); }
Isa kernels_isa() noexcept { return kernel_dispatch().chosen().isa; }
const KernelTable& kernels() noexcept { return kernel_dispatch().chosen().table; }

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
