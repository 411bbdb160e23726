// The SiLU*up backward for avx512: src/CMakeLists.txt compiles this file with
// that ISA's flags only; it runs only after kernel_table.cpp has checked the CPU.
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64)

// GCC 12.2's avx512fintrin.h false positive (f32_silu_mul_avx512.cpp says more).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/silu_mul_backward_xsimd.hpp"

#if !XSIMD_WITH_AVX512BW
#error "silu_mul_backward_avx512.cpp needs -mavx512f -mavx512cd -mavx512dq -mavx512bw"
#endif

namespace swiglu::detail {

using Arch = xsimd::avx512bw;

void silu_mul_backward_avx512(const float* gate, const float* up, const float* dact, float* dgate,
                              float* dup, float* act, std::size_t n) noexcept {
    SiluMulBackwardKernel{}(Arch{}, gate, up, dact, dgate, dup, act, n);
}

}  // namespace swiglu::detail

#endif
