// The block's weights, packed once for oneDNN, and the primitives that use
// them: built at construction, read-only afterwards (shared by all threads).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <swiglu/swiglu.hpp>

#include "onednn/matmul.hpp"
#include "core/tiling.hpp"
#include "core/weight_arena.hpp"

namespace swiglu::detail {

// One matmul of the block, cut into column tiles, each tile packed on its
// own so that a task touches one contiguous slice of weights.
struct Phase {
    std::int64_t k = 0;                // reduction length
    ColumnTiling columns;              // tiles of the phase's output columns
    std::int64_t outputs_per_column = 1;  // 2 for gate|up: a tile holds both
    std::vector<dnnl::memory> tiles;   // packed weights, one per column tile (in the arena)
    MatmulKernel kernels[2][kRowBuckets];  // [last tile is narrower][row bucket]
    // int8 only: one scale per output channel, in the matmul's output order
    // (tile j's outputs start at outputs_per_column * columns.begin(j)).
    std::vector<float> scales;

    const MatmulKernel& kernel(std::int64_t tile, int bucket) const {
        return kernels[columns.is_tail(tile) ? 1 : 0][bucket];
    }
};

class PackedBlock {
public:
    // Shapes must already be validated (see ffn.cpp).
    PackedBlock(const WeightView& gate_w, const WeightView& up_w, const WeightView& down_w,
                Dtype dtype);

    std::int64_t d = 0;
    std::int64_t f = 0;
    Dtype dtype = Dtype::f32;    // what was asked for: the numerics
    Dtype storage = Dtype::f32;  // what the kernels run (f32 when bf16 is emulated)
    WeightArena arena;  // holds every packed tile of both phases
    // x @ [Wg | Wu], interleaved by column tile: tile j holds gate columns
    // then up columns of the same f-range, so one matmul yields both halves
    // that SiLU(gate)*up needs while they are in cache.
    Phase gate_up;
    // act @ Wd, each tile's output copied from the thread's tile into y.
    Phase down;
    int min_bucket = 0;                // shortest row tile, see min_row_bucket()
    // int8 quantises act per token, which needs the whole row: when one
    // gate|up tile spans all of f (small blocks, e.g. glass), the task that
    // computes a row quantises it while it is in L1 (no f32 act buffer);
    // otherwise a separate step does, after every gate|up task of a chunk.
    bool act_quantized_in_gate_up() const {
        return storage == Dtype::int8 && gate_up.columns.count == 1;
    }
    std::size_t scratchpad_bytes = 0;  // the largest any kernel needs
    std::string implementation;        // the oneDNN implementations, e.g. "brg:avx512_core"

private:
    void pack_tile(Phase& phase, std::int64_t tile, std::vector<float>& plain,
                   const dnnl::memory& to);
};

}  // namespace swiglu::detail
