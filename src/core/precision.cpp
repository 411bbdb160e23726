// The choice of candidate modes per dtype.
#include "core/precision.hpp"

#include "formats/format_table.hpp"

namespace swiglu::detail {

std::vector<Precision> precision_candidates(Dtype dtype, Dtype down, std::int64_t d, std::int64_t f,
                                            const BuildPolicy& policy) {
    std::vector<Precision> modes;
    auto add = [&](Precision mode) {
        if (mode.numerics) modes.push_back(std::move(mode));
    };
    // By the format's numerics family (formats/format_table.hpp), not by
    // the format: a new format of an existing family needs no line here.
    switch (traits(dtype).numerics) {
        case NumericsKind::f32:
            add(make_panels_precision(dtype, d, f, policy));
            add(make_f32_precision(d, f));
            break;
        case NumericsKind::bf16:
            add(make_bf16_precision(d, f, policy));
            add(make_panels_precision(dtype, d, f, policy));
            add(make_bf16_emulated_precision(d, f));
            break;
        case NumericsKind::int8: add(make_int8_precision(d, f, policy)); break;
        case NumericsKind::grouped:
            // The prefill engine unpacks blocks of 32 of one format.
            if (dtype == down && traits(dtype).activation == Activation::q8_0_blocks)
                add(make_grouped_prefill_precision(dtype, d, f, policy));
            add(make_grouped_precision(dtype, down, d, f));
            break;
        case NumericsKind::none: break;  // storage only: no Dtype runs it
    }
    return modes;
}

}  // namespace swiglu::detail
