// The s8 engine: oneDNN's s8 kernels, and for row tiles of up to
// own_rows_max_ rows our s8 kernel (kernels/s8_gemm.hpp) over the very
// tiles oneDNN packed, once every tile is checked to be in the layout that
// kernel reads; the results are the same exact s32 either way.
#include <cstdint>

#include "core/engine_own_rows.hpp"
#include "kernels/s8_gemm.hpp"

namespace swiglu::detail {

namespace {

using dt = dnnl::memory::data_type;

// Row tiles this tall and less take our s8 kernel. Tile by tile, one core,
// against oneDNN's brgemm on the same packed tiles: from DRAM 1.06-1.48x
// at 1-32 rows, in L2 1.08-1.17x at 1-8 and 0.94-0.96x at 16-32; whole
// blocks 1.0-1.6x at 1-32 tokens. At 64 rows oneDNN's is 1.06-1.1x faster
// and keeps them (docs/measurements.md, "int8's few rows").
constexpr std::int64_t kOwnRowsMax = 32;

// Whether `to` holds the s8 (k x n) matrix q (row-major) exactly as
// s8_gemm.hpp reads it: oneDNN's BA16a64b4a, then each column's
// compensation -128 * sum q. Load time only (it reads every weight).
bool packed_as_s8_gemm_reads(const dnnl::memory& to, std::int64_t k, std::int64_t n,
                             const std::int8_t* q) {
    const dnnl_memory_desc_t& md = to.get_desc().data;
    const auto& b = md.format_desc.blocking;
    const std::int64_t kp = s8_padded(k), np = s8_padded(n);
    if (md.ndims != 2 || md.data_type != dnnl_s8 || md.format_kind != dnnl_blocked ||
        b.inner_nblks != 3 || b.inner_blks[0] != 16 || b.inner_idxs[0] != 0 ||
        b.inner_blks[1] != kS8Block || b.inner_idxs[1] != 1 || b.inner_blks[2] != 4 ||
        b.inner_idxs[2] != 0 || b.strides[0] != kS8Block * kS8Block ||
        b.strides[1] != kp * kS8Block ||
        md.extra.flags != dnnl_memory_extra_flag_compensation_conv_s8s8 ||
        md.extra.compensation_mask != 2 ||
        to.get_desc().get_size() < static_cast<std::size_t>(kp * np + n * 4))
        return false;
    const auto* tile = static_cast<const std::int8_t*>(to.get_data_handle());
    const std::int32_t* compensation = s8_tile_compensation(tile, k, n);
    for (std::int64_t c = 0; c < n; ++c) {
        std::int64_t sum = 0;
        for (std::int64_t i = 0; i < k; ++i) {
            const std::int8_t w = q[i * n + c];
            if (tile[s8_tile_offset(k, i, c)] != w) return false;
            sum += w;
        }
        if (compensation[c] != -128 * sum) return false;  // also where it would not fit
    }
    return true;
}

std::string own_rows_note(std::int64_t rows) {
    return rows > 0 ? " (1-" + std::to_string(rows) + " rows: s8 kernels)" : "";
}

class S8Engine final : public OwnRowsEngine {
public:
    // Row tiles up to `own_rows_max` high on `gemm`; streams with one row
    // (tiling.hpp, min_row_bucket: int8's VNNI kernels).
    S8Engine(std::int64_t own_rows_max, S8Gemm gemm)
        : OwnRowsEngine(EngineKind::s8, {1, 1, true}, own_rows_max, own_rows_note(own_rows_max),
                        KernelDemand::vnni,
                        make_onednn_engine({dt::s8, dt::s8, dt::s32}, {}, KernelDemand::any)),
          gemm_(gemm) {}

    void run(const Phase& phase, const TileJob& job, TileWorker& w) const override {
        const RowTile& t = *job.rows;
        if (t.height() > own_rows_max_) return onednn_->run(phase, job, w);
        gemm_(static_cast<const std::int8_t*>(phase.tile_data[static_cast<std::size_t>(job.tile)]),
              phase.k, phase.outputs(job.tile), static_cast<const std::int8_t*>(job.src), phase.k,
              t.rows, reinterpret_cast<std::int32_t*>(job.result), job.result_stride);
    }

private:
    bool packed_as_ours(const dnnl::memory& to, std::int64_t k, std::int64_t n,
                        const PlainWeights& plain) const override {
        return packed_as_s8_gemm_reads(to, k, n, static_cast<const std::int8_t*>(plain.data));
    }

    S8Gemm gemm_;
};

}  // namespace

// Our kernel is null without AVX512-VNNI: oneDNN's then take every tile.
std::unique_ptr<TileEngine> make_s8_engine(std::int64_t own_rows) {
    const S8Gemm gemm = s8_gemm();
    return std::make_unique<S8Engine>(!gemm ? 0 : own_rows < 0 ? kOwnRowsMax : own_rows, gemm);
}

}  // namespace swiglu::detail
