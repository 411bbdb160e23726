// int8: s8 weights with one symmetric scale per output channel, x and act
// quantised to s8 per token at run time (dynamic, symmetric), s32
// accumulation, f32 scales applied in the epilogues, on the s8 engine
// (core/engine_s8.cpp). Quantising act needs its whole row: when one
// gate|up tile spans all of f (small blocks, e.g. glass), the task that
// computes a row quantises it while it is in L1 (no f32 act buffer);
// otherwise the act step does (Numerics::has_act_step), after every gate|up
// task of the chunk.
#include <cstdint>
#include <vector>

#include "core/precision.hpp"
#include "core/workspace.hpp"
#include "kernels/convert.hpp"

namespace swiglu::detail {

namespace {

class Int8 final : public Numerics {
public:
    Int8(std::int64_t d, std::int64_t f) : Numerics(Dtype::int8, d, f) { whole_act_rows_ = true; }

    // One symmetric scale per output channel (column); the scales are
    // allocated with the first tile, so a refused int8 never holds them.
    PlainWeights convert_weights(PhaseId phase, float* plain, std::int64_t k, std::int64_t n,
                                 std::int64_t first_output) override {
        if (gate_up_scales_.empty()) {
            gate_up_scales_.resize(static_cast<std::size_t>(2 * f()));
            down_scales_.resize(static_cast<std::size_t>(d()));
        }
        q_.resize(static_cast<std::size_t>(k * n));
        float* scales =
            (phase == PhaseId::gate_up ? gate_up_scales_ : down_scales_).data() + first_output;
        for (std::int64_t c = 0; c < n; ++c)
            scales[c] =
                quantize_column(plain + c, static_cast<std::size_t>(k), n, q_.data() + c, n);
        return {q_.data(), dnnl::memory::data_type::s8};
    }

    ScratchSizes scratch() const override {
        const auto chunk_f = static_cast<std::size_t>(kChunkRows * f());
        return {act_in_gate_up() ? 0 : chunk_f, chunk_f, static_cast<std::size_t>(kChunkRows * d()),
                static_cast<std::size_t>(kChunkRows)};
    }

    void prepare_x(const float* x, std::int64_t rows, const RowTile&,
                   Workspace& ws) const override {
        for (std::int64_t r = 0; r < rows; ++r)
            ws.x_scale.data()[r] =
                quantize_row(x + r * d(), x_s8(ws) + r * d(), static_cast<std::size_t>(d()));
    }

    const void* src(PhaseId phase, const float*, const RowTile& t,
                    const Workspace& ws) const override {
        return phase == PhaseId::gate_up ? x_s8(ws) + t.row0 * d() : act_s8(ws) + t.row0 * f();
    }

    // s32 -> f32 by the row's and the channel's scales; act in place when
    // the tile spans f.
    float* gate_up_row(float* gate_up, std::int64_t width, std::int64_t c0, std::int64_t row,
                       Workspace& ws) const override {
        dequantize(gate_up, gate_up, static_cast<std::size_t>(2 * width), ws.x_scale.data()[row],
                   gate_up_scales_.data() + 2 * c0);
        return act_in_gate_up() ? gate_up : f32_act(row, c0, ws);
    }

    // A whole row (the one gate|up tile's, or the act step's): quantised.
    void store_act(float* act, std::int64_t width, std::int64_t, std::int64_t row,
                   Workspace& ws) const override {
        if (width == f())
            ws.act_scale.data()[row] =
                quantize_row(act, act_s8(ws) + row * f(), static_cast<std::size_t>(f()));
    }

    void down_out(const float* tile, std::int64_t ld, std::int64_t width, std::int64_t c0,
                  const RowTile& t, float* y, const Workspace& ws) const override {
        for (std::int64_t r = 0; r < t.rows; ++r)
            dequantize(tile + r * ld, y + (t.row0 + r) * d() + c0, static_cast<std::size_t>(width),
                       ws.act_scale.data()[t.row0 + r], down_scales_.data() + c0);
    }

private:
    bool act_in_gate_up() const { return gate_up_tiles() == 1; }
    static std::int8_t* x_s8(const Workspace& ws) {
        return reinterpret_cast<std::int8_t*>(ws.x_src.data());
    }
    static std::int8_t* act_s8(const Workspace& ws) {
        return reinterpret_cast<std::int8_t*>(ws.act_src.data());
    }

    // One scale per output channel, in each matmul's output order (gate|up
    // tile j's outputs start at 2 * its first column).
    std::vector<float> gate_up_scales_, down_scales_;
    std::vector<std::int8_t> q_;  // the tile being packed
};

}  // namespace

Precision make_int8_precision(std::int64_t d, std::int64_t f, const BuildPolicy& policy) {
    return {std::make_unique<Int8>(d, f), make_s8_engine(policy.int8_own_rows)};
}

}  // namespace swiglu::detail
