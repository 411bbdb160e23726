// The block's weights, packed once for oneDNN in the chosen precision, and
// the primitives that use them: built at construction, read-only afterwards
// (shared by all threads).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <swiglu/swiglu.hpp>

#include "core/precision.hpp"
#include "core/tiling.hpp"
#include "core/weight_arena.hpp"
#include "core/weight_source.hpp"
#include "onednn/matmul.hpp"

namespace swiglu::detail {

// One matmul of the block, cut into column tiles, each tile packed on its
// own so that a task touches one contiguous slice of weights.
struct Phase {
    std::int64_t k = 0;                    // reduction length
    ColumnTiling columns;                  // tiles of the phase's output columns
    std::int64_t outputs_per_column = 1;   // 2 for gate|up: a tile holds both
    std::vector<dnnl::memory> tiles;       // packed weights, one per column tile (in the arena)
    std::vector<const void*> tile_data;    // their bytes, for a mode's own kernels
    MatmulKernel kernels[2][kRowBuckets];  // [last tile is narrower][row bucket]
    // A mode's prefill path (precision.hpp): [tail][i] runs (i + 1) full
    // 64-row tiles at once on plain unpacked weights, so that oneDNN packs
    // them for its kernel once per task, not once per row tile.
    MatmulKernel prefill[2][kMaxPrefillTiles];

    const MatmulKernel& kernel(std::int64_t tile, int bucket) const {
        return kernels[columns.is_tail(tile) ? 1 : 0][bucket];
    }
    // Output columns of a tile: both halves for gate|up.
    std::int64_t outputs(std::int64_t tile) const {
        return columns.size(tile) * outputs_per_column;
    }
    // The kernel that picked the packed layout: 64 rows, full-width tile.
    const MatmulKernel& top() const { return kernels[0][kRowBuckets - 1]; }
};

// Creates the kernels of `phase` (k and columns set) for every row height
// from 1 << min_bucket to 64 and both tile widths; the 64-row kernel picks
// the packed weight layout, the others must share it. `streamed`: weights
// that stream from DRAM (the f32 block choice of make_top_kernel).
void make_phase_kernels(Phase& phase, int min_bucket, const MatmulTypes& types, bool streamed);

class PackedBlock {
public:
    // Shapes must already be validated (see ffn.cpp). Resolves the
    // precision mode for `dtype` (precision.hpp), plans the tiles, creates
    // the kernels and packs every tile.
    PackedBlock(const WeightSource& gate_w, const WeightSource& up_w, const WeightSource& down_w,
                Dtype dtype);

    const Phase& phase(PhaseId id) const { return id == PhaseId::gate_up ? gate_up : down; }
    // A mode with kernels of its own runs full-height row tiles through
    // oneDNN (its prefill path).
    bool has_prefill() const { return static_cast<bool>(gate_up.prefill[0][0]); }

    std::int64_t d = 0;
    std::int64_t f = 0;
    std::unique_ptr<Precision> precision;  // the mode that runs the block
    WeightArena arena;                     // holds every packed tile of both phases
    // x @ [Wg | Wu], interleaved by column tile: tile j holds gate columns
    // then up columns of the same f-range, so one matmul yields both halves
    // that SiLU(gate)*up needs while they are in cache.
    Phase gate_up;
    // act @ Wd, each tile's output copied from the thread's tile into y.
    Phase down;
    int min_bucket = 0;                // shortest row tile, see min_row_bucket()
    std::size_t scratchpad_bytes = 0;  // the largest any kernel needs
    std::string implementation;        // the oneDNN implementations, e.g. "brg:avx512_core"

private:
    void plan_tiles(const Precision& mode);
    void make_kernels(const Precision& mode);
    // A mode with kernels of its own: oneDNN's 64-row kernels for its
    // prefill path, if it has one (Precision::prefill_candidates).
    void make_prefill_kernels();
    std::vector<const MatmulKernel*> all_kernels() const;
    void pack(const WeightSource& gate_w, const WeightSource& up_w, const WeightSource& down_w);
    void describe();
};

}  // namespace swiglu::detail
