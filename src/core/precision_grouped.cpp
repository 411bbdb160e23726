// GGUF's block formats on the grouped engine (core/engine_grouped.cpp), for
// every token count, each phase in its own format (a Q4_K_M block: gate|up
// q4_k, down q6_k). A phase's inputs are quantised as llama.cpp quantises
// them for its weights' format, so a block's dot product is integer sums:
// q8_0 and q4_0 (blocks of 32, an f16 scale each) read x or act per block of
// 32 as s8 with an f32 scale (ActBlock; llama.cpp keeps an f16 one), the
// K-quants (super-blocks of 256) per block of 256 with an f32 scale and
// sums of 16 (ActBlockK, llama.cpp's Q8_K). act stays in the gate|up tile
// (in place) and is quantised there, a block at a time: gate|up column tiles
// are whole blocks wide (multiples of 64 or 256 columns, or end at f).
//
// The prefill engine (core/engine_prefill.cpp): where oneDNN has an AMX
// matmul, full-height row tiles run it on weight tiles unpacked to bf16, with
// x and act rounded to bf16 instead of quantised: what the weights hold is
// exact in f32 (q * d), and bf16 keeps 8 of its up to 19 significant bits
// (2^-9 relative, as the bf16 dtype). Elsewhere the grouped kernels run
// every tile: the same path ran llama7b's prefill slower than they do both on
// an AVX2 CPU (f32 tiles) and on an avx512_bf16 one (oneDNN's
// avx512_core_bf16 brgemm against the VNNI kernels) (docs/measurements.md,
// "The prefill crossover" and "The grouped formats' prefill path on a bf16
// CPU"). AMX's bf16 tiles have not been measured.
#include <cassert>
#include <cstring>

#include "core/precision.hpp"
#include "core/workspace.hpp"
#include "formats/format_table.hpp"
#include "kernels/act_block.hpp"
#include "kernels/convert.hpp"
#include "kernels/grouped_layout.hpp"

namespace swiglu::detail {

namespace {

using dt = dnnl::memory::data_type;

class Grouped final : public Numerics {
public:
    // `unpacked_bytes`: 2 or 4 where full-height row tiles run on the
    // prefill engine with bf16 or f32 inputs, 0 where there is none (it
    // serves one format of blocks of 32 only).
    Grouped(Dtype gate_up, Dtype down, std::int64_t d, std::int64_t f, std::size_t unpacked_bytes)
        : Numerics(gate_up, down, d, f),
          x_(traits(gate_up).grouped, d),
          act_(traits(down).grouped, f),
          unpacked_bytes_(unpacked_bytes) {}

    ScratchSizes scratch() const override {
        ScratchSizes s{0, static_cast<std::size_t>(kChunkRows) * act_.row_bytes,
                       static_cast<std::size_t>(kChunkRows) * x_.row_bytes, 0};
        if (unpacked_bytes_) {  // act and x as the prefill kernels read them (f32 or bf16)
            s.act_floats = static_cast<std::size_t>(kChunkRows * f());
            s.x_prefill_bytes = static_cast<std::size_t>(kChunkRows * d()) * unpacked_bytes_;
        }
        return s;
    }

    void prepare_x(const float* x, std::int64_t rows, const RowTile&,
                   Workspace& ws) const override {
        // Padding rows past `rows` keep whatever rows they held (zeros at
        // first): finite, computed and dropped.
        for (std::int64_t r = 0; r < rows; ++r)
            quantize_activations(x_.format, x + r * d(), static_cast<std::size_t>(d()),
                                 x_.row(ws.x_src.data(), r));
        if (unpacked_bytes_) to_unpacked(x, rows * d(), ws.x_prefill.data());
    }

    // Quantised rows, format_blocks(k) activation blocks each; full-height
    // tiles on the prefill engine read f32 or bf16 rows.
    const void* src(PhaseId phase, const float*, const RowTile& t,
                    const Workspace& ws) const override {
        const bool gate_up = phase == PhaseId::gate_up;
        if (unpacked_bytes_ && t.bucket == kRowBuckets - 1)
            return gate_up ? ws.x_prefill.data() +
                                 static_cast<std::size_t>(t.row0 * d()) * unpacked_bytes_
                           : reinterpret_cast<const unsigned char*>(ws.act.data()) +
                                 static_cast<std::size_t>(t.row0 * f()) * unpacked_bytes_;
        return gate_up ? x_.row(ws.x_src.data(), t.row0) : act_.row(ws.act_src.data(), t.row0);
    }

    float* gate_up_row(float* gate_up, std::int64_t, std::int64_t, std::int64_t,
                       Workspace&) const override {
        return gate_up;  // act in place over gate: quantised from there
    }
    void store_act(float* act, std::int64_t width, std::int64_t c0, std::int64_t row,
                   Workspace& ws) const override {
        // Gate|up tiles are whole blocks of act wide (the engine's
        // gate_up_column_multiple), or end at f.
        assert(c0 % act_.block == 0);
        quantize_activations(act_.format, act, static_cast<std::size_t>(width),
                             static_cast<unsigned char*>(act_.row(ws.act_src.data(), row)) +
                                 static_cast<std::size_t>(c0 / act_.block) * act_.block_bytes);
        // Both forms, whichever engine path the row's tile takes in the down phase.
        if (unpacked_bytes_)
            to_unpacked(act, width,
                        reinterpret_cast<unsigned char*>(ws.act.data()) +
                            static_cast<std::size_t>(row * f() + c0) * unpacked_bytes_);
    }

private:
    // How one phase's inputs are quantised: the activation blocks of its
    // weights' format, `width` inputs a row.
    struct Activations {
        Activations(GroupedFormat f, std::int64_t width)
            : format(f),
              block(block_inputs(f)),
              block_bytes(act_block_bytes(f)),
              row_bytes(static_cast<std::size_t>(format_blocks(f, width)) * block_bytes) {}
        // Row `r` of a buffer of quantised rows.
        void* row(unsigned char* buffer, std::int64_t r) const {
            return buffer + static_cast<std::size_t>(r) * row_bytes;
        }
        GroupedFormat format;
        std::int64_t block;
        std::size_t block_bytes, row_bytes;
    };

    // n activations as the prefill kernels read them, at `to`.
    void to_unpacked(const float* from, std::int64_t n, unsigned char* to) const {
        if (unpacked_bytes_ == 2)
            to_bf16(from, reinterpret_cast<std::uint16_t*>(to), static_cast<std::size_t>(n));
        else
            std::memcpy(to, from, static_cast<std::size_t>(n) * sizeof(float));
    }

    Activations x_, act_;  // x as gate|up reads it, act as down does
    std::size_t unpacked_bytes_;
};

}  // namespace

// Automatic: bf16 tiles on AMX kernels only (see the top of this file).
Precision make_grouped_prefill_precision(Dtype dtype, std::int64_t d, std::int64_t f,
                                         const BuildPolicy& policy) {
    const MatmulTypes bf16{dt::bf16, dt::bf16, dt::f32}, f32{};
    const GroupedPrefill asked = policy.grouped_prefill;
    if (asked == GroupedPrefill::never) return {};
    const MatmulTypes& types = asked == GroupedPrefill::f32 ? f32 : bf16;
    return {std::make_unique<Grouped>(dtype, dtype, d, f, asked == GroupedPrefill::f32 ? 4 : 2),
            make_prefill_engine(
                dtype, types,
                asked == GroupedPrefill::automatic ? KernelDemand::amx : KernelDemand::any)};
}

Precision make_grouped_precision(Dtype gate_up, Dtype down, std::int64_t d, std::int64_t f) {
    return {std::make_unique<Grouped>(gate_up, down, d, f, 0), make_grouped_engine(gate_up, down)};
}

}  // namespace swiglu::detail
