// The conversions compiled for avx512, and its kernel table: src/CMakeLists.txt builds this file
// (and only this one) with -mavx512f -mavx512cd -mavx512dq -mavx512bw -mavx2 -mfma -mf16c
// -ffp-contract=off; kernel_table.cpp calls it only after checking that the CPU and OS support it.
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64)

// GCC 12.2's avx512fintrin.h trips -Wmaybe-uninitialized (GCC bug 105593),
// as in f32_silu_mul_avx512.cpp.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/convert_xsimd.hpp"
#include "kernels/silu_mul_backward.hpp"

#if !XSIMD_WITH_AVX512BW || !XSIMD_WITH_FMA3_AVX2
#error "convert_avx512.cpp needs -mavx512f -mavx512cd -mavx512dq -mavx512bw -mavx2 -mfma"
#endif

namespace swiglu::detail {

KernelTable kernel_table_avx512() noexcept {
    return make_kernel_table<xsimd::avx512bw>(&f32_silu_mul_avx512, &silu_mul_backward_avx512);
}

}  // namespace swiglu::detail

#endif
