// bf16 numerics on f32 kernels, for CPUs where oneDNN 2.6 has no bf16 matmul
// (it needs AVX-512) or only a reference one, slower than f32, and the panels
// mode (precision_panels.cpp) does not serve either (no AVX2, or not allowed
// by the BuildPolicy): the weights, x and act are rounded to bf16 exactly
// where the bf16 mode rounds them, and the matmuls run on oneDNN's f32
// kernels. Same results as bf16 up to the order of f32 accumulation; f32
// speed, which the description says.
#include "core/precision.hpp"
#include "core/workspace.hpp"
#include "kernels/convert.hpp"

namespace swiglu::detail {

namespace {

class Bf16Emulated final : public Numerics {
public:
    Bf16Emulated(std::int64_t d, std::int64_t f) : Numerics(Dtype::bf16, d, f) {}

    PlainWeights convert_weights(PhaseId phase, float* plain, std::int64_t k, std::int64_t n,
                                 std::int64_t first_output) override {
        round_to_bf16(plain, plain, static_cast<std::size_t>(k * n));
        return Numerics::convert_weights(phase, plain, k, n, first_output);
    }

    ScratchSizes scratch() const override {
        return {static_cast<std::size_t>(kChunkRows * f()), 0,
                static_cast<std::size_t>(kChunkRows * d()) * sizeof(float), 0};
    }

    void prepare_x(const float* x, std::int64_t rows, const RowTile&,
                   Workspace& ws) const override {
        round_to_bf16(x, x_rounded(ws), static_cast<std::size_t>(rows * d()));
    }

    const void* src(PhaseId phase, const float*, const RowTile& t,
                    const Workspace& ws) const override {
        return phase == PhaseId::gate_up ? x_rounded(ws) + t.row0 * d() : f32_act(t.row0, 0, ws);
    }

    void store_act(float* act, std::int64_t width, std::int64_t, std::int64_t,
                   Workspace&) const override {
        round_to_bf16(act, act, static_cast<std::size_t>(width));
    }

private:
    static float* x_rounded(const Workspace& ws) {
        return reinterpret_cast<float*>(ws.x_src.data());
    }
};

}  // namespace

// Tiles are cut as bf16's would be.
Precision make_bf16_emulated_precision(std::int64_t d, std::int64_t f) {
    return {std::make_unique<Bf16Emulated>(d, f),
            make_onednn_engine({}, {2, 2, false}, KernelDemand::any,
                               " (f32 kernels on bf16-rounded weights: this CPU has no bf16 "
                               "matmul; expect f32 speed)")};
}

}  // namespace swiglu::detail
