// SSE2 kernel: runs on every x86-64 CPU. src/CMakeLists.txt compiles this
// file with -msse2 only (the x86-64 baseline), so it must never contain VEX
// or EVEX code; f32_silu_mul_xsimd.hpp is written to keep it that way.
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64)

#include "kernels/f32_silu_mul_xsimd.hpp"

#if !XSIMD_WITH_SSE2
#error "f32_silu_mul_sse2.cpp needs -msse2"
#endif

namespace swiglu::detail {

template void SiluMulKernel::operator()<xsimd::sse2>(xsimd::sse2, const float*, const float*,
                                                     float*, std::size_t) const noexcept;

void f32_silu_mul_sse2(const float* gate, const float* up, float* out, std::size_t n) noexcept {
    SiluMulKernel{}(xsimd::sse2{}, gate, up, out, n);
}

}  // namespace swiglu::detail

#endif
