// The choice of candidate modes per dtype.
#include "core/precision.hpp"

namespace swiglu::detail {

std::vector<Precision> precision_candidates(Dtype dtype, std::int64_t d, std::int64_t f,
                                            const BuildPolicy& policy) {
    std::vector<Precision> modes;
    auto add = [&](Precision mode) {
        if (mode.numerics) modes.push_back(std::move(mode));
    };
    switch (dtype) {
        case Dtype::f32:
            add(make_panels_precision(dtype, d, f, policy));
            add(make_f32_precision(d, f));
            break;
        case Dtype::bf16:
            add(make_bf16_precision(d, f));
            add(make_panels_precision(dtype, d, f, policy));
            add(make_bf16_emulated_precision(d, f));
            break;
        case Dtype::int8: add(make_int8_precision(d, f, policy)); break;
        case Dtype::q8_0:
        case Dtype::q4_0:
            add(make_grouped_prefill_precision(dtype, d, f, policy));
            add(make_grouped_precision(dtype, d, f));
            break;
    }
    return modes;
}

}  // namespace swiglu::detail
