// The K-quant kernels for avx2_fma: placeholder, the scalar reference's.
#include "kernels/kquant_gemm.hpp"

namespace swiglu::detail {

KQuantKernels kquant_kernels_avx2_fma() noexcept { return kquant_kernels_scalar(); }

}  // namespace swiglu::detail
