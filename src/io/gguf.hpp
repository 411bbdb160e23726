// A reader of GGUF files (llama.cpp's model format, versions 2 and 3) that
// trusts nothing in them.
//
// Layout, little-endian: "GGUF", u32 version, u64 tensor count, u64
// metadata count; the metadata (key: u64 length + bytes, u32 value type,
// value; arrays: u32 element type, u64 count, elements); the tensor infos
// (name, u32 dimension count, u64 ne[n] with ne[0] the innermost: a row's
// length, u32 ggml type, u64 offset from the data section); padding to the
// alignment (metadata general.alignment, a u32 power of two, default 32);
// the data section.
//
// Everything is checked when the file is opened, before any tensor byte is
// read: every count against the bytes left (so a hostile count cannot make
// us loop or allocate), every string and array length, value types, array
// nesting (at most 8 deep), dimensions (1 to 4, each >= 0, products
// overflow-checked), whole blocks per row for block types, offsets aligned,
// inside the data and not overlapping, names unique. Each failure is a
// swiglu::Error (Status::invalid_argument) starting with the file's label.
// Tensors of a ggml type this reader does not know are kept (their extent
// cannot be checked, and they are never read).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace swiglu::detail {

// A ggml type this reader knows the size of (every type a GGUF file may
// hold, read or not: the extent of each tensor is checked). Which of them
// the loader reads, and as what, is the format table's word
// (formats/format_table.hpp); ctest `formats` ties the two tables' sizes.
struct GgmlType {
    std::uint32_t id;
    const char* name;    // "Q4_0"
    std::int64_t block;  // values per block (1: not a block type)
    std::int64_t bytes;  // bytes per block
};
// nullptr: a type this reader does not know.
const GgmlType* ggml_type(std::uint32_t id);
std::string ggml_type_name(std::uint32_t id);  // "Q4_0", or "ggml type 23"

// A metadata value of a scalar type: an integer, a float or a bool.
struct GgufScalar {
    std::uint32_t type =
        0;  // GGUF's value type: 0 u8 ... 5 i32, 6 f32, 7 bool, 10 u64, 11 i64, 12 f64
    // The value (a bool's 0 or 1); exact for every float, and for integers
    // up to 2^53 (counts in a model are far below).
    double value = 0;
    bool is_integer() const { return type <= 5 || type == 10 || type == 11; }
    bool is_float() const { return type == 6 || type == 12; }
    bool is_bool() const { return type == 7; }
};
// "u32", "f32", "bool", ...: a value type as messages name it.
const char* gguf_value_type_name(std::uint32_t type);

struct GgufTensor {
    std::string name;
    std::uint32_t type = 0;
    std::vector<std::int64_t> ne;     // GGUF's order: ne[0] is a row's length
    std::vector<std::int64_t> shape;  // outermost first (ne reversed): a weight is (out, in)
    std::int64_t elements = 0;
    std::uint64_t offset = 0;  // from the start of the data section
    std::uint64_t bytes = 0;   // 0 for a type this reader does not know
};

class GgufFile {
public:
    // Maps `path` read-only and validates it; the label in messages is `path`.
    static GgufFile open(const std::string& path);
    // Validates `size` bytes at `data`, which are not copied and must outlive
    // the returned object.
    static GgufFile from_memory(const void* data, std::size_t size, std::string label = "<memory>");
    // Whether `bytes` start with GGUF's magic.
    static bool has_magic(std::string_view bytes);

    const std::string& label() const { return label_; }
    std::uint32_t version() const { return version_; }
    std::uint64_t alignment() const { return alignment_; }
    // In file order.
    const std::vector<GgufTensor>& tensors() const { return tensors_; }
    const GgufTensor* find(std::string_view name) const;  // nullptr if absent
    // The string values of the metadata (general.architecture, ...); values
    // of other types are checked and skipped.
    const std::map<std::string, std::string>& strings() const { return strings_; }
    // The scalar values (expert counts, flags, scales: what a Mixture-of-
    // Experts layer's routing rule is made of); nullptr if absent or not a
    // scalar (a string, an array).
    const GgufScalar* scalar(std::string_view key) const;
    // A tensor's bytes; only for a type this reader knows.
    const unsigned char* tensor_data(const GgufTensor& tensor) const;

private:
    GgufFile() = default;
    void parse();

    std::shared_ptr<const unsigned char> owner_;  // the mapping, or nothing (from_memory)
    const unsigned char* bytes_ = nullptr;
    std::size_t size_ = 0;
    std::string label_;
    std::uint32_t version_ = 0;
    std::uint64_t alignment_ = 32;
    std::uint64_t data_start_ = 0;
    std::vector<GgufTensor> tensors_;
    std::map<std::string, std::size_t, std::less<>> index_;
    std::map<std::string, std::string> strings_;
    std::map<std::string, GgufScalar, std::less<>> scalars_;
};

}  // namespace swiglu::detail
