// The conversions compiled for sse2, and its kernel table: src/CMakeLists.txt builds this file (and
// only this one) with -msse2 -ffp-contract=off; kernel_table.cpp
// calls it only after checking that the CPU and OS support it.
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64)

#include "kernels/convert_xsimd.hpp"
#include "kernels/silu_mul_backward.hpp"

#if !XSIMD_WITH_SSE2
#error "convert_sse2.cpp needs -msse2"
#endif

namespace swiglu::detail {

KernelTable kernel_table_sse2() noexcept {
    return make_kernel_table<xsimd::sse2>(&f32_silu_mul_sse2, &silu_mul_backward_sse2);
}

}  // namespace swiglu::detail

#endif
