// The conversions compiled for avx2: src/CMakeLists.txt builds this file (and
// only this one) with -mavx2 -mfma -ffp-contract=off; convert.cpp
// calls it only after checking that the CPU and OS support it.
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64)

#include "activation/convert_kernel.hpp"

#if !XSIMD_WITH_FMA3_AVX2
#error "convert_avx2.cpp needs -mavx2 -mfma"
#endif

namespace swiglu::detail {

ConvertKernels convert_kernels_avx2_fma() noexcept {
  return make_convert_kernels<xsimd::fma3<xsimd::avx2>>();
}

}  // namespace swiglu::detail

#endif
