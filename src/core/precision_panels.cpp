// f32 and bf16 on the panels engine (kernels/panel_gemm.hpp), where oneDNN
// 2.6 serves poorly: without AVX-512 it has no brgemm (its gemm:jit reads
// our row-major tiles 128 bytes at a time) and no bf16 matmul at all (then
// bf16 weights would be read as f32, 4 bytes each); with AVX-512 its f32
// brgemm decodes slower than they do.
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
#include <cstring>

#include "core/precision.hpp"
#include "core/workspace.hpp"
#include "kernels/convert.hpp"
#include "kernels/panel_gemm.hpp"

namespace swiglu::detail {

namespace {

class Panels final : public Numerics {
public:
    Panels(Dtype dtype, std::int64_t d, std::int64_t f) : Numerics(dtype, d, f) {}

    ScratchSizes scratch() const override {
        return {static_cast<std::size_t>(kChunkRows * f()), 0,
                static_cast<std::size_t>(kChunkRows * d()) * sizeof(float), 0};
    }
    // x into the workspace (bf16: rounded). A padded last row tile's
    // padding rows are not computed: the kernels take any row count.
    void prepare_x(const float* x, std::int64_t rows, const RowTile&,
                   Workspace& ws) const override {
        const auto n = static_cast<std::size_t>(rows * d());
        if (dtype() == Dtype::bf16)
            round_to_bf16(x, x_copy(ws), n);
        else
            std::memcpy(x_copy(ws), x, n * sizeof(float));
    }
    // x (as prepared) or act, k per row.
    const void* src(PhaseId phase, const float*, const RowTile& t,
                    const Workspace& ws) const override {
        return phase == PhaseId::gate_up ? x_copy(ws) + t.row0 * d() : f32_act(t.row0, 0, ws);
    }
    // act in f32 (Workspace::act), bf16: rounded in place, what the down
    // matmul reads.
    void store_act(float* act, std::int64_t width, std::int64_t, std::int64_t,
                   Workspace&) const override {
        if (dtype() == Dtype::bf16) round_to_bf16(act, act, static_cast<std::size_t>(width));
    }

private:
    static float* x_copy(const Workspace& ws) { return reinterpret_cast<float*>(ws.x_src.data()); }
};

}  // namespace

// Where the panel kernels are vector code (below AVX2 oneDNN's f32 kernels
// are faster) and the policy allows. With AVX-512, oneDNN's f32 brgemm ran
// decode and 4-32 tokens slower than the AVX-512 panel kernels, and 64-512
// tokens level (docs/measurements.md, "Panel kernels for AVX-512" and the
// section after it), so f32 comes here on every CPU with AVX2; bf16 only
// when oneDNN has no bf16 matmul (precision_candidates' order).
Precision make_panels_precision(Dtype dtype, std::int64_t d, std::int64_t f,
                                const BuildPolicy& policy) {
    if (!policy.panels || panel_kernels_isa() == Isa::scalar) return {};
    return {std::make_unique<Panels>(dtype, d, f), make_panels_engine(dtype)};
}

}  // namespace swiglu::detail
