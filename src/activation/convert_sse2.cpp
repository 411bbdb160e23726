// The conversions compiled for sse2: src/CMakeLists.txt builds this file (and
// only this one) with -msse2 -ffp-contract=off; convert.cpp
// calls it only after checking that the CPU and OS support it.
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64)

#include "activation/convert_kernel.hpp"

#if !XSIMD_WITH_SSE2
#error "convert_sse2.cpp needs -msse2"
#endif

namespace swiglu::detail {

ConvertKernels convert_kernels_sse2() noexcept { return make_convert_kernels<xsimd::sse2>(); }

}  // namespace swiglu::detail

#endif
