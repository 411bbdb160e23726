// bf16 on oneDNN's bf16 kernels: weights packed as bf16 (round to nearest
// even), x and act converted to bf16 before their matmuls, SiLU(gate)*up in
// f32 on the tile while it is in cache, accumulation in f32.
#include <cstdint>

#include "core/precision.hpp"
#include "core/workspace.hpp"
#include "kernels/convert.hpp"

namespace swiglu::detail {

namespace {

class Bf16 final : public Numerics {
public:
    Bf16(std::int64_t d, std::int64_t f) : Numerics(Dtype::bf16, d, f) {}

    ScratchSizes scratch() const override {
        return {0, static_cast<std::size_t>(kChunkRows * f()) * 2,
                static_cast<std::size_t>(kChunkRows * d()) * 2, 0};
    }

    void prepare_x(const float* x, std::int64_t rows, const RowTile&,
                   Workspace& ws) const override {
        to_bf16(x, x_bf16(ws), static_cast<std::size_t>(rows * d()));
    }

    const void* src(PhaseId phase, const float*, const RowTile& t,
                    const Workspace& ws) const override {
        return phase == PhaseId::gate_up ? x_bf16(ws) + t.row0 * d() : act_bf16(ws) + t.row0 * f();
    }

    // act overwrites gate in the tile: it only lives until store_act.
    float* gate_up_row(float* gate_up, std::int64_t, std::int64_t, std::int64_t,
                       Workspace&) const override {
        return gate_up;
    }

    void store_act(float* act, std::int64_t width, std::int64_t c0, std::int64_t row,
                   Workspace& ws) const override {
        to_bf16(act, act_bf16(ws) + row * f() + c0, static_cast<std::size_t>(width));
    }

private:
    static std::uint16_t* x_bf16(const Workspace& ws) {
        return reinterpret_cast<std::uint16_t*>(ws.x_src.data());
    }
    static std::uint16_t* act_bf16(const Workspace& ws) {
        return reinterpret_cast<std::uint16_t*>(ws.act_src.data());
    }
};

}  // namespace

// oneDNN 2.6 has bf16 matmuls only with AVX-512; elsewhere at best a
// reference kernel, slower than f32 (KernelDemand::fast): then the panels
// or the emulated mode serves. One-row tiles on our kernel where the
// policy allows (core/engine_bf16.cpp).
Precision make_bf16_precision(std::int64_t d, std::int64_t f, const BuildPolicy& policy) {
    return {std::make_unique<Bf16>(d, f), make_bf16_engine(policy.bf16_own_rows)};
}

}  // namespace swiglu::detail
