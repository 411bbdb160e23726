// The panel layout and the choice of this CPU's kernels, once. Compiled
// with the baseline flags.
#include "kernels/bf16_panels.hpp"

#include "kernels/convert.hpp"

namespace swiglu::detail {

void pack_bf16_panels(const float* plain, std::int64_t k, std::int64_t n,
                      std::uint16_t* tile) noexcept {
    for (std::int64_t p = 0; p < bf16_panels(n); ++p) {
        const std::int64_t c0 = p * kPanelColumns;
        const std::int64_t width = n - c0 < kPanelColumns ? n - c0 : kPanelColumns;
        std::uint16_t* panel = tile + p * k * kPanelColumns;
        for (std::int64_t i = 0; i < k; ++i) {
            std::uint16_t* row = panel + i * kPanelColumns;
            to_bf16(plain + i * n + c0, row, static_cast<std::size_t>(width));
            for (std::int64_t j = width; j < kPanelColumns; ++j) row[j] = 0;
        }
    }
}

Isa bf16_panel_kernels_isa(Isa isa) noexcept {
    return isa == Isa::avx512 || isa == Isa::avx2_fma ? Isa::avx2_fma : Isa::scalar;
}

Bf16PanelKernels bf16_panel_kernels(Isa isa) noexcept {
    switch (isa) {
        case Isa::scalar: return bf16_panel_kernels_scalar();
#if SWIGLU_X86
        case Isa::avx2_fma: return bf16_panel_kernels_avx2_fma();
#endif
        default: return Bf16PanelKernels{};
    }
}

Isa bf16_panel_kernels_isa() noexcept {
    static const Isa chosen = bf16_panel_kernels_isa(best_isa());
    return chosen;
}

const Bf16PanelKernels& bf16_panel_kernels() noexcept {
    static const Bf16PanelKernels chosen = bf16_panel_kernels(bf16_panel_kernels_isa());
    return chosen;
}

}  // namespace swiglu::detail
