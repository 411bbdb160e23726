// The panel layout and the registration of each ISA's panel kernels.
// Compiled with the baseline flags.
#include "kernels/panel_gemm.hpp"

#include <cstring>

#include "kernels/convert.hpp"
#include "kernels/gradient_gemm.hpp"

namespace swiglu::detail {

void pack_panels(PanelType type, const float* plain, std::int64_t k, std::int64_t n,
                 void* tile) noexcept {
    if (type == PanelType::f32) {  // the layout of gradient_gemm.hpp's B panels
        pack_column_blocks(plain, n, k, n, kPanelColumns, 0, panel_count(n),
                           static_cast<float*>(tile), k);
        return;
    }
    auto* bytes = static_cast<unsigned char*>(tile);
    const std::size_t element = panel_element_bytes(type);
    for (std::int64_t p = 0; p < panel_count(n); ++p) {
        const std::int64_t c0 = p * kPanelColumns;
        const std::int64_t width = n - c0 < kPanelColumns ? n - c0 : kPanelColumns;
        for (std::int64_t i = 0; i < k; ++i) {
            unsigned char* row =
                bytes + static_cast<std::size_t>((p * k + i) * kPanelColumns) * element;
            to_bf16(plain + i * n + c0, reinterpret_cast<std::uint16_t*>(row),
                    static_cast<std::size_t>(width));
            std::memset(row + static_cast<std::size_t>(width) * element, 0,
                        static_cast<std::size_t>(kPanelColumns - width) * element);
        }
    }
}

void unpack_f32_panels(const void* tile, std::int64_t k, std::int64_t n, float* plain) noexcept {
    const auto* panels = static_cast<const float*>(tile);
    for (std::int64_t p = 0; p < panel_count(n); ++p) {
        const std::int64_t c0 = p * kPanelColumns;
        const std::int64_t width = n - c0 < kPanelColumns ? n - c0 : kPanelColumns;
        for (std::int64_t i = 0; i < k; ++i)
            std::memcpy(plain + i * n + c0, panels + (p * k + i) * kPanelColumns,
                        static_cast<std::size_t>(width) * sizeof(float));
    }
}

namespace {
constexpr IsaEntry<PanelKernels> kEntries[] = {
    {Isa::scalar, panel_kernels_scalar},
#if SWIGLU_X86
    {Isa::avx2_fma, panel_kernels_avx2_fma},
    {Isa::avx512, panel_kernels_avx512},
#endif
};
}  // namespace

const IsaDispatch<PanelKernels>& panel_dispatch() noexcept { return registered<kEntries>(); }

PanelKernels panel_kernels(Isa isa) noexcept { return panel_dispatch().table(isa); }
const PanelKernels& panel_kernels() noexcept { return panel_dispatch().chosen().table; }
Isa panel_kernels_isa() noexcept { return panel_dispatch().chosen().isa; }

}  // namespace swiglu::detail
