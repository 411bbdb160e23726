// int8: s8 weights with one symmetric scale per output channel, x and act
// quantised to s8 per token at run time (dynamic, symmetric), s32
// accumulation, f32 scales applied in the epilogues. Quantising act needs
// its whole row: when one gate|up tile spans all of f (small blocks, e.g.
// glass), the task that computes a row quantises it while it is in L1 (no
// f32 act buffer); otherwise a step of its own does, after every gate|up
// task of the chunk.
//
// Row tiles of up to kOwnRowsMax rows run on our s8 kernel
// (kernels/s8_gemm.hpp) over the very tiles oneDNN packed, once every tile
// is checked to be in the layout that kernel reads; the results are the
// same exact s32 either way.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "core/precision.hpp"
#include "core/workspace.hpp"
#include "kernels/convert.hpp"
#include "kernels/s8_gemm.hpp"

namespace swiglu::detail {

namespace {

// Row tiles this tall and less take our s8 kernel. Tile by tile, one core,
// against oneDNN's brgemm on the same packed tiles: from DRAM 1.06-1.48x
// at 1-32 rows, in L2 1.08-1.17x at 1-8 and 0.94-0.96x at 16-32; whole
// blocks 1.0-1.6x at 1-32 tokens. At 64 rows oneDNN's is 1.06-1.1x faster
// and keeps them (docs/measurements.md, "int8's few rows").
constexpr std::int64_t kOwnRowsMax = 32;

std::atomic<std::int64_t> g_own_rows{kInt8OwnRowsAuto};  // set_int8_own_rows

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

class Int8 final : public Precision {
public:
    Int8(std::int64_t d, std::int64_t f) : Precision(Dtype::int8, d, f) {}

    MatmulTypes matmul_types() const override {
        using dt = dnnl::memory::data_type;
        return {dt::s8, dt::s8, dt::s32};
    }
    double bytes_per_weight() const override { return 1; }
    bool streams_with_one_row() const override { return true; }

    // Without AVX512-VNNI oneDNN 2.6 picks gemm:jit for s8 x s8, whose
    // results did not match our int8 simulation in tests (not pursued
    // further): refuse rather than compute garbage.
    // (The gate|up 64-row kernel speaks for the ISA oneDNN found.)
    bool accepts(const std::vector<const MatmulKernel*>& kernels) const override {
        const MatmulKernel& top = *kernels.front();
        if (!is_brgemm_kernel(top))
            throw Error(Status::unsupported,
                        "Ffn: int8 needs a CPU with AVX512-VNNI (oneDNN chose " +
                            top.implementation + "); use Dtype::bf16 or Dtype::f32 here");
        return true;
    }

    // After accepts(): a refused int8 never allocates its scales.
    void plan(std::int64_t gate_up_tiles) override {
        act_in_gate_up_ = gate_up_tiles == 1;
        const std::int64_t asked = int8_own_rows();
        own_rows_max_ = !s8_gemm_ ? 0 : asked == kInt8OwnRowsAuto ? kOwnRowsMax : asked;
        gate_up_scales_.resize(static_cast<std::size_t>(2 * f()));
        down_scales_.resize(static_cast<std::size_t>(d()));
    }

    void pack_tile(PhaseId phase, float* plain, std::int64_t k, std::int64_t n,
                   std::int64_t first_output, const dnnl::memory& to) override {
        // One symmetric scale per output channel (column).
        std::vector<std::int8_t> q(static_cast<std::size_t>(k * n));
        float* scales =
            (phase == PhaseId::gate_up ? gate_up_scales_ : down_scales_).data() + first_output;
        for (std::int64_t c = 0; c < n; ++c)
            scales[c] = quantize_column(plain + c, static_cast<std::size_t>(k), n, q.data() + c, n);
        reorder(q.data(), dnnl::memory::desc({k, n}, dnnl::memory::data_type::s8, {n, 1}), to);
        if (own_rows_max_ > 0 && !packed_as_s8_gemm_reads(to, k, n, q.data())) own_rows_max_ = 0;
    }

    bool own_rows(const RowTile& t) const override { return t.height() <= own_rows_max_; }

    void matmul_tile(PhaseId phase, const void* tile, std::int64_t k, std::int64_t n,
                     const RowTile& t, const Workspace& ws, float* result) const override {
        const std::int8_t* src =
            phase == PhaseId::gate_up ? x_s8(ws) + t.row0 * d() : act_s8(ws) + t.row0 * f();
        s8_gemm_(static_cast<const std::int8_t*>(tile), k, n, src, k, t.rows,
                 reinterpret_cast<std::int32_t*>(result), n);
    }

    std::string note() const override {
        return own_rows_max_ > 0 ? " (1-" + std::to_string(own_rows_max_) + " rows: s8 kernels)"
                                 : "";
    }

    ScratchSizes scratch() const override {
        const auto chunk_f = static_cast<std::size_t>(kChunkRows * f());
        return {act_in_gate_up_ ? 0 : chunk_f, chunk_f, static_cast<std::size_t>(kChunkRows * d()),
                static_cast<std::size_t>(kChunkRows)};
    }

    void prepare_x(const float* x, std::int64_t rows, const RowTile&,
                   Workspace& ws) const override {
        for (std::int64_t r = 0; r < rows; ++r)
            ws.x_scale.data()[r] =
                quantize_row(x + r * d(), x_s8(ws) + r * d(), static_cast<std::size_t>(d()));
    }

    const void* gate_up_src(const float*, const RowTile& t, const Workspace& ws) const override {
        return x_s8(ws) + t.row0 * d();
    }

    void gate_up_to_f32(float* gate_up, std::int64_t width, std::int64_t c0, std::int64_t row,
                        const Workspace& ws) const override {
        dequantize(gate_up, gate_up, static_cast<std::size_t>(2 * width), ws.x_scale.data()[row],
                   gate_up_scales_.data() + 2 * c0);
    }

    float* act_row(float* gate_up, std::int64_t c0, std::int64_t row,
                   Workspace& ws) const override {
        return act_in_gate_up_ ? gate_up : f32_act(row, c0, ws);
    }

    void store_act(float* act, std::int64_t, std::int64_t, std::int64_t row,
                   Workspace& ws) const override {
        if (act_in_gate_up_) quantize_act(act, row, ws);  // the tile spans f: the whole row
    }

    bool has_act_step() const override { return !act_in_gate_up_; }

    void act_step(std::int64_t row, Workspace& ws) const override {
        quantize_act(f32_act(row, 0, ws), row, ws);
    }

    const void* down_src(const RowTile& t, const Workspace& ws) const override {
        return act_s8(ws) + t.row0 * f();
    }

    void down_out(const float* tile, std::int64_t width, std::int64_t c0, const RowTile& t,
                  float* y, const Workspace& ws) const override {
        for (std::int64_t r = 0; r < t.rows; ++r)
            dequantize(tile + r * width, y + (t.row0 + r) * d() + c0,
                       static_cast<std::size_t>(width), ws.act_scale.data()[t.row0 + r],
                       down_scales_.data() + c0);
    }

private:
    void quantize_act(const float* act, std::int64_t row, Workspace& ws) const {
        ws.act_scale.data()[row] =
            quantize_row(act, act_s8(ws) + row * f(), static_cast<std::size_t>(f()));
    }
    static std::int8_t* x_s8(const Workspace& ws) {
        return reinterpret_cast<std::int8_t*>(ws.x_src.data());
    }
    static std::int8_t* act_s8(const Workspace& ws) {
        return reinterpret_cast<std::int8_t*>(ws.act_src.data());
    }

    // One scale per output channel, in each matmul's output order (gate|up
    // tile j's outputs start at 2 * its first column).
    std::vector<float> gate_up_scales_, down_scales_;
    bool act_in_gate_up_ = false;
    // Our s8 kernel (null without AVX512-VNNI), and the tallest row tiles
    // it takes: 0 until plan(), and for good once any tile is not in its
    // layout.
    S8Gemm s8_gemm_ = s8_gemm();
    std::int64_t own_rows_max_ = 0;
};

}  // namespace

void set_int8_own_rows(std::int64_t max_rows) noexcept { g_own_rows.store(max_rows); }
std::int64_t int8_own_rows() noexcept { return g_own_rows.load(); }

std::unique_ptr<Precision> make_int8_precision(std::int64_t d, std::int64_t f) {
    return std::make_unique<Int8>(d, f);
}

}  // namespace swiglu::detail
