// f32: the caller's weights as they are, f32 matmuls on oneDNN's kernels, act in f32.
#include <cstring>

#include "core/precision.hpp"
#include "core/workspace.hpp"

namespace swiglu::detail {

namespace {

class F32 final : public Numerics {
public:
    F32(std::int64_t d, std::int64_t f) : Numerics(Dtype::f32, d, f) {}

    ScratchSizes scratch() const override {
        // x is read in place; only a padded last tile needs a zero-padded copy.
        return {static_cast<std::size_t>(kChunkRows * f()), 0,
                static_cast<std::size_t>(kMaxRowTile * d()) * sizeof(float), 0};
    }

    void prepare_x(const float* x, std::int64_t, const RowTile& last,
                   Workspace& ws) const override {
        if (last.padded())
            std::memcpy(ws.x_src.data(), x + last.row0 * d(),
                        static_cast<std::size_t>(last.rows * d()) * sizeof(float));
    }

    const void* src(PhaseId phase, const float* x, const RowTile& t,
                    const Workspace& ws) const override {
        if (phase == PhaseId::down) return f32_act(t.row0, 0, ws);
        return t.padded() ? ws.x_src.data() : static_cast<const void*>(x + t.row0 * d());
    }
};

}  // namespace

Precision make_f32_precision(std::int64_t d, std::int64_t f) {
    return {std::make_unique<F32>(d, f), make_onednn_engine({}, {4, 4, false}, KernelDemand::any)};
}

}  // namespace swiglu::detail
