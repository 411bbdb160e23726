// AVX2 + FMA kernel. src/CMakeLists.txt compiles this file (and only this
// one) with -mavx2 -mfma -mf16c; xsimd's matching arch is fma3<avx2>. It is only
// called after silu_mul_dispatch.cpp has checked the CPU and OS support it.
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64)

#include "kernels/f32_silu_mul_xsimd.hpp"

#if !XSIMD_WITH_FMA3_AVX2
#error "silu_mul_avx2.cpp needs -mavx2 -mfma"
#endif

namespace swiglu::detail {

using Avx2Fma = xsimd::fma3<xsimd::avx2>;

template void SiluMulKernel::operator()<Avx2Fma>(Avx2Fma, const float*, const float*, float*,
                                                 std::size_t) const noexcept;

void f32_silu_mul_avx2_fma(const float* gate, const float* up, float* out, std::size_t n) noexcept {
    SiluMulKernel{}(Avx2Fma{}, gate, up, out, n);
}

}  // namespace swiglu::detail

#endif
