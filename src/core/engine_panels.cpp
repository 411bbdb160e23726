// The panels engine: f32 or bf16 weights in panels on our panel kernels
// (kernels/panel_gemm.hpp), every row tile, valid rows only (the kernels
// take any row count). Why and where it runs: core/precision_panels.cpp.
#include "core/engine.hpp"
#include "kernels/panel_gemm.hpp"

namespace swiglu::detail {

namespace {

class PanelsEngine final : public TileEngine {
public:
    explicit PanelsEngine(PanelType type)
        : TileEngine(EngineKind::panels,
                     // Tiles are cut as for f32 weights: as many tasks as
                     // f32's, to keep many cores busy to the end of each phase.
                     {double(panel_element_bytes(type)), 4, true}, kMaxRowTile,
                     std::string(type == PanelType::bf16 ? "bf16" : "f32") +
                         " panels:" + isa_name(panel_kernels_isa())),
          type_(type),
          kernels_(panel_kernels()[type]) {}

    dnnl::memory::desc tile_layout(const Phase& phase, std::int64_t tile) const override {
        const auto bytes =
            static_cast<dnnl::memory::dim>(panel_tile_bytes(type_, phase.k, phase.outputs(tile)));
        return dnnl::memory::desc({bytes}, dnnl::memory::data_type::u8,
                                  dnnl::memory::format_tag::a);
    }
    void pack(const Phase&, const PlainWeights& plain, std::int64_t k, std::int64_t n,
              const dnnl::memory& to) override {
        pack_panels(type_, static_cast<const float*>(plain.data), k, n, to.get_data_handle());
    }
    bool unpack_f32(const dnnl::memory& tile, std::int64_t k, std::int64_t n,
                    float* plain) const override {
        if (type_ != PanelType::f32) return false;
        unpack_f32_panels(tile.get_data_handle(), k, n, plain);
        return true;
    }
    void run(const Phase& phase, const TileJob& job, TileWorker&) const override {
        const void* tile = phase.tile_data[static_cast<std::size_t>(job.tile)];
        const std::int64_t n = phase.outputs(job.tile), k = phase.k;
        const auto* src = static_cast<const float*>(job.src);
        if (job.k1 == 0)
            kernels_.gemm(tile, k, n, src, k, job.rows->rows, job.result, job.result_stride);
        else
            kernels_.range(tile, k, job.k0, job.k1, n, src, k, job.rows->rows, job.result,
                           job.result_stride);
    }

private:
    PanelType type_;
    PanelTypeKernels kernels_;
};

}  // namespace

std::unique_ptr<TileEngine> make_panels_engine(Dtype dtype) {
    return std::make_unique<PanelsEngine>(dtype == Dtype::bf16 ? PanelType::bf16 : PanelType::f32);
}

}  // namespace swiglu::detail
