// q8_0 and q4_0: GGUF's grouped weights (blocks of 32 inputs, an f16 scale
// each) on kernels of our own (kernels/grouped_gemm.hpp), for every token
// count. x and act are quantised per block of 32 to s8 with an f32 scale
// (ActBlock), as llama.cpp quantises them for these formats (with an f16
// scale), so a block's dot product is one integer sum. act stays in the
// gate|up tile (in place) and is quantised there, a block at a time: gate|up
// column tiles are whole blocks wide (multiples of 64 columns, or end at f).
#include <cassert>

#include "common/messages.hpp"
#include "core/precision.hpp"
#include "core/workspace.hpp"
#include "kernels/grouped_gemm.hpp"
#include "kernels/grouped_layout.hpp"

namespace swiglu::detail {

namespace {

class Grouped final : public Precision {
public:
    Grouped(Dtype dtype, std::int64_t d, std::int64_t f)
        : Precision(dtype, d, f),
          format_(dtype == Dtype::q8_0 ? GroupedFormat::q8_0 : GroupedFormat::q4_0),
          gemm_(grouped_kernels()[format_].gemm),
          x_blocks_(static_cast<std::int64_t>(ggml_blocks(static_cast<std::size_t>(d)))),
          act_blocks_(static_cast<std::int64_t>(ggml_blocks(static_cast<std::size_t>(f)))) {}

    MatmulTypes matmul_types() const override { return {}; }  // no oneDNN kernels
    double bytes_per_weight() const override {
        return double(record_bytes(format_)) / double(kGroupColumns * kGgmlBlock);
    }
    // One row streams a group's records as fast as four (grouped_gemm_<isa>.cpp).
    bool streams_with_one_row() const override { return true; }

    bool own_kernels() const override { return true; }
    std::size_t own_tile_bytes(std::int64_t k, std::int64_t n) const override {
        return grouped_tile_bytes(format_, k, n);
    }
    void pack_tile(PhaseId, float* plain, std::int64_t k, std::int64_t n, std::int64_t,
                   const dnnl::memory& to) override {
        pack_grouped_tile(format_, plain, k, n, static_cast<std::uint8_t*>(to.get_data_handle()));
    }
    std::string note() const override {
        return std::string(dtype_name(dtype())) + ":" + isa_name(grouped_kernels_isa());
    }

    ScratchSizes scratch() const override {
        const auto blocks = [](std::int64_t per_row) {
            return static_cast<std::size_t>(kChunkRows * per_row) * sizeof(ActBlock);
        };
        return {0, blocks(act_blocks_), blocks(x_blocks_), 0};
    }

    void prepare_x(const float* x, std::int64_t rows, const RowTile&,
                   Workspace& ws) const override {
        // Padding rows past `rows` keep whatever quantised rows they held
        // (zeros at first): finite, computed and dropped.
        for (std::int64_t r = 0; r < rows; ++r)
            quantize_act_row(x + r * d(), static_cast<std::size_t>(d()),
                             x_row(ws.x_src.data(), r, x_blocks_));
    }
    const void* gate_up_src(const float*, const RowTile&, const Workspace&) const override {
        return nullptr;  // matmul_tile reads the quantised rows itself
    }

    float* act_row(float* gate_up, std::int64_t, std::int64_t, Workspace&) const override {
        return gate_up;  // in place over gate: quantised from there
    }
    void store_act(float* act, std::int64_t width, std::int64_t c0, std::int64_t row,
                   Workspace& ws) const override {
        assert(c0 % static_cast<std::int64_t>(kGgmlBlock) == 0);
        quantize_act_row(act, static_cast<std::size_t>(width),
                         x_row(ws.act_src.data(), row, act_blocks_) +
                             c0 / static_cast<std::int64_t>(kGgmlBlock));
    }

    void matmul_tile(PhaseId phase, const void* tile, std::int64_t k, std::int64_t n,
                     const RowTile& t, const Workspace& ws, float* result) const override {
        const bool gate_up = phase == PhaseId::gate_up;
        const std::int64_t stride = gate_up ? x_blocks_ : act_blocks_;
        const unsigned char* rows = gate_up ? ws.x_src.data() : ws.act_src.data();
        gemm_(static_cast<const std::uint8_t*>(tile), k, n,
              reinterpret_cast<const ActBlock*>(rows) + t.row0 * stride, stride, t.height(), result,
              n);
    }

private:
    // Row `row` of a buffer of quantised rows, `blocks` ActBlocks each.
    static ActBlock* x_row(unsigned char* buffer, std::int64_t row, std::int64_t blocks) {
        return reinterpret_cast<ActBlock*>(buffer) + row * blocks;
    }

    GroupedFormat format_;
    GroupedGemm gemm_;
    std::int64_t x_blocks_, act_blocks_;  // ActBlocks per row of x and of act
};

}  // namespace

std::unique_ptr<Precision> make_grouped_precision(Dtype dtype, std::int64_t d, std::int64_t f) {
    return std::make_unique<Grouped>(dtype, d, f);
}

}  // namespace swiglu::detail
