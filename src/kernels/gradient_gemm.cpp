// Packing for the weight-gradient kernels and the registration of each
// ISA's. Compiled with the baseline flags.
#include "kernels/gradient_gemm.hpp"

#include <algorithm>
#include <cstring>

namespace swiglu::detail {

namespace {

// Blocks [b0, b1) of `width` columns, the last `w` < width wide and padded.
void pack_blocks(const float* matrix, std::int64_t ld, std::int64_t k, std::int64_t n,
                 std::int64_t width, std::int64_t b0, std::int64_t b1, float* packed,
                 std::int64_t block_rows) noexcept {
    for (std::int64_t b = b0; b < b1; ++b) {
        const std::int64_t c0 = b * width;
        const std::int64_t w = n - c0 < width ? n - c0 : width;
        float* block = packed + b * block_rows * width;
        for (std::int64_t t = 0; t < k; ++t) {
            std::memcpy(block + t * width, matrix + t * ld + c0,
                        static_cast<std::size_t>(w) * sizeof(float));
            std::memset(block + t * width + w, 0,
                        static_cast<std::size_t>(width - w) * sizeof(float));
        }
    }
}

// Whole blocks of a width known here: each row's copy (24 or 64 bytes) is a
// few moves, where pack_blocks makes two library calls. The backward packs
// a copy per token row and block of each operand (5.5 k per token row at
// llama7b); as calls they took 6.5-11 % of cyber's backward (512 tokens, 1
// thread; perf), as moves 4.6-5 %.
template <std::int64_t Width>
void pack_whole_blocks(const float* matrix, std::int64_t ld, std::int64_t k, std::int64_t b0,
                       std::int64_t b1, float* packed, std::int64_t block_rows) noexcept {
    for (std::int64_t b = b0; b < b1; ++b) {
        const float* from = matrix + b * Width;
        float* block = packed + b * block_rows * Width;
        for (std::int64_t t = 0; t < k; ++t)
            std::memcpy(block + t * Width, from + t * ld, Width * sizeof(float));
    }
}

constexpr IsaEntry<GradientGemm> kEntries[] = {
    {Isa::scalar, gradient_gemm_scalar},
#if SWIGLU_X86
    {Isa::avx2_fma, gradient_gemm_avx2_fma},
    {Isa::avx512, gradient_gemm_avx512},
#endif
};

}  // namespace

void pack_column_blocks(const float* matrix, std::int64_t ld, std::int64_t k, std::int64_t n,
                        std::int64_t width, std::int64_t b0, std::int64_t b1, float* packed,
                        std::int64_t block_rows) noexcept {
    // The kernels' widths: blocks before `rest` lie wholly inside the n
    // columns; the rest (any block of another width) take the generic copy.
    std::int64_t rest = b0;
    if (width == kGradientStrip || width == kPanelColumns) {
        rest = std::max(b0, std::min(b1, n / width));
        if (width == kGradientStrip)
            pack_whole_blocks<kGradientStrip>(matrix, ld, k, b0, rest, packed, block_rows);
        else
            pack_whole_blocks<kPanelColumns>(matrix, ld, k, b0, rest, packed, block_rows);
    }
    pack_blocks(matrix, ld, k, n, width, rest, b1, packed, block_rows);
}

const IsaDispatch<GradientGemm>& gradient_dispatch() noexcept { return registered<kEntries>(); }

GradientGemm gradient_gemm(Isa isa) noexcept { return gradient_dispatch().table(isa); }
GradientGemm gradient_gemm() noexcept { return gradient_dispatch().chosen().table; }
Isa gradient_gemm_isa() noexcept { return gradient_dispatch().chosen().isa; }

}  // namespace swiglu::detail
