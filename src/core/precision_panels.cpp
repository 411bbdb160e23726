// f32 and bf16 on panel kernels of our own (kernels/panel_gemm.hpp), where
// oneDNN 2.6 serves poorly: without AVX-512 it has no brgemm (its gemm:jit
// reads our row-major tiles 128 bytes at a time) and no bf16 matmul at all
// (then bf16 weights would be read as f32, 4 bytes each); with AVX-512 its
// f32 brgemm decodes slower than they do.
// The panel kernels run every row tile: a prefill path (64-row tiles
// unpacked to f32 for oneDNN's kernel, as the grouped formats have) was
// built and measured no faster at 64 and 512 tokens, and slower where the
// unpacking is not amortised (f32 at 64 tokens: 25-35 %). bf16 rounds x and
// act to bf16 where the bf16 mode rounds them: bf16 numerics with f32
// accumulation, as the other bf16 modes compute.
//
// On an AVX2 EPYC they ran llama7b's decode and ridge (1-16 tokens)
// 1.1-3.6x faster than oneDNN's f32 kernels, and 64 and 512 tokens level
// (docs/measurements.md, "f32 and bf16 on panel kernels").
#include <atomic>
#include <cstring>

#include "core/precision.hpp"
#include "core/workspace.hpp"
#include "kernels/convert.hpp"
#include "kernels/panel_gemm.hpp"

namespace swiglu::detail {

namespace {

std::atomic<bool> g_enabled{true};

class Panels final : public Precision {
public:
    Panels(Dtype dtype, std::int64_t d, std::int64_t f)
        : Precision(dtype, d, f),
          type_(dtype == Dtype::bf16 ? PanelType::bf16 : PanelType::f32),
          kernels_(panel_kernels()[type_]) {}

    MatmulTypes matmul_types() const override { return {}; }  // no oneDNN kernels
    double bytes_per_weight() const override { return double(panel_element_bytes(type_)); }
    // Tiles are cut as for f32 weights: as many tasks as f32's, to keep many
    // cores busy to the end of each phase.
    double tile_bytes_per_weight() const override { return 4; }
    bool streams_with_one_row() const override { return true; }
    // Where the panel kernels are vector code (below AVX2 oneDNN's f32
    // kernels are faster) and the policy allows. With AVX-512, oneDNN's f32
    // brgemm ran decode and 4-32 tokens slower than the AVX-512 panel
    // kernels, and 64-512 tokens level
    // (docs/measurements.md, "Panel kernels for AVX-512" and the section
    // after it), so f32 comes here on every CPU with AVX2; bf16 only when
    // oneDNN has no bf16 matmul (precision_candidates' order).
    bool accepts(const std::vector<const MatmulKernel*>&) const override {
        return panels_enabled() && panel_kernels_isa() != Isa::scalar;
    }

    bool own_kernels() const override { return true; }
    std::size_t own_tile_bytes(std::int64_t k, std::int64_t n) const override {
        return panel_tile_bytes(type_, k, n);
    }
    void pack_tile(PhaseId, float* plain, std::int64_t k, std::int64_t n, std::int64_t,
                   const dnnl::memory& to) override {
        pack_panels(type_, plain, k, n, to.get_data_handle());
    }
    bool unpack_f32(const dnnl::memory& tile, std::int64_t k, std::int64_t n,
                    float* plain) const override {
        if (type_ != PanelType::f32) return false;
        unpack_f32_panels(tile.get_data_handle(), k, n, plain);
        return true;
    }
    std::string note() const override {
        return std::string(type_ == PanelType::bf16 ? "bf16" : "f32") +
               " panels:" + isa_name(panel_kernels_isa());
    }

    ScratchSizes scratch() const override {
        return {static_cast<std::size_t>(kChunkRows * f()), 0,
                static_cast<std::size_t>(kChunkRows * d()) * sizeof(float), 0};
    }
    // x into the workspace (bf16: rounded). A padded last row tile's
    // padding rows are not computed: the kernels take any row count.
    void prepare_x(const float* x, std::int64_t rows, const RowTile&,
                   Workspace& ws) const override {
        const auto n = static_cast<std::size_t>(rows * d());
        if (type_ == PanelType::bf16)
            round_to_bf16(x, x_copy(ws), n);
        else
            std::memcpy(x_copy(ws), x, n * sizeof(float));
    }
    const void* gate_up_src(const float*, const RowTile& t, const Workspace& ws) const override {
        return source(PhaseId::gate_up, t, ws);
    }
    // act in f32 (Workspace::act), bf16: rounded in place, what the down
    // matmul reads on either path.
    void store_act(float* act, std::int64_t width, std::int64_t, std::int64_t,
                   Workspace&) const override {
        if (type_ == PanelType::bf16) round_to_bf16(act, act, static_cast<std::size_t>(width));
    }

    void matmul_tile(PhaseId phase, const void* tile, std::int64_t k, std::int64_t n,
                     const RowTile& t, const Workspace& ws, float* result) const override {
        kernels_.gemm(tile, k, n, source(phase, t, ws), k, t.rows, result, n);
    }

private:
    static float* x_copy(const Workspace& ws) { return reinterpret_cast<float*>(ws.x_src.data()); }
    // The row tile's input to `phase`: x (as prepared) or act, k per row.
    const float* source(PhaseId phase, const RowTile& t, const Workspace& ws) const {
        return phase == PhaseId::gate_up ? x_copy(ws) + t.row0 * d() : ws.act.data() + t.row0 * f();
    }

    PanelType type_;
    PanelTypeKernels kernels_;
};

}  // namespace

void set_panels(bool enabled) noexcept { g_enabled.store(enabled); }
bool panels_enabled() noexcept { return g_enabled.load(); }

std::unique_ptr<Precision> make_panels_precision(Dtype dtype, std::int64_t d, std::int64_t f) {
    return std::make_unique<Panels>(dtype, d, f);
}

}  // namespace swiglu::detail
