// A format's numerics: what the block computes, apart from the engine that
// runs its tile matmuls (core/engine.hpp). It owns how the weights are
// converted before the engine packs them, how forward() prepares x and act
// as the matmuls read them, the epilogues of both phases, and the scratch
// that takes. forward() (core/forward.cpp) is one straight path that calls
// these hooks and the engine.
#pragma once

#include <cstddef>
#include <cstdint>

#include <swiglu/swiglu.hpp>

#include "core/engine.hpp"
#include "core/phase.hpp"
#include "core/tiling.hpp"

namespace swiglu::detail {

struct Workspace;

// What a format needs of a Workspace, per chunk of kChunkRows rows.
struct ScratchSizes {
    std::size_t act_floats = 0;       // f32 act between the phases (act)
    std::size_t act_src_bytes = 0;    // act as the down matmul reads it (act_src)
    std::size_t x_src_bytes = 0;      // x as the gate|up matmul reads it (x_src), zeroed once
    std::size_t row_scales = 0;       // per-token scales of x and of act (x_scale, act_scale)
    std::size_t x_prefill_bytes = 0;  // x as a prefill engine reads it (x_prefill), zeroed once
};

class Numerics {
public:
    Numerics(Dtype dtype, std::int64_t d, std::int64_t f) : Numerics(dtype, dtype, d, f) {}
    // A block whose down weight has a format of its own (block formats only).
    Numerics(Dtype gate_up, Dtype down, std::int64_t d, std::int64_t f)
        : dtype_(gate_up), down_dtype_(down), d_(d), f_(f) {}
    virtual ~Numerics() = default;
    Numerics(const Numerics&) = delete;
    Numerics& operator=(const Numerics&) = delete;

    // The numerics the caller asked for (an emulated mode still says bf16).
    Dtype dtype() const { return dtype_; }
    // down's format (dtype() but for a block whose down differs).
    Dtype down_dtype() const { return down_dtype_; }

    // Called once the tiling is known, before any weights: `gate_up_tiles`
    // is the gate|up phase's column tile count.
    void plan(std::int64_t gate_up_tiles) { gate_up_tiles_ = gate_up_tiles; }
    // A step between the phases, one task per row tile after every gate|up
    // task, that calls store_act once more per row on the whole f32 act row
    // (Workspace::act): for a format that quantises act by whole rows
    // (int8) when its rows span several gate|up tiles.
    bool has_act_step() const { return whole_act_rows_ && gate_up_tiles_ > 1; }

    // ---- construction ----------------------------------------------------
    // One column tile of `phase` as the engine should pack it: `plain` is
    // the (k x n) f32 slice, row-major, and may be overwritten (rounded);
    // `first_output` is the tile's first output channel in the matmul's
    // output order. By default the f32 slice itself.
    virtual PlainWeights convert_weights(PhaseId phase, float* plain, std::int64_t k,
                                         std::int64_t n, std::int64_t first_output);

    // ---- forward() -------------------------------------------------------
    virtual ScratchSizes scratch() const = 0;
    // The chunk's `rows` rows of x as the gate|up matmul reads them;
    // `last` is the chunk's last row tile (padded or not).
    virtual void prepare_x(const float* x, std::int64_t rows, const RowTile& last,
                           Workspace& ws) const = 0;
    // Row tile t's inputs to `phase` (x: the chunk's first row of the
    // caller's x), row stride k in the format's units: what TileJob::src
    // hands the engine.
    virtual const void* src(PhaseId phase, const float* x, const RowTile& t,
                            const Workspace& ws) const = 0;

    // The gate|up epilogue, per row of a tile, in this order (forward.cpp):
    //   gate_up_row   the matmul's output -> f32 [gate | up], in place, and
    //                 where SiLU(gate)*up goes for this row (f32)
    //   store_act     act as the down matmul reads it (round, convert,
    //                 quantise); it may change act in place only to the
    //                 value a trace should show (bf16 rounding): a traced
    //                 call copies act after it
    // `gate_up` holds [gate | up] of one row, `width` columns each, of
    // output columns [c0, c0 + width); `row` is relative to the chunk. By
    // default the output is f32 and act stays in f32, in Workspace::act.
    virtual float* gate_up_row(float* gate_up, std::int64_t width, std::int64_t c0,
                               std::int64_t row, Workspace& ws) const;
    virtual void store_act(float* act, std::int64_t width, std::int64_t c0, std::int64_t row,
                           Workspace& ws) const {
        (void)act, (void)width, (void)c0, (void)row, (void)ws;
    }

    // The down epilogue: the valid rows of a (height x width) result tile
    // (row stride ld) of output columns [c0, c0 + width) into y (row stride
    // d). By default a copy.
    virtual void down_out(const float* tile, std::int64_t ld, std::int64_t width, std::int64_t c0,
                          const RowTile& t, float* y, const Workspace& ws) const;

    // The f32 act buffer (Workspace::act) at (row, column c0).
    float* f32_act(std::int64_t row, std::int64_t c0, const Workspace& ws) const;

protected:
    std::int64_t d() const { return d_; }
    std::int64_t f() const { return f_; }
    std::int64_t gate_up_tiles() const { return gate_up_tiles_; }
    // Copies `rows` rows of `width` floats between strided buffers.
    static void copy_rows(const float* from, std::int64_t from_stride, float* to,
                          std::int64_t to_stride, std::int64_t rows, std::int64_t width);

    bool whole_act_rows_ = false;  // see has_act_step

private:
    Dtype dtype_, down_dtype_;
    std::int64_t d_, f_;
    std::int64_t gate_up_tiles_ = 1;
};

}  // namespace swiglu::detail
