// f32: the caller's weights as they are, f32 matmuls, act in f32.
#include <cstring>

#include "core/precision.hpp"
#include "core/workspace.hpp"

namespace swiglu::detail {

namespace {

class F32 final : public Precision {
public:
    F32(std::int64_t d, std::int64_t f) : Precision(Dtype::f32, d, f) {}

    MatmulTypes matmul_types() const override { return {}; }
    double bytes_per_weight() const override { return 4; }
    bool unpack_f32(const dnnl::memory& tile, std::int64_t k, std::int64_t n,
                    float* plain) const override {
        reorder(tile.get_data_handle(), tile.get_desc(),
                dnnl::memory({{k, n}, dnnl::memory::data_type::f32, {n, 1}}, cpu_engine(), plain));
        return true;
    }

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

    const void* gate_up_src(const float* x, const RowTile& t, const Workspace& ws) const override {
        return t.padded() ? ws.x_src.data() : static_cast<const void*>(x + t.row0 * d());
    }
};

}  // namespace

std::unique_ptr<Precision> make_f32_precision(std::int64_t d, std::int64_t f) {
    return std::make_unique<F32>(d, f);
}

}  // namespace swiglu::detail
