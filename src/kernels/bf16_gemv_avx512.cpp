// The bf16 one-row kernel for AVX-512 (bf16_gemv.hpp). The tile's column
// blocks are cut into kBf16Runs runs of consecutive blocks, and the runs
// are read side by side, a block of each at a time, each block front to
// back: 4 DRAM streams per core, each one long sequential read through its
// run (blocks lie back to back), and one x pair widened once for the 16
// vectors it meets. Each vector's lanes hold one column's 2 inputs:
// shifted left 16 bits the even one is an f32, masked the odd one; 16
// accumulators (4 blocks x 4 vectors of 16 columns).
//
// No software prefetch: the hardware's prefetchers follow 4 long
// sequential streams. This replaced 4 segments of each block read side by
// side (each line prefetched 1 KiB ahead), whose streams restart every
// quarter block: 32 KiB at qwen3moe's experts (k = 2048), 128 KiB at
// llama7b's gate|up. qwen3moe's experts, one token, one process switching
// call by call, three runs: 1.10-1.16x on 2 threads, 1.10-1.20x on one
// (1.02-1.09x in a first); with a prefetch 1 KiB ahead 1.03-1.11x /
// 1.05-1.10x; llama7b's block level (0.95-1.09x) (docs/measurements.md,
// "bf16's one row in runs of column blocks").
//
// GCC 12's _mm512_slli_epi32 starts from a deliberately undefined register
// and then warns that it "may be used uninitialized" once inlined (GCC bug
// 105593): silenced for this TU only.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "kernels/bf16_gemv.hpp"

namespace swiglu::detail {

namespace {

constexpr int kVectors = static_cast<int>(kBf16Block / 16);
constexpr std::int64_t kStepElements = 2 * kBf16Block;  // one pair of inputs of a block

// S column blocks (at w[0..S)) side by side over all kp inputs, each
// front to back: one x pair widened once for the S x 4 vectors it meets.
template <int S>
void column_blocks(const std::uint16_t* const (&w)[S], std::int64_t kp, const std::uint16_t* x,
                   const std::uint16_t* x_last, float* const (&y)[S],
                   const std::int64_t (&columns)[S]) {
    const __m512i high = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
    __m512 acc[S][kVectors];
#pragma GCC unroll 4
    for (int s = 0; s < S; ++s)
#pragma GCC unroll 4
        for (int v = 0; v < kVectors; ++v) acc[s][v] = _mm512_setzero_ps();
    auto pair = [&](std::int64_t p, const std::uint16_t* xp) {
        std::uint32_t both_bits;
        std::memcpy(&both_bits, xp, sizeof(both_bits));
        const __m512i both = _mm512_set1_epi32(static_cast<int>(both_bits));
        const __m512 even = _mm512_castsi512_ps(_mm512_slli_epi32(both, 16));
        const __m512 odd = _mm512_castsi512_ps(_mm512_and_si512(both, high));
#pragma GCC unroll 4
        for (int s = 0; s < S; ++s)
#pragma GCC unroll 4
            for (int v = 0; v < kVectors; ++v) {
                const __m512i lanes = _mm512_loadu_si512(w[s] + p * kStepElements + 32 * v);
                acc[s][v] = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(lanes, 16)), even,
                                            acc[s][v]);
                acc[s][v] = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(lanes, high)), odd,
                                            acc[s][v]);
            }
    };
    const std::int64_t pairs = kp / 2, last = pairs - kBf16Inputs / 2;
    for (std::int64_t p = 0; p < last; ++p) pair(p, x + 2 * p);
    for (std::int64_t p = last; p < pairs; ++p) pair(p, x_last + 2 * (p - last));
#pragma GCC unroll 4
    for (int s = 0; s < S; ++s)
#pragma GCC unroll 4
        for (int v = 0; v < kVectors; ++v) {
            const std::int64_t left = columns[s] - 16 * v;
            if (left >= 16) {
                _mm512_storeu_ps(y[s] + 16 * v, acc[s][v]);
            } else if (left > 0) {
                _mm512_mask_storeu_ps(y[s] + 16 * v, static_cast<__mmask16>((1u << left) - 1),
                                      acc[s][v]);
            }
        }
}

// Block i of each of S runs, run s starting at block first[s].
template <int S>
void blocks_of_runs(const std::uint16_t* tile, std::int64_t kp, std::int64_t n,
                    const std::int64_t* first, std::int64_t i, const std::uint16_t* x,
                    const std::uint16_t* x_last, float* y) {
    const std::uint16_t* w[S];
    float* out[S];
    std::int64_t columns[S];
    for (int s = 0; s < S; ++s) {
        const std::int64_t c0 = (first[s] + i) * kBf16Block;
        w[s] = tile + c0 * kp;
        out[s] = y + c0;
        columns[s] = n - c0 < kBf16Block ? n - c0 : kBf16Block;
    }
    column_blocks<S>(w, kp, x, x_last, out, columns);
}

void gemv(const std::uint16_t* tile, std::int64_t k, std::int64_t n, const std::uint16_t* x,
          std::int64_t ldx, std::int64_t rows, float* y, std::int64_t ldy) noexcept {
    const std::int64_t kp = bf16_padded_k(k), nb = bf16_padded_n(n) / kBf16Block;
    // The tile's column blocks in kBf16Runs runs of consecutive blocks
    // (lengths differ by at most one), the runs read side by side.
    std::int64_t first[kBf16Runs], length[kBf16Runs];
    for (int j = 0; j < kBf16Runs; ++j) {
        first[j] = nb * j / kBf16Runs;
        length[j] = nb * (j + 1) / kBf16Runs - first[j];
    }
    const std::int64_t common = length[0];  // the shortest
    for (std::int64_t r = 0; r < rows; ++r) {
        const std::uint16_t* xr = x + r * ldx;
        float* yr = y + r * ldy;
        // x's last block, zero past k (its weights are zero there: 0 * 0,
        // never 0 * whatever lies past the row).
        alignas(64) std::uint16_t x_last[kBf16Inputs] = {};
        const std::int64_t last = (kp / kBf16Inputs - 1) * kBf16Inputs;
        std::memcpy(x_last, xr + last, static_cast<std::size_t>(k - last) * sizeof(std::uint16_t));
        for (std::int64_t i = 0; i < common; ++i)
            blocks_of_runs<kBf16Runs>(tile, kp, n, first, i, xr, x_last, yr);
        // The longer runs' last blocks, side by side.
        std::int64_t tail[kBf16Runs];
        int longer = 0;
        for (int j = 0; j < kBf16Runs; ++j)
            if (length[j] > common) tail[longer++] = first[j];
        if (longer == 3) blocks_of_runs<3>(tile, kp, n, tail, common, xr, x_last, yr);
        if (longer == 2) blocks_of_runs<2>(tile, kp, n, tail, common, xr, x_last, yr);
        if (longer == 1) blocks_of_runs<1>(tile, kp, n, tail, common, xr, x_last, yr);
    }
}

}  // namespace

Bf16Gemv bf16_gemv_avx512() noexcept { return &gemv; }

}  // namespace swiglu::detail
