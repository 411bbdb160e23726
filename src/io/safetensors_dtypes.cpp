// The dtypes the safetensors format defines: names and bits per element.
// Which of them hold weights the loader reads is the format table's word
// (formats/format_table.hpp), not this list's.
#include <string>

#include <swiglu/swiglu.hpp>

#include "io/safetensors.hpp"

namespace swiglu::detail {

namespace {

struct DtypeEntry {
    TensorDtype dtype;
    const char* name;
    int bits;
};

constexpr DtypeEntry kDtypes[] = {
    {TensorDtype::BOOL, "BOOL", 8},       {TensorDtype::F4, "F4", 4},
    {TensorDtype::F6_E2M3, "F6_E2M3", 6}, {TensorDtype::F6_E3M2, "F6_E3M2", 6},
    {TensorDtype::U8, "U8", 8},           {TensorDtype::I8, "I8", 8},
    {TensorDtype::F8_E5M2, "F8_E5M2", 8}, {TensorDtype::F8_E4M3, "F8_E4M3", 8},
    {TensorDtype::F8_E8M0, "F8_E8M0", 8}, {TensorDtype::I16, "I16", 16},
    {TensorDtype::U16, "U16", 16},        {TensorDtype::F16, "F16", 16},
    {TensorDtype::BF16, "BF16", 16},      {TensorDtype::I32, "I32", 32},
    {TensorDtype::U32, "U32", 32},        {TensorDtype::F32, "F32", 32},
    {TensorDtype::C64, "C64", 64},        {TensorDtype::F64, "F64", 64},
    {TensorDtype::I64, "I64", 64},        {TensorDtype::U64, "U64", 64},
};

const DtypeEntry& entry_of(TensorDtype dtype) {
    for (const DtypeEntry& e : kDtypes)
        if (e.dtype == dtype) return e;
    throw Error(Status::internal, "safetensors: TensorDtype " +
                                      std::to_string(static_cast<int>(dtype)) +
                                      " missing from the dtype table");
}

}  // namespace

std::string safetensors_dtype_names() {
    std::string s;
    for (const DtypeEntry& e : kDtypes) s += (s.empty() ? "" : " ") + std::string(e.name);
    return s;
}

std::optional<TensorDtype> parse_dtype(std::string_view name) {
    for (const DtypeEntry& e : kDtypes)
        if (name == e.name) return e.dtype;
    return std::nullopt;
}

const char* dtype_name(TensorDtype dtype) { return entry_of(dtype).name; }
int dtype_bits(TensorDtype dtype) { return entry_of(dtype).bits; }

}  // namespace swiglu::detail
