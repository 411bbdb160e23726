// bf16 on panel kernels of our own (kernels/bf16_panels.hpp), for CPUs
// where oneDNN 2.6 has no bf16 matmul (AVX2): the weights stay bf16 in
// memory, 2 bytes each, where the emulated mode (f32 kernels on rounded
// weights) reads 4. Row tiles below 64 rows (decode, batched decode, the
// ridge) run the panel kernels; full 64-row tiles unpack the weight tile to
// f32 once per task, exactly, and run oneDNN's f32 kernel on all of them
// (the prefill path, precision.hpp). x and act are rounded to bf16 where
// the bf16 mode rounds them, so both paths compute bf16 numerics with f32
// accumulation, as the other bf16 modes do.
//
// Measured on an AVX2 EPYC, one core, tiles streaming from DRAM (4096 x 512,
// docs/measurements.md): 1-4 rows read 15-19 GB/s of bf16 weights (the f32
// kernels: ~15 GB/s of f32, half the weights per second); 16-32 rows run at
// 83-84 GFLOP/s of the 102 peak, where oneDNN's f32 kernel ran 42-57.
#include <atomic>

#include "core/precision.hpp"
#include "core/workspace.hpp"
#include "kernels/bf16_panels.hpp"
#include "kernels/convert.hpp"

namespace swiglu::detail {

namespace {

std::atomic<bool> g_enabled{true};

class Bf16Panels final : public Precision {
public:
    Bf16Panels(std::int64_t d, std::int64_t f)
        : Precision(Dtype::bf16, d, f), kernels_(bf16_panel_kernels()) {}

    MatmulTypes matmul_types() const override { return {}; }  // the prefill path's: f32
    double bytes_per_weight() const override { return 2; }
    // Tiles are cut as for f32: the prefill path's unpacked tile stays in L2,
    // and a decode has as many tasks as f32's.
    double tile_bytes_per_weight() const override { return 4; }
    bool streams_with_one_row() const override { return true; }
    // Only where the panel kernels are vector code (below AVX2 the emulated
    // mode, on oneDNN's f32 kernels, is faster) and the policy allows.
    bool accepts(const std::vector<const MatmulKernel*>&) const override {
        return bf16_panels_enabled() && bf16_panel_kernels_isa() != Isa::scalar;
    }

    bool own_kernels() const override { return true; }
    std::size_t own_tile_bytes(std::int64_t k, std::int64_t n) const override {
        return bf16_panel_tile_bytes(k, n);
    }
    void pack_tile(PhaseId, float* plain, std::int64_t k, std::int64_t n, std::int64_t,
                   const dnnl::memory& to) override {
        pack_bf16_panels(plain, k, n, static_cast<std::uint16_t*>(to.get_data_handle()));
    }
    // After the prefill kernel's name, if there is one.
    std::string note() const override {
        const std::string panels = std::string("bf16 panels:") + isa_name(bf16_panel_kernels_isa());
        return prefill_ ? " for 64-row tiles, unpacked to f32; " + panels + " below" : panels;
    }

    // Full-height tiles: oneDNN's f32 kernel on the unpacked tile, whatever
    // it is (the panel kernels are built for the short ones).
    std::vector<MatmulTypes> prefill_candidates() const override { return {MatmulTypes{}}; }
    void set_prefill(const MatmulTypes* types) override { prefill_ = types != nullptr; }
    bool accepts_prefill(const MatmulKernel& kernel) const override {
        return !is_reference_kernel(kernel);
    }
    std::size_t unpacked_bytes(std::int64_t k, std::int64_t n) const override {
        return static_cast<std::size_t>(k * n) * sizeof(float);
    }
    void unpack_tile(const void* tile, std::int64_t k, std::int64_t n, void* out) const override {
        kernels_.unpack(static_cast<const std::uint16_t*>(tile), k, n, static_cast<float*>(out));
    }
    const void* prefill_src(PhaseId phase, const RowTile& t, const Workspace& ws) const override {
        return phase == PhaseId::gate_up ? x_rounded(ws) + t.row0 * d()
                                         : ws.act.data() + t.row0 * f();
    }

    ScratchSizes scratch() const override {
        return {static_cast<std::size_t>(kChunkRows * f()), 0,
                static_cast<std::size_t>(kChunkRows * d()) * sizeof(float), 0};
    }
    void prepare_x(const float* x, std::int64_t rows, const RowTile&,
                   Workspace& ws) const override {
        round_to_bf16(x, x_rounded(ws), static_cast<std::size_t>(rows * d()));
    }
    const void* gate_up_src(const float*, const RowTile& t, const Workspace& ws) const override {
        return x_rounded(ws) + t.row0 * d();
    }
    // act in f32 (Workspace::act), rounded to bf16 in place: what the down
    // matmul reads on either path.
    void store_act(float* act, std::int64_t width, std::int64_t, std::int64_t,
                   Workspace&) const override {
        round_to_bf16(act, act, static_cast<std::size_t>(width));
    }

    void matmul_tile(PhaseId phase, const void* tile, std::int64_t k, std::int64_t n,
                     const RowTile& t, const Workspace& ws, float* result) const override {
        const float* x =
            phase == PhaseId::gate_up ? x_rounded(ws) + t.row0 * d() : ws.act.data() + t.row0 * f();
        kernels_.gemm(static_cast<const std::uint16_t*>(tile), k, n, x, k, t.height(), result, n);
    }

private:
    static float* x_rounded(const Workspace& ws) {
        return reinterpret_cast<float*>(ws.x_src.data());
    }

    Bf16PanelKernels kernels_;
    bool prefill_ = false;
};

}  // namespace

void set_bf16_panels(bool enabled) noexcept { g_enabled.store(enabled); }
bool bf16_panels_enabled() noexcept { return g_enabled.load(); }

std::unique_ptr<Precision> make_bf16_panels_precision(std::int64_t d, std::int64_t f) {
    return std::make_unique<Bf16Panels>(d, f);
}

}  // namespace swiglu::detail
