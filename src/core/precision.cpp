// The defaults the modes share, and the choice of candidates per dtype.
#include "core/precision.hpp"

#include <cstring>

#include "core/workspace.hpp"

namespace swiglu::detail {

bool Precision::accepts(const std::vector<const MatmulKernel*>&) const { return true; }

void Precision::pack_tile(PhaseId, float* plain, std::int64_t k, std::int64_t n, std::int64_t,
                          const dnnl::memory& to) {
    // oneDNN's reorder packs, and rounds f32 to bf16 (nearest even) when
    // the packed layout is bf16.
    reorder(plain, dnnl::memory::desc({k, n}, dnnl::memory::data_type::f32, {n, 1}), to);
}

std::size_t Precision::own_tile_bytes(std::int64_t, std::int64_t) const { return 0; }

void Precision::matmul_tile(PhaseId, const void*, std::int64_t, std::int64_t, const RowTile&,
                            const Workspace&, float*) const {
    throw Error(Status::internal, "matmul_tile: this precision mode runs oneDNN's kernels");
}

bool Precision::accepts_prefill(const MatmulKernel&) const { return false; }

std::size_t Precision::unpacked_bytes(std::int64_t, std::int64_t) const { return 0; }

void Precision::unpack_tile(const void*, std::int64_t, std::int64_t, void*) const {
    throw Error(Status::internal, "unpack_tile: this precision mode has no prefill path");
}

const void* Precision::prefill_src(PhaseId, const RowTile&, const Workspace&) const {
    throw Error(Status::internal, "prefill_src: this precision mode has no prefill path");
}

void Precision::gate_up_to_f32(float*, std::int64_t, std::int64_t, std::int64_t,
                               const Workspace&) const {}

float* Precision::f32_act(std::int64_t row, std::int64_t c0, const Workspace& ws) const {
    return ws.act.data() + row * f_ + c0;
}

float* Precision::act_row(float*, std::int64_t c0, std::int64_t row, Workspace& ws) const {
    return f32_act(row, c0, ws);
}

const void* Precision::down_src(const RowTile& t, const Workspace& ws) const {
    return f32_act(t.row0, 0, ws);
}

void Precision::store_act(float*, std::int64_t, std::int64_t, std::int64_t, Workspace&) const {}

void Precision::act_step(std::int64_t, Workspace&) const {}

void Precision::down_out(const float* tile, std::int64_t width, std::int64_t c0, const RowTile& t,
                         float* y, const Workspace&) const {
    // Only the valid rows: a padded tile's extra rows are dropped here.
    copy_rows(tile, width, y + t.row0 * d_ + c0, d_, t.rows, width);
}

void Precision::copy_rows(const float* from, std::int64_t from_stride, float* to,
                          std::int64_t to_stride, std::int64_t rows, std::int64_t width) {
    for (std::int64_t r = 0; r < rows; ++r)
        std::memcpy(to + r * to_stride, from + r * from_stride,
                    static_cast<std::size_t>(width) * sizeof(float));
}

std::vector<std::unique_ptr<Precision>> precision_candidates(Dtype dtype, std::int64_t d,
                                                             std::int64_t f) {
    std::vector<std::unique_ptr<Precision>> modes;
    switch (dtype) {
        case Dtype::f32:
            modes.push_back(make_panels_precision(dtype, d, f));
            modes.push_back(make_f32_precision(d, f));
            break;
        case Dtype::bf16:
            modes.push_back(make_bf16_precision(d, f));
            modes.push_back(make_panels_precision(dtype, d, f));
            modes.push_back(make_bf16_emulated_precision(d, f));
            break;
        case Dtype::int8: modes.push_back(make_int8_precision(d, f)); break;
        case Dtype::q8_0:
        case Dtype::q4_0: modes.push_back(make_grouped_precision(dtype, d, f)); break;
    }
    return modes;
}

}  // namespace swiglu::detail
