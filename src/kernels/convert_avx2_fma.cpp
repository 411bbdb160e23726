// The conversions compiled for avx2, and its kernel table: src/CMakeLists.txt builds this file (and
// only this one) with -mavx2 -mfma -mf16c -ffp-contract=off; kernel_table.cpp
// calls it only after checking that the CPU and OS support it.
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64)

#include "kernels/convert_xsimd.hpp"
#include "kernels/silu_mul_backward.hpp"

#if !XSIMD_WITH_FMA3_AVX2
#error "convert_avx2.cpp needs -mavx2 -mfma"
#endif

namespace swiglu::detail {

KernelTable kernel_table_avx2_fma() noexcept {
    return make_kernel_table<xsimd::fma3<xsimd::avx2>>(&f32_silu_mul_avx2_fma,
                                                       &silu_mul_backward_avx2_fma);
}

}  // namespace swiglu::detail

#endif
