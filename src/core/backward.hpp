// The block's backward pass. For dy = dL/dy (rows, d):
//
//   dact  = dy @ Wd^T                           (rows, f)
//   dgate = dact * up * s * (1 + gate (1 - s)),  s = sigmoid(gate)
//   dup   = dact * SiLU(gate)
//   dx    = [dgate | dup] @ [Wg^T ; Wu^T]       (rows, d): one matmul, k = 2f
//   dWd = act^T @ dy,  dWg = x^T @ dgate,  dWu = x^T @ dup  (in (in, out) terms)
//
// In chunks of kChunkRows rows, four phases each, every matmul either our
// own kernel (panels, gradients) or a oneDNN primitive created once (when
// backward is first enabled), each task run single-threaded inside our
// pool, like the forward's. The weight gradients sum spans of up to
// kGradientSpanRows rows (two chunks): phase T of each chunk packs its rows
// into the span's operands, phase C runs once, with the span's last chunk,
// so dW is written once per span, not written then added to (adding ran
// the kernel slower: docs/measurements.md, "One gradient pass per span"):
//   A  tasks = f-column tile x row tile: dact's tile from dy and the packed
//      Wd^T tile (on the backward's engine: oneDNN's f32 kernels, or our
//      panels where the forward runs on them),
//      then the fused SiLU*up backward (kernels/silu_mul_backward)
//      while it is in cache: [dgate | dup] and act rows into the chunk's
//      buffers. gate and up come from the caller's saved activations
//      (forward_for_backward) or are recomputed by a forward over the chunk.
//   T  tasks = column blocks of each weight gradient's two operands,
//      packed for the gradient kernel (kernels/gradient_gemm) at the
//      chunk's rows of the span: S in strips of dW rows, B in panels of dW
//      columns.
//   C  tasks (the span's last chunk) = tiles of each weight gradient asked
//      for, over the span's rows, on our gradient kernel: written by the
//      first span and added to after.
//   B  tasks = d-column tile x row tile: dx's tile from [dgate | dup] and the
//      packed [Wg^T ; Wu^T] tile. After A and T have read x and dy, so dx
//      may be x or dy themselves; in one phase with C (their tasks
//      interleaved for a chunk of one row tile: BackwardChunk::phase_cb).
//      On our panels a chunk's inputs may be cut into slices
//      (dx_input_slices), each a phase of B's tasks over its inputs, the
//      first with C.
// A and B's row tiles are exact powers of two (no padding rows), and C's
// tiles each sum the span's rows in one kernel call, so every output
// element is computed by the same kernels in the same order whatever the
// thread count: results are bit-identical for any thread count.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <swiglu/swiglu.hpp>

#include "common/aligned_buffer.hpp"
#include "core/engine.hpp"
#include "core/packed_block.hpp"
#include "core/thread_pool.hpp"
#include "core/tiling.hpp"
#include "core/workspace.hpp"
#include "kernels/gradient_gemm.hpp"
#include "kernels/panel_gemm.hpp"

namespace swiglu::detail {

// Where the weight gradients go, each as the caller holds that weight
// (rows x cols in its layout); null = not wanted.
struct GradientSink {
    float* gate = nullptr;
    float* up = nullptr;
    float* down = nullptr;
    bool accumulate = false;  // add into the buffers instead of overwriting
};

// dx's inputs (k = 2 f) in slices of whole kPanelBlocks, each small enough
// that the chunk's `rows` of it, kDxSliceBytes, stay in L3 while every
// column tile reads them: llama7b's 256 rows of [dgate | dup] are 22.5 MB,
// which the weight tiles streaming through L3 (a victim cache of L2 on the
// EPYCs here) pushed out to DRAM. dx's kernel alone on llama7b's chunk,
// slices of 4096 against none: 1 thread 1.06-1.09x, 2 threads 1.02-1.05x;
// llama7b's backward at 512 tokens without weight gradients, 2 threads,
// 2.7 % faster (faster in 7 of 8 alternated rounds), with them level
// within the noise (docs/measurements.md, "dx in slices of its inputs").
// The panel kernel sums its blocks in order and each slice adds to the
// last (PanelGemmRange), so the bits are those of one call.
inline constexpr std::int64_t kDxSliceBytes = std::int64_t{4} << 20;

constexpr ColumnTiling dx_input_slices(std::int64_t k, std::int64_t rows) {
    const std::int64_t fit =
        kDxSliceBytes / (rows * std::int64_t{sizeof(float)}) / kPanelBlock * kPanelBlock;
    return fixed_width_tiles(k, fit > kPanelBlock ? fit : kPanelBlock);
}
static_assert(dx_input_slices(22016, 256).width == 4096 && dx_input_slices(22016, 256).count == 6);
static_assert(dx_input_slices(2048, 256).count == 1);   // cyber: one slice
static_assert(dx_input_slices(4200, 256).tail == 104);  // the tests' sliced shape
static_assert(dx_input_slices(1 << 20, 1 << 16).width == kPanelBlock);

// A weight-gradient task's tile of dW: at most kGradientTileRows rows
// (whole strips), and as many columns (whole groups of 4 panels, which the
// AVX-512 kernel reads together) as keep B's tile, the span's rows by the
// tile's columns, within kGradientPanelTileBytes: 256 columns over a span
// of 512 token rows, 8192 over 16 (all of a 4096-wide dW). Consecutive tasks
// share the operand tile of the longer side, so it stays in L2 (a 96 x 256
// tile over 512 token rows reads 192 KiB of S and 512 KiB of B). Wide
// tiles over few token rows write dW in long runs of each row: llama7b's
// gradients at 16 token rows, 2 threads, ran 1.3-1.7x faster than in tiles
// 256 wide, and 4-6 % faster at 128-256 (docs/measurements.md, "Gradient
// tiles as wide as the span allows").
inline constexpr std::int64_t kGradientTileRows = 16 * kGradientStrip;
inline constexpr std::int64_t kGradientPanelTileBytes = std::int64_t{512} << 10;

// dW's column tiles for a span of `span_rows` token rows.
constexpr ColumnTiling gradient_column_tiles(std::int64_t cols, std::int64_t span_rows) {
    constexpr std::int64_t group = 4 * kPanelColumns;
    const std::int64_t fit =
        kGradientPanelTileBytes / (span_rows * std::int64_t{sizeof(float)}) / group * group;
    return fixed_width_tiles(cols, fit > group ? fit : group);
}
static_assert(gradient_column_tiles(11008, 512).width == 256);
static_assert(gradient_column_tiles(11008, 128).width == 1024);
static_assert(gradient_column_tiles(4096, 16).width == 4096);
static_assert(gradient_column_tiles(341, 512).tail == 85);

// Token rows a weight gradient sums in one pass (phase C), as whole chunks.
inline constexpr std::int64_t kGradientSpanRows = 2 * kChunkRows;
static_assert(kGradientSpanRows % kChunkRows == 0, "a span is whole chunks");

// The span of the chunk at rows [m0, m0 + n) of a call over `rows`: its
// rows, the chunk's first row within it, whether it is the call's first
// span (which writes dW) and whether the chunk ends it (and runs phase C).
struct GradientSpan {
    std::int64_t rows = 0, row0 = 0;
    bool first = true, ends = true;
};

constexpr GradientSpan gradient_span(std::int64_t m0, std::int64_t n, std::int64_t rows) {
    const std::int64_t start = m0 / kGradientSpanRows * kGradientSpanRows;
    const std::int64_t span_rows =
        rows - start < kGradientSpanRows ? rows - start : kGradientSpanRows;
    return {span_rows, m0 - start, start == 0, m0 + n == start + span_rows};
}
// 600 rows: chunks of 256, 256 and 88; spans of 512 and 88.
static_assert(gradient_span(0, 256, 600).rows == 512 && !gradient_span(0, 256, 600).ends);
static_assert(gradient_span(256, 256, 600).row0 == 256 && gradient_span(256, 256, 600).ends);
static_assert(gradient_span(512, 88, 600).rows == 88 && !gradient_span(512, 88, 600).first &&
              gradient_span(512, 88, 600).ends);

// A weight gradient: dW (rows x cols) = S^T @ B over a span's rows, S and
// B read from each chunk's rows at their row strides and packed (phase T).
struct GradientGeometry {
    bool out_in = true;  // S = the output gradient, B = the input; else the reverse
    std::int64_t rows = 0, cols = 0;
    std::int64_t s_stride = 0, b_stride = 0;  // row strides (elements) of S and B
    ColumnTiling row_tiles;  // dW's row tiles (its column tiles: gradient_column_tiles)
};

class BackwardBlock {
public:
    // Reads the forward's packed f32 weights back (TileEngine::unpack_f32;
    // throws Error(unsupported) for other dtypes), packs Wd^T and
    // [Wg^T ; Wu^T] on its own engine, creates every kernel. `layouts`: how
    // gate, up and down were given, which is how their gradients are
    // written.
    BackwardBlock(const PackedBlock& block, const Layout (&layouts)[3]);

    std::int64_t d = 0, f = 0;
    Phase dact;  // dy @ Wd^T: k = d, column tiles over f
    Phase dx;    // [dgate | dup] @ [Wg^T ; Wu^T]: k = 2f, column tiles over d
    // Where the forward runs f32 on the panels engine (no AVX-512: oneDNN's
    // gemm:jit reads row-major tiles poorly at few rows), dact and dx run
    // on f32 panels too (dx's over slices of its inputs:
    // TileEngine::input_slices); else on oneDNN's f32 kernels.
    std::unique_ptr<TileEngine> engine;
    WeightArena arena;
    GradientGeometry gradients[3];         // gate, up, down
    GradientGemm gradient_gemm = nullptr;  // this CPU's weight-gradient kernel
    std::size_t scratchpad_bytes = 0;      // the largest any kernel needs
    std::string implementation;            // e.g. "f32 gradients:avx512,f32 panels:avx512"

private:
    void pack(const PackedBlock& block);
    void plan_gradients(const Layout (&layouts)[3]);
};

// A backward call's scratch, per chunk or span (never per token count),
// made on a lease slot's first backward and kept.
struct BackwardWorkspace {
    BackwardWorkspace(const BackwardBlock& block, int threads);

    AlignedBuffer<float> gate, up;    // recomputed gate and up (kChunkRows x f each)
    AlignedBuffer<float> y;           // the recomputing forward's output (dropped)
    AlignedBuffer<float> dgate_up;    // [dgate | dup] rows (kChunkRows x 2f)
    AlignedBuffer<float> act;         // SiLU(gate) * up rows (kChunkRows x f)
    AlignedBuffer<float> strips[3];   // S per gradient, packed (kGradientSpanRows x its rows)
    AlignedBuffer<float> panels[3];   // B per gradient, packed (kGradientSpanRows x its cols)
    std::vector<TileWorker> workers;  // phases dact (0) and dx (1)
};

// dx (and the gradients `sink` asks for) for `rows` >= 1 tokens. `saved`:
// gate then up, (rows x f) each, from forward_for_backward; null recomputes
// them with `block` and `forward_ws`. `pool` as for run_block.
void run_backward(const BackwardBlock& backward, BackwardWorkspace& ws, const PackedBlock& block,
                  Workspace& forward_ws, ThreadPool* pool, const float* x, const float* dy,
                  float* dx, std::int64_t rows, const GradientSink& sink, const float* saved);

}  // namespace swiglu::detail
