// AVX-512 kernel. src/CMakeLists.txt compiles this file (and only this one)
// with -mavx512f -mavx512cd -mavx512dq -mavx512bw -mavx2 -mfma -mf16c; xsimd's
// matching arch is avx512bw (which builds on avx512dq/cd/f). It is only
// called after silu_mul_dispatch.cpp has checked the CPU and OS support it.
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64)

// GCC 12.2's own avx512fintrin.h trips -Wmaybe-uninitialized on
// _mm512_undefined_epi32() inside _mm512_slli_epi32 (GCC bug 105593, fixed
// in 12.3); the warning is about the compiler's header, not this code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/f32_silu_mul_xsimd.hpp"

#if !XSIMD_WITH_AVX512BW || !XSIMD_WITH_FMA3_AVX2
#error "f32_silu_mul_avx512.cpp needs -mavx512f -mavx512cd -mavx512dq -mavx512bw -mavx2 -mfma"
#endif

namespace swiglu::detail {

template void SiluMulKernel::operator()<xsimd::avx512bw>(xsimd::avx512bw, const float*,
                                                         const float*, float*,
                                                         std::size_t) const noexcept;

void f32_silu_mul_avx512(const float* gate, const float* up, float* out, std::size_t n) noexcept {
    SiluMulKernel{}(xsimd::avx512bw{}, gate, up, out, n);
}

}  // namespace swiglu::detail

#endif
