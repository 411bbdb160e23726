// Picks this CPU's grouped kernels, once. Compiled with the baseline flags.
#include "kernels/grouped_gemm.hpp"

namespace swiglu::detail {

Isa grouped_kernels_isa(Isa isa) noexcept {
    // AVX-512 CPUs without VNNI run the AVX2 kernels.
    if (isa == Isa::avx512 && avx512_vnni_available()) return Isa::avx512;
    return isa == Isa::avx512 || isa == Isa::avx2_fma ? Isa::avx2_fma : Isa::scalar;
}

GroupedKernels grouped_kernels(Isa isa) noexcept {
    switch (isa) {
        case Isa::scalar: return grouped_kernels_scalar();
#if SWIGLU_X86
        case Isa::avx2_fma: return grouped_kernels_avx2_fma();
        case Isa::avx512: {
            if (!avx512_vnni_available()) return GroupedKernels{};
            // Unpacking (the prefill path, once per weight tile) is the
            // AVX2 one: it converts, it does not multiply.
            GroupedKernels k = grouped_kernels_avx512_vnni();
            const GroupedKernels avx2 = grouped_kernels_avx2_fma();
            k.q8_0.unpack = avx2.q8_0.unpack;
            k.q4_0.unpack = avx2.q4_0.unpack;
            return k;
        }
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
