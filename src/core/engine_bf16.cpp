// The bf16 engine: oneDNN's bf16 kernels, and for one-row tiles (a
// decode's token) our bf16 kernel (kernels/bf16_gemv.hpp) over the very
// tiles oneDNN packed, once every tile is checked to be in the layout that
// kernel reads. oneDNN's brgemm reads a tile as one sequential stream;
// ours reads 4 side by side, and a decode task's adjacent tiles as one
// (joins_tiles), so that its streams run long.
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>

#include "common/half.hpp"
#include "core/engine_own_rows.hpp"
#include "kernels/bf16_gemv.hpp"
#include "kernels/convert.hpp"

namespace swiglu::detail {

namespace {

using dt = dnnl::memory::data_type;

// As oneDNN's bf16 engine had it: 2 bytes a weight, streamed weights in
// row tiles of 4 at least (tiling.hpp, min_row_bucket).
constexpr EngineGeometry kGeometry{2, 2, false};

// Row tiles with this many valid rows or fewer take our kernel: one. One
// token's llama7b block against oneDNN's engine on the same tiles, one
// process, alternating: 1.10-1.29x (1.22-1.29x where the host was quiet);
// a MoE call's experts 1.09-1.17x (docs/measurements.md, "bf16 decode").
// Our kernel reads the tile once per row, so more rows stay with oneDNN's,
// whose brgemm shares each weight load among them (our bf16 panels, which
// read the same way, ran 0.81x at 16 tokens).
constexpr std::int64_t kOwnRowsMax = 1;

// Whether `to` holds the (k x n) matrix `plain` (row-major, f32 or bf16)
// exactly as bf16_gemv.hpp reads it: oneDNN's BA16a64b2a, f32 rounded to
// nearest even (any NaN for a NaN), zeros in the padding. Load time only
// (it reads every weight).
bool packed_as_bf16_gemv_reads(const dnnl::memory& to, std::int64_t k, std::int64_t n,
                               const PlainWeights& plain) {
    const dnnl_memory_desc_t& md = to.get_desc().data;
    const auto& b = md.format_desc.blocking;
    const std::int64_t kp = bf16_padded_k(k), np = bf16_padded_n(n);
    if (md.ndims != 2 || md.data_type != dnnl_bf16 || md.format_kind != dnnl_blocked ||
        b.inner_nblks != 3 || b.inner_blks[0] != 16 || b.inner_idxs[0] != 0 ||
        b.inner_blks[1] != kBf16Block || b.inner_idxs[1] != 1 || b.inner_blks[2] != 2 ||
        b.inner_idxs[2] != 0 || b.strides[0] != kBf16Inputs * kBf16Block ||
        b.strides[1] != kp * kBf16Block || md.extra.flags != 0 || md.padded_dims[0] != kp ||
        md.padded_dims[1] != np ||
        to.get_desc().get_size() != static_cast<std::size_t>(kp * np) * sizeof(std::uint16_t))
        return false;
    if (plain.type != dt::f32 && plain.type != dt::bf16) return false;
    const auto* tile = static_cast<const std::uint16_t*>(to.get_data_handle());
    for (std::int64_t c = 0; c < np; ++c)
        for (std::int64_t i = 0; i < kp; ++i) {
            const std::uint16_t held = tile[bf16_tile_offset(k, i, c)];
            if (i >= k || c >= n) {
                if (held != 0) return false;
                continue;
            }
            std::uint16_t want;
            if (plain.type == dt::f32)
                to_bf16(static_cast<const float*>(plain.data) + i * n + c, &want, 1);
            else
                want = static_cast<const std::uint16_t*>(plain.data)[i * n + c];
            if (held != want && !(std::isnan(bf16_to_f32(held)) && std::isnan(bf16_to_f32(want))))
                return false;
        }
    return true;
}

std::string own_rows_note(std::int64_t rows) { return rows > 0 ? " (1 row: bf16 gemv)" : ""; }

class Bf16Engine final : public OwnRowsEngine {
public:
    // Row tiles of `own_rows` valid rows or fewer (0 or 1) on `gemv`. The
    // row tiles stay as they were: a streamed block's one-row tile is 4
    // high (computed_rows: its padding rows' act is computed from whatever
    // they hold, as with oneDNN's kernels, and never read); our kernel
    // computes the valid row.
    Bf16Engine(std::int64_t own_rows, Bf16Gemv gemv)
        : OwnRowsEngine(
              EngineKind::onednn, kGeometry, own_rows, own_rows_note(own_rows), KernelDemand::fast,
              make_onednn_engine({dt::bf16, dt::bf16, dt::f32}, kGeometry, KernelDemand::fast)),
          gemv_(gemv) {}

    void run(const Phase& phase, const TileJob& job, TileWorker& w) const override {
        const RowTile& t = *job.rows;
        if (t.rows > own_rows_max_) return onednn_->run(phase, job, w);
        gemv_(
            static_cast<const std::uint16_t*>(phase.tile_data[static_cast<std::size_t>(job.tile)]),
            phase.k, phase.outputs(job.tile, job.tiles), static_cast<const std::uint16_t*>(job.src),
            phase.k, t.rows, job.result, job.result_stride);
    }
    // oneDNN's tiles of whole column blocks packed back to back are one
    // wider tile's bytes (bf16_gemv.hpp's layout), for our kernel to read
    // as one: its runs of blocks are longer streams (bf16_gemv_avx512.cpp).
    bool joins_tiles(const Phase& phase) const override {
        return own_rows_max_ > 0 && tiles_back_to_back(phase, kBf16Block);
    }
    bool joins_for(const RowTile& t) const override { return t.rows <= own_rows_max_; }

private:
    bool packed_as_ours(const dnnl::memory& to, std::int64_t k, std::int64_t n,
                        const PlainWeights& plain) const override {
        return packed_as_bf16_gemv_reads(to, k, n, plain);
    }

    Bf16Gemv gemv_;
};

}  // namespace

// Our kernel is null without AVX-512: oneDNN's then take every tile.
std::unique_ptr<TileEngine> make_bf16_engine(std::int64_t own_rows) {
    const Bf16Gemv gemv = bf16_gemv();
    return std::make_unique<Bf16Engine>(!gemv ? 0 : own_rows < 0 ? kOwnRowsMax : own_rows, gemv);
}

}  // namespace swiglu::detail
