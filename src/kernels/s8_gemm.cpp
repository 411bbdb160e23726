// Picks this CPU's s8 kernel, once. Compiled with the baseline flags.
#include "kernels/s8_gemm.hpp"

namespace swiglu::detail {

S8Gemm s8_gemm() noexcept {
#if SWIGLU_X86
    static const S8Gemm chosen =
        best_isa() == Isa::avx512 && avx512_vnni_available() ? s8_gemm_avx512_vnni() : nullptr;
    return chosen;
#else
    return nullptr;
#endif
}

}  // namespace swiglu::detail
