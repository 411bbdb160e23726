// The block's weights, packed once by the chosen mode's engine, and the
// kernels that use them: built at construction, read-only afterwards (shared
// by all threads).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <swiglu/swiglu.hpp>

#include "core/phase.hpp"
#include "core/precision.hpp"
#include "core/tiling.hpp"
#include "core/weight_arena.hpp"
#include "core/weight_source.hpp"
#include "onednn/matmul.hpp"

namespace swiglu::detail {

class PackedBlock {
public:
    // Shapes and formats must already be validated (see ffn.cpp). Resolves
    // the precision mode for `dtype` (down: `down_dtype`) under `policy`
    // (precision.hpp), plans the tiles, creates the kernels and packs every tile.
    PackedBlock(const WeightSource& gate_w, const WeightSource& up_w, const WeightSource& down_w,
                Dtype dtype, Dtype down_dtype, const BuildPolicy& policy);

    const Phase& phase(PhaseId id) const { return id == PhaseId::gate_up ? gate_up : down; }
    Dtype dtype() const { return numerics->dtype(); }
    Dtype down_dtype() const { return numerics->down_dtype(); }

    std::int64_t d = 0;
    std::int64_t f = 0;
    std::unique_ptr<Numerics> numerics;  // the mode that runs the block: its format
    std::unique_ptr<TileEngine> engine;  // and its engine
    WeightArena arena;                   // holds every packed tile of both phases
    // x @ [Wg | Wu], interleaved by column tile: tile j holds gate columns
    // then up columns of the same f-range, so one matmul yields both halves
    // that SiLU(gate)*up needs while they are in cache.
    Phase gate_up;
    // act @ Wd, each tile's output copied from the thread's tile into y.
    Phase down;
    int min_bucket = 0;                // shortest row tile, see min_row_bucket()
    bool cached = false;               // the weights stay in cache (!weights_stream_from_dram)
    std::size_t scratchpad_bytes = 0;  // the largest any kernel needs
    std::string implementation;        // the oneDNN implementations, e.g. "brg:avx512_core"

private:
    void plan_tiles(const TileEngine& engine);
    void make_kernels(TileEngine& engine);
    std::vector<const MatmulKernel*> all_kernels() const;
    void pack(const WeightSource& gate_w, const WeightSource& up_w, const WeightSource& down_w);
    void describe();
};

}  // namespace swiglu::detail
