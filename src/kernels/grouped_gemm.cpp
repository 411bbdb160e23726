// Registers the grouped kernels of each ISA. Compiled with the baseline flags.
#include "kernels/grouped_gemm.hpp"

namespace swiglu::detail {

namespace {

#if SWIGLU_X86
// AVX-512 with VNNI multiplies with its own gemms and unpacks (the prefill
// path, once per weight tile) with AVX2's: unpacking converts, it does not
// multiply.
GroupedKernels avx512_vnni_gemms_avx2_unpack() noexcept {
    GroupedKernels k = grouped_kernels_avx512_vnni();
    const GroupedKernels avx2 = grouped_kernels_avx2_fma();
    k.q8_0.unpack = avx2.q8_0.unpack;
    k.q4_0.unpack = avx2.q4_0.unpack;
    return k;
}
#endif

constexpr IsaEntry<GroupedKernels> kEntries[] = {
    {Isa::scalar, grouped_kernels_scalar},
#if SWIGLU_X86
    {Isa::avx2_fma, grouped_kernels_avx2_fma},
    {Isa::avx512_vnni, avx512_vnni_gemms_avx2_unpack},
#endif
};

}  // namespace

const IsaDispatch<GroupedKernels>& grouped_dispatch() noexcept { return registered<kEntries>(); }

GroupedKernels grouped_kernels(Isa isa) noexcept { return grouped_dispatch().table(isa); }
const GroupedKernels& grouped_kernels() noexcept { return grouped_dispatch().chosen().table; }
Isa grouped_kernels_isa() noexcept { return grouped_dispatch().chosen().isa; }

}  // namespace swiglu::detail
