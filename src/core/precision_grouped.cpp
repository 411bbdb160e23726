// q8_0 and q4_0: GGUF's grouped weights (blocks of 32 inputs, an f16 scale
// each) on kernels of our own (kernels/grouped_gemm.hpp), for every token
// count. x and act are quantised per block of 32 to s8 with an f32 scale
// (ActBlock), as llama.cpp quantises them for these formats (with an f16
// scale), so a block's dot product is one integer sum. act stays in the
// gate|up tile (in place) and is quantised there, a block at a time: gate|up
// column tiles are whole blocks wide (multiples of 64 columns, or end at f).
//
// The prefill path (precision.hpp): where oneDNN has an AMX matmul,
// full-height row tiles run it on weight tiles unpacked to bf16, with x and
// act rounded to bf16 instead of quantised: what the weights hold is exact
// in f32 (q * d), and bf16 keeps 8 of its up to 19 significant bits (2^-9
// relative, as the bf16 dtype). Elsewhere the grouped kernels run every
// tile: the same path ran llama7b's prefill slower than they do both on an
// AVX2 CPU (f32 tiles) and on an avx512_bf16 one (oneDNN's avx512_core_bf16
// brgemm against the VNNI kernels) (docs/measurements.md, "The prefill
// crossover" and "The grouped formats' prefill path on a bf16 CPU"). AMX's
// bf16 tiles have not been measured.
#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstring>
#include <optional>

#include "core/precision.hpp"
#include "core/workspace.hpp"
#include "kernels/convert.hpp"
#include "kernels/grouped_gemm.hpp"
#include "kernels/grouped_layout.hpp"

namespace swiglu::detail {

namespace {

std::atomic<GroupedPrefill> g_prefill{GroupedPrefill::automatic};

using dt = dnnl::memory::data_type;

class Grouped final : public Precision {
public:
    Grouped(Dtype dtype, std::int64_t d, std::int64_t f)
        : Precision(dtype, d, f),
          format_(traits(dtype).grouped),
          gemm_(grouped_kernels()[format_].gemm),
          unpack_(grouped_kernels()[format_].unpack),
          x_blocks_(static_cast<std::int64_t>(ggml_blocks(static_cast<std::size_t>(d)))),
          act_blocks_(static_cast<std::int64_t>(ggml_blocks(static_cast<std::size_t>(f)))) {}

    MatmulTypes matmul_types() const override { return {}; }  // no oneDNN kernels
    double bytes_per_weight() const override {
        return double(record_bytes(format_)) / double(kGroupColumns * kGgmlBlock);
    }
    // Tiles are cut as for the unpacked weights (f32 without a prefill
    // path): ~1 MiB of those, a few hundred KiB of ours, so a decode has
    // enough tasks to keep many cores busy to the end of each phase
    // (llama7b's down phase: 64 tiles, not 21), and a prefill path's
    // unpacked tile stays in L2.
    double tile_bytes_per_weight() const override { return double(element_bytes()); }
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
    // GGUF blocks of this format are placed as the file stores them: no
    // decoding, no quantising again (which would change blocks that ggml's
    // reference rounding did not make, e.g. with an importance matrix). A
    // window of the rows (a tensor-parallel shard) qualifies when it starts
    // and ends on a block (stored rows are whole blocks: check_view).
    bool pack_stored_tile(const WeightSource* const* sources, int count, std::int64_t c0,
                          std::int64_t width, std::int64_t k, const dnnl::memory& to) override {
        const Format want = traits(dtype()).format;
        for (int s = 0; s < count; ++s) {
            const WeightSource& w = *sources[s];
            const bool whole_blocks = w.first_col % 32 == 0 && k % 32 == 0;
            if (w.type != want || w.layout != Layout::out_in || !whole_blocks) return false;
        }
        auto* tile = static_cast<std::uint8_t*>(to.get_data_handle());
        std::memset(tile, 0, grouped_tile_bytes(format_, k, count * width));
        const std::size_t nb = ggml_blocks(static_cast<std::size_t>(k));
        std::vector<BlockQ8_0> q8(format_ == GroupedFormat::q8_0 ? nb : 0);
        std::vector<BlockQ4_0> q4(format_ == GroupedFormat::q4_0 ? nb : 0);
        for (int s = 0; s < count; ++s)
            for (std::int64_t j = 0; j < width; ++j) {
                // Copied out: the file's blocks need not be aligned.
                const WeightSource& w = *sources[s];
                const unsigned char* row =
                    source_row(w, c0 + j) + source_row_bytes(w.type, w.first_col);
                const std::int64_t column = s * width + j;
                if (format_ == GroupedFormat::q8_0) {
                    std::memcpy(q8.data(), row, nb * sizeof(BlockQ8_0));
                    place_column(q8.data(), k, column, tile);
                } else {
                    std::memcpy(q4.data(), row, nb * sizeof(BlockQ4_0));
                    place_column(q4.data(), k, column, tile);
                }
            }
        return true;
    }
    std::string note() const override {
        std::string s = std::string(dtype_name(dtype())) + ":" + isa_name(grouped_kernels_isa());
        if (prefill_)
            s += std::string(" (64-row tiles: unpacked to ") +
                 (prefill_->weights == dt::bf16 ? "bf16" : "f32") + " for the kernel named)";
        return s;
    }

    std::vector<MatmulTypes> prefill_candidates() const override {
        const MatmulTypes bf16{dt::bf16, dt::bf16, dt::f32}, f32{};
        switch (grouped_prefill()) {
            case GroupedPrefill::automatic:
            case GroupedPrefill::bf16: return {bf16};
            case GroupedPrefill::f32: return {f32};
            case GroupedPrefill::never: break;
        }
        return {};
    }
    void set_prefill(const MatmulTypes* types) override {
        prefill_.reset();
        if (types) prefill_ = *types;
    }
    // Automatic: AMX only (see the top of this file).
    bool accepts_prefill(const MatmulKernel& kernel) const override {
        if (grouped_prefill() != GroupedPrefill::automatic) return true;
        return is_brgemm_kernel(kernel) && kernel.implementation.find("amx") != std::string::npos;
    }
    std::size_t unpacked_bytes(std::int64_t k, std::int64_t n) const override {
        // bf16: the tile, then one block row of f32 to convert from.
        const auto values = static_cast<std::size_t>(k * n);
        return prefill_->weights == dt::bf16
                   ? values * 2 + static_cast<std::size_t>(kGgmlBlock * n) * sizeof(float)
                   : values * sizeof(float);
    }
    void unpack_tile(const void* tile, std::int64_t k, std::int64_t n, void* out) const override {
        const auto* packed = static_cast<const std::uint8_t*>(tile);
        const bool bf16 = prefill_->weights == dt::bf16;
        auto* f32 = static_cast<float*>(out);
        auto* halves = static_cast<std::uint16_t*>(out);
        float* staging = reinterpret_cast<float*>(halves + k * n);
        const auto block = static_cast<std::int64_t>(kGgmlBlock);
        for (std::int64_t b = 0; b * block < k; ++b) {
            if (!bf16) {
                unpack_(packed, k, n, b, f32 + b * block * n, n);
                continue;
            }
            unpack_(packed, k, n, b, staging, n);
            const std::int64_t rows = std::min(block, k - b * block);
            to_bf16(staging, halves + b * block * n, static_cast<std::size_t>(rows * n));
        }
    }
    const void* prefill_src(PhaseId phase, const RowTile& t, const Workspace& ws) const override {
        const std::size_t element = element_bytes();
        if (phase == PhaseId::gate_up)
            return ws.x_prefill.data() + static_cast<std::size_t>(t.row0 * d()) * element;
        return reinterpret_cast<const unsigned char*>(ws.act.data()) +
               static_cast<std::size_t>(t.row0 * f()) * element;
    }

    ScratchSizes scratch() const override {
        const auto blocks = [](std::int64_t per_row) {
            return static_cast<std::size_t>(kChunkRows * per_row) * sizeof(ActBlock);
        };
        ScratchSizes s{0, blocks(act_blocks_), blocks(x_blocks_), 0};
        if (prefill_) {  // act and x as the prefill kernels read them (f32 or bf16)
            s.act_floats = static_cast<std::size_t>(kChunkRows * f());
            s.x_prefill_bytes = static_cast<std::size_t>(kChunkRows * d()) * element_bytes();
        }
        return s;
    }

    void prepare_x(const float* x, std::int64_t rows, const RowTile&,
                   Workspace& ws) const override {
        // Padding rows past `rows` keep whatever rows they held (zeros at
        // first): finite, computed and dropped.
        for (std::int64_t r = 0; r < rows; ++r)
            quantize_act_row(x + r * d(), static_cast<std::size_t>(d()),
                             x_row(ws.x_src.data(), r, x_blocks_));
        if (prefill_) to_prefill(x, rows * d(), ws.x_prefill.data());
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
        // Both forms, whichever path the row's tile takes in the down phase.
        if (prefill_)
            to_prefill(act, width,
                       reinterpret_cast<unsigned char*>(ws.act.data()) +
                           static_cast<std::size_t>(row * f() + c0) * element_bytes());
    }

    void matmul_tile(PhaseId phase, const void* tile, std::int64_t k, std::int64_t n,
                     const RowTile& t, const Workspace& ws, float* result) const override {
        const bool gate_up = phase == PhaseId::gate_up;
        const std::int64_t stride = gate_up ? x_blocks_ : act_blocks_;
        const unsigned char* rows = gate_up ? ws.x_src.data() : ws.act_src.data();
        gemm_(static_cast<const std::uint8_t*>(tile), k, n,
              reinterpret_cast<const ActBlock*>(rows) + t.row0 * stride, stride, t.rows, result, n);
    }

private:
    // Row `row` of a buffer of quantised rows, `blocks` ActBlocks each.
    static ActBlock* x_row(unsigned char* buffer, std::int64_t row, std::int64_t blocks) {
        return reinterpret_cast<ActBlock*>(buffer) + row * blocks;
    }

    std::size_t element_bytes() const { return prefill_ && prefill_->weights == dt::bf16 ? 2 : 4; }
    // n activations as the prefill kernels read them, at `to`.
    void to_prefill(const float* from, std::int64_t n, unsigned char* to) const {
        if (element_bytes() == 2)
            to_bf16(from, reinterpret_cast<std::uint16_t*>(to), static_cast<std::size_t>(n));
        else
            std::memcpy(to, from, static_cast<std::size_t>(n) * sizeof(float));
    }

    GroupedFormat format_;
    GroupedGemm gemm_;
    GroupedUnpack unpack_;
    std::optional<MatmulTypes> prefill_;  // the prefill path's types, if it has one
    std::int64_t x_blocks_, act_blocks_;  // ActBlocks per row of x and of act
};

}  // namespace

void set_grouped_prefill(GroupedPrefill policy) noexcept { g_prefill.store(policy); }
GroupedPrefill grouped_prefill() noexcept { return g_prefill.load(); }

std::unique_ptr<Precision> make_grouped_precision(Dtype dtype, std::int64_t d, std::int64_t f) {
    return std::make_unique<Grouped>(dtype, d, f);
}

}  // namespace swiglu::detail
