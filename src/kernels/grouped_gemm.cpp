// Picks this CPU's grouped kernels, once. Compiled with the baseline flags.
#include "kernels/grouped_gemm.hpp"

namespace swiglu::detail {

Isa grouped_kernels_isa(Isa isa) noexcept {
    // AVX-512 CPUs run the AVX2 kernels: a 512-bit twin is not built yet.
    return isa == Isa::avx512 || isa == Isa::avx2_fma ? Isa::avx2_fma : Isa::scalar;
}

GroupedKernels grouped_kernels(Isa isa) noexcept {
    switch (isa) {
        case Isa::scalar: return grouped_kernels_scalar();
#if SWIGLU_X86
        case Isa::avx2_fma: return grouped_kernels_avx2_fma();
#endif
        default: return GroupedKernels{};
    }
}

Isa grouped_kernels_isa() noexcept {
    static const Isa chosen = grouped_kernels_isa(best_isa());
    return chosen;
}

const GroupedKernels& grouped_kernels() noexcept {
    static const GroupedKernels chosen = grouped_kernels(grouped_kernels_isa());
    return chosen;
}

}  // namespace swiglu::detail
