// The K-quant kernels' reference: plain loops over the layout
// (kquant_layout.hpp), the numerics of kquant_gemm.hpp spelled out one
// product at a time.
#include <cmath>

#include "kernels/kquant_gemm.hpp"
#include "kernels/kquant_layout.hpp"

namespace swiglu::detail {

namespace {

// One column's (j of its group's record) dot product with one ActBlockK.
template <GroupedFormat kFormat>
float super_block(const std::uint8_t* record, int j, const ActBlockK& a, float acc) {
    constexpr KRecordLayout r = k_record(kFormat);
    std::int32_t isum = 0, msum = 0;
    for (int i = 0; i < r.sub_blocks; ++i) {
        std::int32_t s = 0;
        for (int e = i * r.sub_block_inputs; e < (i + 1) * r.sub_block_inputs; ++e)
            s += k_quant(kFormat, record, j, e) * a.qs[e];
        if constexpr (kFormat == GroupedFormat::q6_k) {
            s -= 32 * a.bsums[i];
        } else {
            msum += k_min(kFormat, record, j, i) * (a.bsums[2 * i] + a.bsums[2 * i + 1]);
        }
        isum += k_scale(kFormat, record, j, i) * s;
    }
    acc = std::fma(static_cast<float>(isum), k_d(kFormat, record, j) * a.d, acc);
    if constexpr (kFormat != GroupedFormat::q6_k)
        acc = std::fma(static_cast<float>(-msum), k_dmin(kFormat, record, j) * a.d, acc);
    return acc;
}

template <GroupedFormat kFormat>
void gemm(const std::uint8_t* tile, std::int64_t k, std::int64_t n, const ActBlockK* x,
          std::int64_t x_stride, std::int64_t rows, float* y, std::int64_t ldy) noexcept {
    const std::int64_t nb = format_blocks(kFormat, k);
    constexpr auto kRecord = static_cast<std::int64_t>(record_bytes(kFormat));
    for (std::int64_t m = 0; m < rows; ++m)
        for (std::int64_t c = 0; c < n; ++c) {
            const std::uint8_t* group = tile + (c / kGroupColumns) * nb * kRecord;
            float acc = 0.0f;
            for (std::int64_t b = 0; b < nb; ++b)
                acc = super_block<kFormat>(group + b * kRecord, static_cast<int>(c % kGroupColumns),
                                           x[m * x_stride + b], acc);
            y[m * ldy + c] = acc;
        }
}

}  // namespace

KQuantKernels kquant_kernels_scalar() noexcept {
    return {&gemm<GroupedFormat::q4_k>, &gemm<GroupedFormat::q5_k>, &gemm<GroupedFormat::q6_k>};
}

}  // namespace swiglu::detail
