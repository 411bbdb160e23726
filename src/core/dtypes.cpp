// The public names of the dtypes, read from the format table.
#include <swiglu/swiglu.hpp>

#include "formats/format_table.hpp"

namespace swiglu {

const char* dtype_name(Dtype dtype) noexcept {
    for (Dtype known : kDtypes)
        if (known == dtype) return detail::traits(dtype).name;
    return "unknown";
}

bool dtype_from_name(std::string_view name, Dtype* out) noexcept {
    const detail::FormatTraits* t = detail::format_by_name(name);
    if (!t || !t->runs || !out) return false;
    *out = t->dtype;
    return true;
}

bool is_block_dtype(Dtype dtype) noexcept {
    for (Dtype known : kDtypes)
        if (known == dtype) return detail::traits(dtype).block > 1;
    return false;
}

std::string dtype_names() { return detail::format_names(detail::FormatSet::runs); }

}  // namespace swiglu
