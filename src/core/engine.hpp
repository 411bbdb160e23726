// An engine: what runs a tile matmul, apart from the numbers' format
// (core/numerics.hpp). It owns how a phase's weight tiles are laid out and
// packed, the kernels (oneDNN's, made when the block is built, or our own)
// and the one call that runs a tile: result = the rows' inputs @ tile. The
// forward and the backward hold one engine per block and call it per tile;
// which engine, and so which kernels, is chosen once when the block is built
// (core/precision.hpp), never per call.
//
// The engines (one factory each, in engine_<name>.cpp):
//   onednn   oneDNN's matmul kernels (brgemm, gemm:jit) on tiles in the
//            layout oneDNN picks
//   panels   f32 or bf16 weights in panels on our panel kernels
//            (kernels/panel_gemm.hpp)
//   grouped  records of GGUF's block formats on our grouped and K-quant
//            kernels (kernels/grouped_gemm.hpp, kquant_gemm.hpp)
//   s8       oneDNN's s8 kernels, and our s8 kernel (kernels/s8_gemm.hpp) for
//            int8's few-row tiles over the very tiles oneDNN packed
//   prefill  the grouped engine, but full-height row tiles unpack the weight
//            tile once (f32 or bf16) and run oneDNN's kernel on it
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <swiglu/swiglu.hpp>

#include "common/aligned_buffer.hpp"
#include "core/phase.hpp"
#include "core/tiling.hpp"
#include "core/weight_source.hpp"
#include "onednn/matmul.hpp"

namespace swiglu::detail {

// One worker's state for running tiles of two phases (the forward's gate|up
// and down, or the backward's dact and dx): oneDNN's bindings, the result
// tile, the scratch. Made once per worker; the hot path allocates nothing.
struct TileWorker {
    // `tile_floats`: the largest result tile; `staging_bytes`: what the
    // engine unpacks a weight tile into (TileEngine::staging_bytes).
    TileWorker(const Phase& first, const Phase& second, std::size_t tile_floats,
               std::size_t scratchpad_bytes, std::size_t staging_bytes);

    MatmulBinding& binding(int phase, bool tail, int bucket) {
        return bindings[phase][tail ? 1 : 0][bucket];
    }

    dnnl::stream stream;
    MatmulBinding bindings[kPhases][2][kRowBuckets];               // [phase][tail][bucket]
    MatmulBinding prefill_bindings[kPhases][2][kMaxPrefillTiles];  // Phase::prefill
    AlignedBuffer<float> tile;  // one matmul result tile (f32 or s32; a prefill task's: all rows)
    AlignedBuffer<unsigned char> scratchpad;  // oneDNN's, for any kernel
    // The prefill engine: the weight tile this worker unpacked last, as
    // oneDNN reads it (per phase and tail width).
    AlignedBuffer<unsigned char> unpacked;
    dnnl::memory unpacked_weights[kPhases][2];
};

// One tile matmul: result (rows x the tile's outputs) = the inputs of the
// rows @ column tile `tile` of the phase.
struct TileJob {
    int phase = 0;          // which of the worker's two phases (its bindings)
    std::int64_t tile = 0;  // the column tile
    const RowTile* rows;    // `row_tiles` consecutive row tiles: more than one
    int row_tiles = 1;      // only for the prefill engine's full-height tiles
    const void* src;        // the first row's inputs (Numerics::src), row stride k
    // Row-major, row stride `result_stride`: the tile's outputs where
    // oneDNN's kernels run (they write dense tiles; any other stride is
    // copied out of the worker's tile: the backward's dx), any for ours.
    float* result;
    std::int64_t result_stride;
    // Inputs [k0, k1) only, adding to result when k0 > 0 (k1 == 0: all of
    // them, one kernel call): engines with input_slices() only.
    std::int64_t k0 = 0, k1 = 0;
    // Adjacent column tiles from `tile` in this one call, their outputs side
    // by side in each result row: more than one only on a Phase::joinable.
    std::int64_t tiles = 1;
};

// A (k x n) row-major plain weight tile as the numerics hands it to the
// engine to pack: f32 (rounded or not), or s8 (int8's quantised weights).
struct PlainWeights {
    const void* data;
    dnnl::memory::data_type type;
};

// What sizes the tiles and the row tiles (core/tiling.hpp), per engine.
struct EngineGeometry {
    // Bytes of one packed weight (Q4_0: 18 / 32): tells whether the weights
    // stream from DRAM.
    double bytes_per_weight = 4;
    // Bytes per weight that size the column tiles: a prefill engine's
    // unpacked weights should fit in L2; our kernels' tiles are cut as for
    // f32 to keep as many tasks as f32's.
    double tile_bytes_per_weight = 4;
    // Whether its kernels stream weights from DRAM as fast with one row as
    // with four (tiling.hpp, min_row_bucket).
    bool streams_with_one_row = false;
    // Gate|up tile widths are multiples of it: 64, or 256 where act is
    // quantised in the gate|up tile per block of 256 (K-quants' ActBlockK).
    std::int64_t gate_up_column_multiple = 64;
};

// What an engine asks of the oneDNN kernels it made before a block takes it
// (else the next candidate mode is tried):
//   any        whatever oneDNN chose
//   fast       no reference kernel (slower than f32's: bf16 without AVX-512)
//   vnni       brgemm for s8, else Error(unsupported): without AVX512-VNNI
//              oneDNN 2.6 picks gemm:jit, whose results did not match our
//              int8 simulation in tests (not pursued further)
//   amx        AMX brgemm kernels only (the grouped formats' automatic prefill)
enum class KernelDemand { any, fast, vnni, amx };

enum class EngineKind { onednn, panels, grouped, s8, prefill };

class TileEngine {
public:
    TileEngine(EngineKind kind, EngineGeometry geometry, std::int64_t own_rows_max,
               std::string note)
        : kind_(kind), geometry_(geometry), own_rows_max_(own_rows_max), note_(std::move(note)) {}
    virtual ~TileEngine() = default;
    TileEngine(const TileEngine&) = delete;
    TileEngine& operator=(const TileEngine&) = delete;

    EngineKind kind() const { return kind_; }
    const EngineGeometry& geometry() const { return geometry_; }
    // The rows of a row tile its matmuls compute: padding rows too where
    // oneDNN computes them (dropped later); our own kernels compute valid
    // rows only (5-7 tokens ran 8 rows' work, 9-15 sixteen's), and their
    // padding rows of act are never read. Depends on the tile's height
    // alone, so both phases of a tile compute the same rows.
    std::int64_t computed_rows(const RowTile& t) const {
        return t.height() <= own_rows_max_ ? t.rows : t.height();
    }
    // Whether run() takes TileJob::k0, k1 (the backward's dx in slices).
    bool input_slices() const { return kind_ == EngineKind::panels; }
    // Whether full-height row tiles run as one job (TileJob::row_tiles).
    bool batches_full_tiles() const { return kind_ == EngineKind::prefill; }
    // Judges the kernels made by make_kernels (gate|up's 64-row kernel
    // first: it picked the packed layout; none for our own kernels): false
    // makes the block try the next candidate; KernelDemand::vnni throws.
    bool accepts(const std::vector<const MatmulKernel*>& kernels) const;
    // Bytes each worker needs to unpack a weight tile (TileWorker::unpacked).
    std::size_t staging_bytes() const { return staging_bytes_; }
    // Appended to the oneDNN implementation names (Implementation::matmul).
    const std::string& note() const { return note_; }

    // ---- the hooks -------------------------------------------------------
    // Makes the phases' oneDNN kernels (none for our own kernels) for row
    // heights 1 << min_bucket .. 64 and both tile widths; `streamed`: the
    // weights stream from DRAM. Throws Error(unsupported) where oneDNN
    // cannot serve at all.
    virtual void make_kernels(Phase& first, Phase& second, int min_bucket, bool streamed) {
        (void)first, (void)second, (void)min_bucket, (void)streamed;
    }
    // The layout of a packed tile of `phase` (a u8 buffer for our kernels).
    virtual dnnl::memory::desc tile_layout(const Phase& phase, std::int64_t tile) const = 0;
    // Packs a plain (k x n) tile into `to` (tile_layout's).
    virtual void pack(const Phase& phase, const PlainWeights& plain, std::int64_t k, std::int64_t n,
                      const dnnl::memory& to) = 0;
    // Packs a tile straight from the weights as stored, where the engine can
    // hold them without loss (q8_0 / q4_0 from GGUF blocks of the same
    // format): the tile's columns are rows [c0, c0 + width) of each source
    // in turn. False: not possible here; the caller packs a plain tile.
    virtual bool pack_stored(const Phase& phase, const WeightSource* const* sources, int count,
                             std::int64_t c0, std::int64_t width, std::int64_t k,
                             const dnnl::memory& to) {
        (void)phase, (void)sources, (void)count, (void)c0, (void)width, (void)k, (void)to;
        return false;
    }
    // The f32 weights of a packed tile back as the plain (k x n) slice, for
    // the backward, where the engine holds f32 exactly; false elsewhere.
    virtual bool unpack_f32(const dnnl::memory& tile, std::int64_t k, std::int64_t n,
                            float* plain) const {
        (void)tile, (void)k, (void)n, (void)plain;
        return false;
    }
    // Runs one job on the worker's state: every engine runs every row tile.
    virtual void run(const Phase& phase, const TileJob& job, TileWorker& worker) const = 0;
    // Whether one kernel call may run several of the phase's packed tiles
    // (TileJob::tiles): they lie back to back, each but the last a whole
    // layout unit wide, so that together they are one wider tile's bytes.
    virtual bool joins_tiles(const Phase& phase) const {
        (void)phase;
        return false;
    }
    // Whether a joinable phase's tiles join for a chunk of this one row
    // tile: false where its rows go to kernels that run one tile a call
    // (oneDNN's, under an engine whose own kernel joins).
    virtual bool joins_for(const RowTile& t) const {
        (void)t;
        return true;
    }

protected:
    // For joins_tiles: whether the phase's packed tiles lie back to back in
    // its arena, each but the last a multiple of `unit` outputs wide (a
    // layout whose column blocks of `unit` outputs follow one another, with
    // nothing after a tile's weights, then makes them one wider tile).
    static bool tiles_back_to_back(const Phase& phase, std::int64_t unit);

    EngineKind kind_;
    EngineGeometry geometry_;
    std::int64_t own_rows_max_;  // the tallest row tiles computed without padding
    std::string note_;
    KernelDemand demand_ = KernelDemand::any;
    std::size_t staging_bytes_ = 0;
};

// oneDNN's kernels of `types`; `note` says what the description should.
std::unique_ptr<TileEngine> make_onednn_engine(const MatmulTypes& types, EngineGeometry geometry,
                                               KernelDemand demand, std::string note = {});
// Our panel kernels on f32 or bf16 panels (dtype f32 or bf16).
std::unique_ptr<TileEngine> make_panels_engine(Dtype dtype);
// Our grouped and K-quant kernels on records of the block formats, each
// phase in its own (gate|up's, down's).
std::unique_ptr<TileEngine> make_grouped_engine(Dtype gate_up, Dtype down);
// The grouped engine whose full-height row tiles run oneDNN's kernels of
// `types` on unpacked weight tiles (f32 or bf16), as `demand` allows.
std::unique_ptr<TileEngine> make_prefill_engine(Dtype dtype, const MatmulTypes& types,
                                                KernelDemand demand);
// oneDNN's s8 kernels, and ours for row tiles up to `own_rows` high (-1: the
// engine's choice, 0: none).
std::unique_ptr<TileEngine> make_s8_engine(std::int64_t own_rows);
// oneDNN's bf16 kernels, and ours for one-row tiles (`own_rows`: -1 the
// engine's choice, 0 none, 1).
std::unique_ptr<TileEngine> make_bf16_engine(std::int64_t own_rows);

}  // namespace swiglu::detail
