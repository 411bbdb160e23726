// The s8 kernel for AVX-512 with VNNI (s8_gemm.hpp). vpdpbusd multiplies
// 64 unsigned bytes by 64 signed ones and adds each 4 products to a 32-bit
// lane: x + 128 (xor 0x80) is the unsigned side, its 4 bytes of a step
// broadcast to every lane, the tile's 16 columns x 4 inputs the signed
// side; the tile's compensation takes the 128 off at the end. R rows over a
// block's 4 vectors (64 columns) take 4 loads and R broadcasts per 4 R
// vpdpbusd, nothing else. Integers: any order gives the same bits.
//
// Rows go in passes of up to 6 (24 accumulators), every pass over a chunk
// of the block's inputs before the next chunk, so a chunk leaves memory
// once and the later passes read it from L1; each pass prefetches its share
// of the next chunk (as the f32 panel kernels, panel_gemm_avx512.cpp). x's
// rows for a chunk are made unsigned once, into a buffer on the stack, for
// all of the passes.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/row_passes.hpp"
#include "kernels/s8_gemm.hpp"

namespace swiglu::detail {

namespace {

constexpr int kMaxRows = 6;
constexpr int kVectors = kS8Block / 16;            // vectors of 16 columns in a block
constexpr std::int64_t kStepBytes = 4 * kS8Block;  // 4 inputs of a block's 64 columns
// Inputs per chunk: 16 KiB of a block, inside L1 for the later passes.
constexpr std::int64_t kChunkInputs = 256;
// How far ahead a single pass (up to 6 rows) prefetches.
constexpr std::int64_t kSinglePassAhead = 4096;
// Rows one call shifts at a time: their chunk of x is 16 KiB.
constexpr std::int64_t kRowGroup = 64;

// Inputs [i0, i1) of `rows` rows of x, + 128, to `out` (kChunkInputs
// bytes per row); past k zeros (they meet zero weights).
void shift_chunk(const std::int8_t* x, std::int64_t ldx, std::int64_t rows, std::int64_t i0,
                 std::int64_t i1, std::int64_t k, std::uint8_t* out) {
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    const std::int64_t valid = std::min(i1, k) - i0;
    for (std::int64_t r = 0; r < rows; ++r) {
        const std::int8_t* from = x + r * ldx + i0;
        std::uint8_t* to = out + r * kChunkInputs;
        for (std::int64_t i = 0; i < i1 - i0; i += 64) {
            const std::int64_t left = valid - i;
            const __mmask64 mask = left >= 64 ? ~__mmask64{0}
                                   : left > 0 ? (__mmask64{1} << left) - 1
                                              : 0;
            const __m512i v = _mm512_maskz_loadu_epi8(mask, from + i);
            _mm512_store_si512(to + i, _mm512_maskz_mov_epi8(mask, _mm512_xor_si512(v, flip)));
        }
    }
}

// out[0, 16) = base[0, 16) + acc, the first `left` lanes only (a block's
// last vector may hold fewer of the n columns).
inline void store_sums(std::int32_t* out, const std::int32_t* base, __m512i acc,
                       std::int64_t left) {
    const auto mask = static_cast<__mmask16>(left >= 16 ? 0xFFFF : (1u << left) - 1);
    _mm512_mask_storeu_epi32(out, mask,
                             _mm512_add_epi32(_mm512_maskz_loadu_epi32(mask, base), acc));
}

// One pass of R rows (x shifted, rows kChunkInputs apart) over steps
// [s0, s1) of a block (its 64 columns from c0, clipped to n): y gets the
// chunk's sums (`add`: added to what it holds; the first chunk adds the
// compensation instead).
template <int R, int kLines>
void chunk_rows(const std::int8_t* block, std::int64_t s0, std::int64_t s1, const std::uint8_t* xs,
                const std::int32_t* compensation, bool add, std::int32_t* y, std::int64_t ldy,
                std::int64_t c0, std::int64_t n, std::int64_t pf_phase, std::int64_t pf_passes) {
    static_assert(kLines >= 1 && kLines <= kVectors);
    __m512i acc[R][kVectors];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int q = 0; q < kVectors; ++q) acc[r][q] = _mm512_setzero_si512();
    // One pass fetches 4 KiB ahead (L2-resident tiles 1.1x over the next
    // chunk's 16 KiB, DRAM level); more passes spread the next chunk.
    const std::int64_t ahead = pf_passes == 1 ? kSinglePassAhead : kChunkInputs / 4 * kStepBytes;
    // Each step prefetches kLines lines of the next chunk, the passes in
    // turn, so that every line of it is fetched once (branch-free: with a
    // branch GCC copied the accumulators around the loop).
    const char* fetch =
        reinterpret_cast<const char*>(block + s0 * kStepBytes) + ahead + 64 * kLines * pf_phase;
    const std::int64_t fetch_step = 64 * kLines * pf_passes;
    for (std::int64_t s = s0; s < s1; ++s, fetch += fetch_step) {
        const std::int8_t* w = block + s * kStepBytes;
#pragma GCC unroll 4
        for (int l = 0; l < kLines; ++l) _mm_prefetch(fetch + 64 * l, _MM_HINT_T0);
        __m512i v[kVectors];
#pragma GCC unroll 4
        for (int q = 0; q < kVectors; ++q) v[q] = _mm512_loadu_si512(w + 64 * q);
        const std::int64_t i = 4 * (s - s0);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            std::int32_t four;
            std::memcpy(&four, xs + r * kChunkInputs + i, sizeof(four));
            const __m512i b = _mm512_set1_epi32(four);
#pragma GCC unroll 4
            for (int q = 0; q < kVectors; ++q) acc[r][q] = _mm512_dpbusd_epi32(acc[r][q], b, v[q]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int q = 0; q < kVectors; ++q) {
            const std::int64_t left = n - c0 - 16 * q;
            if (left <= 0) break;
            std::int32_t* out = y + r * ldy + c0 + 16 * q;
            store_sums(out, add ? out : compensation + 16 * q, acc[r][q], left);
        }
}

// One row (a decode's token): the tile's steps, block after block and
// each block front to back (its bytes in order), cut into kPieces equal
// pieces read side by side: 4 weight streams a core, each one sequential
// read through its piece whatever the tile's width, as bf16's one-row
// kernel reads the same family of oneDNN tiles (bf16_gemv_avx512.cpp).
// A piece's sums go to y at the end of each block it covers (y starts as
// the compensation); the sums are exact integers, so the bits are those
// of the passes above. Each step prefetches its 4 lines 1 KiB ahead.
// Pieces against 4 segments of each block (whose streams restarted every
// quarter block: 64 KiB at llama7b's gate|up, 32 KiB at qwen3moe's),
// one process switching call by call (Zen 5, 1 / 2 threads): llama7b one
// token 1.03x / 1.05x, qwen3moe's experts 1.14x / 1.13x, glass 1.17x /
// 1.19x, cyber level; the segments against each block front to back
// 1.10-1.14x / 1.15x (docs/measurements.md, twenty-sixth and
// twenty-seventh sessions).
constexpr int kPieces = 4;
constexpr std::int64_t kPieceAhead = 1024;

inline void piece_step(const std::int8_t* w, const std::uint8_t* x4, __m512i (&acc)[kVectors]) {
#pragma GCC unroll 4
    for (int q = 0; q < kVectors; ++q)
        _mm_prefetch(reinterpret_cast<const char*>(w) + 64 * q + kPieceAhead, _MM_HINT_T0);
    std::int32_t four;
    std::memcpy(&four, x4, sizeof(four));
    const __m512i b = _mm512_set1_epi32(four);
#pragma GCC unroll 4
    for (int q = 0; q < kVectors; ++q)
        acc[q] = _mm512_dpbusd_epi32(acc[q], b, _mm512_loadu_si512(w + 64 * q));
}

void one_row(const std::int8_t* tile, std::int64_t k, std::int64_t n, const std::int8_t* x,
             std::int32_t* y) {
    const std::int64_t kp = s8_padded(k), steps = (k + 3) / 4;
    const std::int64_t total = (n + kS8Block - 1) / kS8Block * steps;
    const std::int32_t* compensation = s8_tile_compensation(tile, k, n);
    for (std::int64_t c = 0; c < n; c += 16)
        store_sums(y + c, compensation + c, _mm512_setzero_si512(), n - c);
    // Piece j: steps [at[j], end[j]) of the tile (step g: block g / steps,
    // its step g % steps); lengths differ by at most one. Each piece reads
    // a chunk at a time, x + 128 for it in xs[j] (1 KiB on the stack
    // whatever k is); a chunk ends at its block's end. The pieces step
    // together until one's chunk ends, so that all 4 streams stay in
    // flight.
    constexpr std::int64_t kChunkSteps = kChunkInputs / 4;
    alignas(64) std::uint8_t xs[kPieces][kChunkInputs];
    std::int64_t at[kPieces], end[kPieces], left[kPieces];
    const std::int8_t* w[kPieces];
    const std::uint8_t* x4[kPieces];
    __m512i acc[kPieces][kVectors];
    auto next_chunk = [&](int j) {
        const std::int64_t block = at[j] / steps, s0 = at[j] % steps;
        left[j] = std::min({kChunkSteps, end[j] - at[j], steps - s0});
        if (left[j] <= 0) return;
        shift_chunk(x, 0, 1, 4 * s0, 4 * (s0 + left[j]), k, xs[j]);
        w[j] = tile + block * kp * kS8Block + s0 * kStepBytes;
        x4[j] = xs[j];
    };
    for (int j = 0; j < kPieces; ++j) {
        at[j] = total * j / kPieces;
        end[j] = total * (j + 1) / kPieces;
        next_chunk(j);
        for (int q = 0; q < kVectors; ++q) acc[j][q] = _mm512_setzero_si512();
    }
    for (;;) {
        std::int64_t common = kChunkSteps;
        int active = 0;
        for (int j = 0; j < kPieces; ++j)
            if (left[j] > 0) {
                common = std::min(common, left[j]);
                ++active;
            }
        if (active == 0) break;
        if (active == kPieces) {
            for (std::int64_t t = 0; t < common; ++t)
#pragma GCC unroll 4
                for (int j = 0; j < kPieces; ++j)
                    piece_step(w[j] + t * kStepBytes, x4[j] + 4 * t, acc[j]);
        } else {  // the tile's last steps
            for (int j = 0; j < kPieces; ++j)
                for (std::int64_t t = 0; t < common && left[j] > 0; ++t)
                    piece_step(w[j] + t * kStepBytes, x4[j] + 4 * t, acc[j]);
        }
        for (int j = 0; j < kPieces; ++j) {
            if (left[j] <= 0) continue;
            const std::int64_t c0 = at[j] / steps * kS8Block;
            w[j] += common * kStepBytes;
            x4[j] += 4 * common;
            at[j] += common;
            left[j] -= common;
            if (left[j] > 0) continue;
            if (at[j] % steps == 0 || at[j] == end[j]) {
                // The end of its block or of the piece: the sums to y.
#pragma GCC unroll 4
                for (int q = 0; q < kVectors; ++q) {
                    const std::int64_t cols = n - c0 - 16 * q;
                    if (cols <= 0) break;
                    store_sums(y + c0 + 16 * q, y + c0 + 16 * q, acc[j][q], cols);
                    acc[j][q] = _mm512_setzero_si512();
                }
            }
            next_chunk(j);
        }
    }
}

void gemm(const std::int8_t* tile, std::int64_t k, std::int64_t n, const std::int8_t* x,
          std::int64_t ldx, std::int64_t rows, std::int32_t* y, std::int64_t ldy) noexcept {
    if (rows == 1 && k > 0) {
        one_row(tile, k, n, x, y);
        return;
    }
    const std::int64_t kp = s8_padded(k);
    const std::int64_t steps = (k + 3) / 4;
    const std::int32_t* compensation = s8_tile_compensation(tile, k, n);
    alignas(64) std::uint8_t xs[kRowGroup * kChunkInputs];
    for (std::int64_t m0 = 0; m0 < rows; m0 += kRowGroup) {
        const std::int64_t group = std::min(kRowGroup, rows - m0);
        const std::int64_t passes = even_pass_count<kMaxRows>(group);
        for (std::int64_t c0 = 0; c0 < n; c0 += kS8Block) {
            const std::int8_t* block = tile + c0 * kp;
            for (std::int64_t s0 = 0; s0 < steps; s0 += kChunkInputs / 4) {
                const std::int64_t s1 = std::min(steps, s0 + kChunkInputs / 4);
                shift_chunk(x + m0 * ldx, ldx, group, 4 * s0, 4 * s1, k, xs);
                even_row_passes<kMaxRows>(
                    group, [&](auto height, std::int64_t m, std::int64_t pass) {
                        constexpr int R = decltype(height)::value;
                        // Lines per step that cover the next chunk over the passes.
                        auto run = [&](auto lines) {
                            chunk_rows<R, decltype(lines)::value>(
                                block, s0, s1, xs + m * kChunkInputs, compensation + c0, s0 > 0,
                                y + (m0 + m) * ldy, ldy, c0, n, pass, passes);
                        };
                        if (passes >= 4)
                            run(std::integral_constant<int, 1>{});
                        else if (passes >= 2)
                            run(std::integral_constant<int, 2>{});
                        else
                            run(std::integral_constant<int, 4>{});
                    });
            }
        }
    }
}

}  // namespace

S8Gemm s8_gemm_avx512_vnni() noexcept { return &gemm; }

}  // namespace swiglu::detail
