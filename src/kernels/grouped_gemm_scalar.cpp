// The grouped kernels' reference: plain loops over the layout, the
// numerics of grouped_gemm.hpp spelled out one product at a time.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/half.hpp"
#include "kernels/grouped_gemm.hpp"

namespace swiglu::detail {

namespace {

float scale_of(GroupedFormat format, const std::uint8_t* record, std::int64_t j) {
    std::uint16_t h;
    std::memcpy(&h, record + record_quant_bytes(format) + 2 * j, sizeof(h));
    return f16_to_f32(h);
}

// The quant of column j (of its group) for input e of the record's block.
int quant(GroupedFormat format, const std::uint8_t* record, std::int64_t j, std::size_t e) {
    if (format == GroupedFormat::q8_0)
        return static_cast<std::int8_t>(record[32 * (e / 4) + 4 * j + e % 4]);
    const std::uint8_t byte = record[32 * (e / 8) + 4 * j + e % 4];
    return ((e % 8) < 4 ? byte & 0x0F : byte >> 4) - 8;
}

template <GroupedFormat kFormat>
void gemm(const std::uint8_t* tile, std::int64_t k, std::int64_t n, const ActBlock* x,
          std::int64_t x_stride, std::int64_t rows, float* y, std::int64_t ldy) noexcept {
    const auto nb = static_cast<std::int64_t>(ggml_blocks(static_cast<std::size_t>(k)));
    for (std::int64_t m = 0; m < rows; ++m)
        for (std::int64_t c = 0; c < n; ++c) {
            const std::uint8_t* group =
                tile + (c / kGroupColumns) * nb * static_cast<std::int64_t>(record_bytes(kFormat));
            float acc = 0.0f;
            for (std::int64_t b = 0; b < nb; ++b) {
                const std::uint8_t* record = group + b * record_bytes(kFormat);
                const ActBlock& a = x[m * x_stride + b];
                std::int32_t s = 0;
                for (std::size_t e = 0; e < kGgmlBlock; ++e)
                    s += quant(kFormat, record, c % kGroupColumns, e) * a.qs[e];
                acc = std::fma(static_cast<float>(s),
                               scale_of(kFormat, record, c % kGroupColumns) * a.d, acc);
            }
            y[m * ldy + c] = acc;
        }
}

template <GroupedFormat kFormat>
void unpack(const std::uint8_t* tile, std::int64_t k, std::int64_t n, std::int64_t b, float* out,
            std::int64_t ldo) noexcept {
    const auto nb = static_cast<std::int64_t>(ggml_blocks(static_cast<std::size_t>(k)));
    const std::int64_t rows = std::min<std::int64_t>(kGgmlBlock, k - b * kGgmlBlock);
    for (std::int64_t c = 0; c < n; ++c) {
        const std::uint8_t* record = tile + ((c / kGroupColumns) * nb + b) *
                                                static_cast<std::int64_t>(record_bytes(kFormat));
        const float d = scale_of(kFormat, record, c % kGroupColumns);
        for (std::int64_t i = 0; i < rows; ++i)
            out[i * ldo + c] =
                static_cast<float>(quant(kFormat, record, c % kGroupColumns, std::size_t(i))) * d;
    }
}

}  // namespace

GroupedKernels grouped_kernels_scalar() noexcept {
    return {{&gemm<GroupedFormat::q8_0>, &unpack<GroupedFormat::q8_0>},
            {&gemm<GroupedFormat::q4_0>, &unpack<GroupedFormat::q4_0>}};
}

}  // namespace swiglu::detail
