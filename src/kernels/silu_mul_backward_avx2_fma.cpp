// The SiLU*up backward for avx2_fma: src/CMakeLists.txt compiles this file with
// that ISA's flags only; it runs only after kernel_table.cpp has checked the CPU.
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64)

#include "kernels/silu_mul_backward_xsimd.hpp"

#if !XSIMD_WITH_FMA3_AVX2
#error "silu_mul_backward_avx2_fma.cpp needs -mavx2 -mfma -mf16c"
#endif

namespace swiglu::detail {

using Arch = xsimd::fma3<xsimd::avx2>;

void silu_mul_backward_avx2_fma(const float* gate, const float* up, const float* dact, float* dgate,
                                float* dup, float* act, std::size_t n) noexcept {
    SiluMulBackwardKernel{}(Arch{}, gate, up, dact, dgate, dup, act, n);
}

}  // namespace swiglu::detail

#endif
