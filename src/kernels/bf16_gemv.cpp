// Registers the bf16 one-row kernels of each ISA. Compiled with the
// baseline flags.
#include "kernels/bf16_gemv.hpp"

namespace swiglu::detail {

namespace {
constexpr IsaEntry<Bf16Gemv> kEntries[] = {
    {Isa::scalar, bf16_gemv_scalar},
#if SWIGLU_X86
    {Isa::avx512, bf16_gemv_avx512},
#endif
};
}  // namespace

const IsaDispatch<Bf16Gemv>& bf16_gemv_dispatch() noexcept { return registered<kEntries>(); }

Bf16Gemv bf16_gemv() noexcept {
    // The reference never runs in the bf16 mode: without AVX-512, oneDNN has
    // no bf16 kernel that packed these tiles.
    const IsaKernels<Bf16Gemv>& chosen = bf16_gemv_dispatch().chosen();
    return chosen.isa == Isa::scalar ? nullptr : chosen.table;
}

}  // namespace swiglu::detail
