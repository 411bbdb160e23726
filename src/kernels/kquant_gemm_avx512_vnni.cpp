// The K-quant kernels for avx512_vnni: placeholder, the scalar reference's.
#include "kernels/kquant_gemm.hpp"

namespace swiglu::detail {

KQuantKernels kquant_kernels_avx512_vnni() noexcept { return kquant_kernels_scalar(); }

}  // namespace swiglu::detail
