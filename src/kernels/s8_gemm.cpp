// Registers the s8 kernels of each ISA. Compiled with the baseline flags.
#include "kernels/s8_gemm.hpp"

namespace swiglu::detail {

namespace {
constexpr IsaEntry<S8Gemm> kEntries[] = {
    {Isa::scalar, s8_gemm_scalar},
#if SWIGLU_X86
    {Isa::avx512_vnni, s8_gemm_avx512_vnni},
#endif
};
}  // namespace

const IsaDispatch<S8Gemm>& s8_dispatch() noexcept { return registered<kEntries>(); }

S8Gemm s8_gemm() noexcept {
    // The reference never runs in the int8 mode, which has tiles for this
    // kernel only where oneDNN has its VNNI kernel (that packed them).
    const IsaKernels<S8Gemm>& chosen = s8_dispatch().chosen();
    return chosen.isa == Isa::scalar ? nullptr : chosen.table;
}

}  // namespace swiglu::detail
