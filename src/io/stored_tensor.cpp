#include "io/stored_tensor.hpp"

#include <swiglu/swiglu.hpp>

#include "io/safetensors.hpp"  // quote_name

namespace swiglu::detail {

std::vector<float> decode_to_f32(const StoredTensor& t, const std::string& label) {
    if (!readable(t))
        throw Error(Status::unsupported, label + ": tensor " + quote_name(t.name) + " has type " +
                                             t.type_name + ", which the loader does not read (" +
                                             format_names(FormatSet::stored, ", ", " and ") +
                                             " it does)");
    // The reader's count: multiplying the shape here in another order could
    // overflow where a 0 dimension made the product 0 (a fuzzer found that).
    const std::int64_t elements = t.elements;
    std::vector<float> out(static_cast<std::size_t>(elements));
    if (elements == 0) return out;
    const std::int64_t row = t.shape.empty() ? 1 : t.shape.back();
    const std::int64_t rows = elements / row;
    const std::uint64_t stride = stored_row_bytes(t, row);
    for (std::int64_t r = 0; r < rows; ++r)
        t.format->decode(t.data + std::size_t(r) * stride, static_cast<std::size_t>(row),
                         out.data() + std::size_t(r) * std::size_t(row));
    return out;
}

}  // namespace swiglu::detail
