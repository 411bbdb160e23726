// A precision mode: everything about the block that depends on the number
// format, in one object resolved once when the Ffn is built. It owns how the
// weights are packed, how forward() prepares the matmuls' inputs, the
// epilogues of both phases, the scratch that takes and the description.
// forward() (core/forward.cpp) is one straight path that calls these hooks;
// a new weight format is one new subclass in its own file (plus its tests)
// and a line in precision_candidates().
//
// The modes today:
//   f32            f32 weights, f32 matmuls (precision_f32.cpp)
//   bf16           bf16 weights and inputs on oneDNN's bf16 kernels (precision_bf16.cpp)
//   panels         f32 or bf16 weights in panels on kernels of our own
//                  (kernels/panel_gemm.hpp), 64-row tiles on oneDNN's f32 kernels: f32
//                  where oneDNN has no brgemm (no AVX-512), bf16 where it has no bf16
//                  kernel; the CPU needs AVX2 (precision_panels.cpp)
//   bf16 emulated  bf16 numerics (rounded weights and inputs) on f32 kernels, where
//                  oneDNN has no fast bf16 kernel nor the CPU AVX2 (precision_bf16_emulated.cpp)
//   int8           s8 weights with per-channel scales, x and act quantised per token,
//                  act either in the gate|up task or in a step of its own (precision_int8.cpp)
//   q8_0, q4_0     GGUF's grouped formats on kernels of our own (kernels/grouped_gemm.hpp),
//                  x and act quantised per block of 32 (precision_grouped.cpp)
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <swiglu/swiglu.hpp>

#include "core/tiling.hpp"
#include "core/weight_source.hpp"
#include "onednn/matmul.hpp"

namespace swiglu::detail {

struct Workspace;

// The two matmuls of the block; indexes per-phase tables (kernels, bindings).
enum class PhaseId : int { gate_up = 0, down = 1 };
inline constexpr int kPhases = 2;

// What a mode needs of a Workspace, per chunk of kChunkRows rows.
struct ScratchSizes {
    std::size_t act_floats = 0;       // f32 act between the phases (act)
    std::size_t act_src_bytes = 0;    // act as the down matmul reads it (act_src)
    std::size_t x_src_bytes = 0;      // x as the gate|up matmul reads it (x_src), zeroed once
    std::size_t row_scales = 0;       // per-token scales of x and of act (x_scale, act_scale)
    std::size_t x_prefill_bytes = 0;  // x as a prefill path reads it (x_prefill), zeroed once
};

class Precision {
public:
    Precision(Dtype dtype, std::int64_t d, std::int64_t f) : dtype_(dtype), d_(d), f_(f) {}
    virtual ~Precision() = default;
    Precision(const Precision&) = delete;
    Precision& operator=(const Precision&) = delete;

    // The numerics the caller asked for (an emulated mode still says bf16).
    Dtype dtype() const { return dtype_; }

    // ---- construction ----------------------------------------------------
    // The data types of the matmuls this mode runs.
    virtual MatmulTypes matmul_types() const = 0;
    // Bytes of one packed weight (Q4_0: 18 / 32): tells whether the weights
    // stream from DRAM, and sizes the tiles (see tile_bytes_per_weight).
    virtual double bytes_per_weight() const = 0;
    // Whether its kernels stream weights from DRAM as fast with one row as
    // with four (tiling.hpp, min_row_bucket).
    virtual bool streams_with_one_row() const { return false; }
    // Judges the kernels oneDNN chose for both phases, once they exist
    // (gate|up's 64-row kernel first: it picked the packed layout; none for
    // a mode with kernels of its own, asked before it packs): false makes
    // the Ffn try the next candidate mode (see precision_candidates); throws
    // Error(unsupported) to refuse outright.
    virtual bool accepts(const std::vector<const MatmulKernel*>& kernels) const;
    // Called once the tiling is known, before any pack_tile: `gate_up_tiles`
    // is the gate|up phase's column tile count.
    virtual void plan(std::int64_t gate_up_tiles) { (void)gate_up_tiles; }
    // Packs one column tile of `phase` into `to`: `plain` is the (k x n)
    // f32 slice, row-major, and may be overwritten; `first_output` is the
    // tile's first output channel in the matmul's output order.
    virtual void pack_tile(PhaseId phase, float* plain, std::int64_t k, std::int64_t n,
                           std::int64_t first_output, const dnnl::memory& to);
    // Packs one column tile straight from the weights as stored, where the
    // mode can hold them without loss (q8_0 / q4_0 from GGUF blocks of the
    // same format): the tile's columns are rows [c0, c0 + width) of each
    // source in turn ([gate | up], or down). False: not possible here, the
    // caller decodes to f32 and calls pack_tile.
    virtual bool pack_stored_tile(const WeightSource* const* sources, int count, std::int64_t c0,
                                  std::int64_t width, std::int64_t k, const dnnl::memory& to) {
        (void)sources, (void)count, (void)c0, (void)width, (void)k, (void)to;
        return false;
    }
    // The f32 weights of a packed tile back as the plain (k x n) row-major
    // slice pack_tile got, for the backward (core/backward.hpp), where the
    // mode holds them exactly (f32); false elsewhere.
    virtual bool unpack_f32(const dnnl::memory& tile, std::int64_t k, std::int64_t n,
                            float* plain) const {
        (void)tile, (void)k, (void)n, (void)plain;
        return false;
    }
    // Appended to the oneDNN implementation names (Implementation::matmul).
    virtual std::string note() const { return {}; }

    // ---- a mode with kernels of its own (the grouped formats) -----------
    // It runs every tile's matmul itself (matmul_tile) on tiles in its own
    // layout, own_tile_bytes(k, n) each (pack_tile gets them as a u8
    // dnnl::memory); oneDNN makes no kernels for it, and forward() calls
    // neither gate_up_src nor down_src.
    virtual bool own_kernels() const { return false; }
    virtual std::size_t own_tile_bytes(std::int64_t k, std::int64_t n) const;
    // `result` = the row tile's inputs (its full height) @ the packed (k x n)
    // `tile` of `phase`, row-major (row stride n), as oneDNN's kernels write it.
    virtual void matmul_tile(PhaseId phase, const void* tile, std::int64_t k, std::int64_t n,
                             const RowTile& rows, const Workspace& ws, float* result) const;

    // Whether row tile t's matmuls run on matmul_tile (valid rows only)
    // rather than oneDNN's kernels: every tile for a mode with kernels of its
    // own; int8 takes its few-row tiles on kernels of its own over the tiles
    // oneDNN packed (kernels/s8_gemm.hpp).
    virtual bool own_rows(const RowTile& t) const {
        (void)t;
        return own_kernels();
    }

    // Its prefill path, where it has one: full-height row tiles (64 rows)
    // run oneDNN's 64-row kernel on a weight tile the task unpacks once for
    // all of them (forward.cpp), with plain (k x n) weights of the chosen
    // types. PackedBlock tries prefill_candidates() in order (set_prefill
    // with each, which may change tile_bytes_per_weight, then the kernels,
    // judged by accepts_prefill) and ends with set_prefill(nullptr) if none
    // is accepted.
    virtual std::vector<MatmulTypes> prefill_candidates() const { return {}; }
    virtual void set_prefill(const MatmulTypes* types) { (void)types; }
    virtual bool accepts_prefill(const MatmulKernel& kernel) const;
    // Bytes a worker needs to unpack a (k x n) tile (the weights oneDNN
    // reads first, then any staging of the mode's own).
    virtual std::size_t unpacked_bytes(std::int64_t k, std::int64_t n) const;
    virtual void unpack_tile(const void* tile, std::int64_t k, std::int64_t n, void* out) const;
    // A prefill row tile's input to `phase`'s matmul.
    virtual const void* prefill_src(PhaseId phase, const RowTile& rows, const Workspace& ws) const;
    // Bytes per weight that size the column tiles: by default the packed
    // weight's; a prefill path's unpacked weights should fit in L2 instead.
    virtual double tile_bytes_per_weight() const { return bytes_per_weight(); }

    // ---- forward() -------------------------------------------------------
    virtual ScratchSizes scratch() const = 0;
    // The chunk's `rows` rows of x as the gate|up matmul reads them;
    // `last` is the chunk's last row tile (padded or not).
    virtual void prepare_x(const float* x, std::int64_t rows, const RowTile& last,
                           Workspace& ws) const = 0;
    virtual const void* gate_up_src(const float* x, const RowTile& t,
                                    const Workspace& ws) const = 0;

    // The gate|up epilogue, per row of a tile, in this order (forward.cpp):
    //   gate_up_to_f32   the matmul's output -> f32 [gate | up], in place
    //   act_row          where SiLU(gate)*up goes for this row (f32)
    //   store_act        act as the down matmul reads it (round, convert, quantise);
    //                    it may change act in place only to the value a trace
    //                    should show (the emulated mode's bf16 rounding): a
    //                    traced call copies act after it
    // `gate_up` holds [gate | up] of one row, `width` columns each, of
    // output columns [c0, c0 + width); `row` is relative to the chunk.
    virtual void gate_up_to_f32(float* gate_up, std::int64_t width, std::int64_t c0,
                                std::int64_t row, const Workspace& ws) const;
    // By default act stays in f32 between the phases, in Workspace::act.
    virtual float* act_row(float* gate_up, std::int64_t c0, std::int64_t row, Workspace& ws) const;
    virtual void store_act(float* act, std::int64_t width, std::int64_t c0, std::int64_t row,
                           Workspace& ws) const;

    // A step between the phases that needs whole act rows (int8 with more
    // than one gate|up tile): one task per row tile, after every gate|up task.
    virtual bool has_act_step() const { return false; }
    virtual void act_step(std::int64_t row, Workspace& ws) const;

    // By default the down matmul reads that f32 act.
    virtual const void* down_src(const RowTile& t, const Workspace& ws) const;
    // The down epilogue: the valid rows of a (height x width) result tile of
    // output columns [c0, c0 + width) into y (row stride d).
    virtual void down_out(const float* tile, std::int64_t width, std::int64_t c0, const RowTile& t,
                          float* y, const Workspace& ws) const;

protected:
    std::int64_t d() const { return d_; }
    std::int64_t f() const { return f_; }
    // The f32 act buffer (Workspace::act) at (row, column c0).
    float* f32_act(std::int64_t row, std::int64_t c0, const Workspace& ws) const;
    // Copies `rows` rows of `width` floats between strided buffers.
    static void copy_rows(const float* from, std::int64_t from_stride, float* to,
                          std::int64_t to_stride, std::int64_t rows, std::int64_t width);

private:
    Dtype dtype_;
    std::int64_t d_, f_;
};

// The modes that can serve `dtype`, best first: the Ffn takes the first
// whose kernels it accepts (f32: panels, then oneDNN's; bf16: native, then
// panels, then emulated).
std::vector<std::unique_ptr<Precision>> precision_candidates(Dtype dtype, std::int64_t d,
                                                             std::int64_t f);

// One factory per mode file.
std::unique_ptr<Precision> make_f32_precision(std::int64_t d, std::int64_t f);
std::unique_ptr<Precision> make_bf16_precision(std::int64_t d, std::int64_t f);
std::unique_ptr<Precision> make_panels_precision(Dtype dtype, std::int64_t d, std::int64_t f);
std::unique_ptr<Precision> make_bf16_emulated_precision(std::int64_t d, std::int64_t f);
std::unique_ptr<Precision> make_int8_precision(std::int64_t d, std::int64_t f);
std::unique_ptr<Precision> make_grouped_precision(Dtype dtype, std::int64_t d, std::int64_t f);

// Whether f32 and bf16 may take the panels mode (process-wide, for blocks
// built from now on; tests and benchmarks turn it off to run oneDNN's f32
// kernels, and bf16's emulated mode).
void set_panels(bool enabled) noexcept;
bool panels_enabled() noexcept;

// Where q8_0 / q4_0 run full-height row tiles (precision_grouped.cpp):
// automatic: through oneDNN on tiles unpacked to bf16 where it has an AMX
// kernel, on the grouped kernels elsewhere; never: on the grouped
// kernels always; f32, bf16: through oneDNN on tiles unpacked to that type,
// whatever its kernel (for tests and measurements).
enum class GroupedPrefill { automatic, never, f32, bf16 };
// The policy for blocks built from now on (process-wide; tests, benchmarks).
void set_grouped_prefill(GroupedPrefill policy) noexcept;
GroupedPrefill grouped_prefill() noexcept;

// The tallest int8 row tiles that run on our s8 kernel where it exists
// (precision_int8.cpp): kInt8OwnRowsAuto for the mode's own choice, 0 for
// none (oneDNN's kernels only), up to 64 (every tile). For blocks built from
// now on (process-wide; tests, benchmarks).
inline constexpr std::int64_t kInt8OwnRowsAuto = -1;
void set_int8_own_rows(std::int64_t max_rows) noexcept;
std::int64_t int8_own_rows() noexcept;

}  // namespace swiglu::detail
