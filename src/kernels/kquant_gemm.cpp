// Registers the K-quant kernels of each ISA. Compiled with the baseline flags.
#include "kernels/kquant_gemm.hpp"

namespace swiglu::detail {

namespace {

constexpr IsaEntry<KQuantKernels> kEntries[] = {
    {Isa::scalar, kquant_kernels_scalar},
#if SWIGLU_X86
    {Isa::avx2_fma, kquant_kernels_avx2_fma},
    {Isa::avx512_vnni, kquant_kernels_avx512_vnni},
#endif
};

}  // namespace

const IsaDispatch<KQuantKernels>& kquant_dispatch() noexcept { return registered<kEntries>(); }

KQuantKernels kquant_kernels(Isa isa) noexcept { return kquant_dispatch().table(isa); }
const KQuantKernels& kquant_kernels() noexcept { return kquant_dispatch().chosen().table; }
Isa kquant_kernels_isa() noexcept { return kquant_dispatch().chosen().isa; }

}  // namespace swiglu::detail
