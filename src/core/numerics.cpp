// The defaults the formats share: f32 weights, an f32 matmul output, act in f32.
#include "core/numerics.hpp"

#include <cstring>

#include "core/workspace.hpp"

namespace swiglu::detail {

PlainWeights Numerics::convert_weights(PhaseId, float* plain, std::int64_t, std::int64_t,
                                       std::int64_t) {
    return {plain, dnnl::memory::data_type::f32};
}

float* Numerics::f32_act(std::int64_t row, std::int64_t c0, const Workspace& ws) const {
    return ws.act.data() + row * f_ + c0;
}

float* Numerics::gate_up_row(float*, std::int64_t, std::int64_t c0, std::int64_t row,
                             Workspace& ws) const {
    return f32_act(row, c0, ws);
}

void Numerics::down_out(const float* tile, std::int64_t ld, std::int64_t width, std::int64_t c0,
                        const RowTile& t, float* y, const Workspace&) const {
    // Only the valid rows: a padded tile's extra rows are dropped here.
    copy_rows(tile, ld, y + t.row0 * d_ + c0, d_, t.rows, width);
}

void Numerics::copy_rows(const float* from, std::int64_t from_stride, float* to,
                         std::int64_t to_stride, std::int64_t rows, std::int64_t width) {
    for (std::int64_t r = 0; r < rows; ++r)
        std::memcpy(to + r * to_stride, from + r * from_stride,
                    static_cast<std::size_t>(width) * sizeof(float));
}

}  // namespace swiglu::detail
