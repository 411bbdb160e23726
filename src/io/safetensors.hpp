// A reader of Hugging Face safetensors files that trusts nothing in them.
//
// Format: u64 little-endian header length N, N bytes of JSON header, then the
// data. The header maps tensor names to {"dtype", "shape", "data_offsets":
// [begin, end]} (offsets relative to the data start), plus an optional
// "__metadata__" object of string -> string.
//
// Everything is validated when the file is opened, before any tensor byte is
// read: lengths (header <= 100 MB), the leading '{', NUL bytes, UTF-8, JSON,
// duplicate keys at any level, nesting depth, types, dtypes, shapes (overflow
// checked), and offsets, which must tile the data exactly (sorted by begin:
// first at 0, each where the previous one ended, the last at the end of the
// file). A file that opens is safe to read in full. Each failure is a
// swiglu::Error (Status::invalid_argument) whose message starts with the file's
// label (its path, or "<memory>") and names the tensor and expected vs found.
// Trailing whitespace after the JSON is accepted (the format pads with
// spaces); keys of a tensor entry other than dtype/shape/data_offsets are
// ignored, as the reference reader does; "__metadata__" must be an object of
// strings and is kept in metadata().
//
// Tensors need not be aligned in the file; everything is read with memcpy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace swiglu::detail {

// Every dtype the safetensors format defines (as of safetensors 0.6). Only
// F32, BF16 and F16 convert to f32; the others are valid in a file (they are
// sized and checked like any tensor) but Status::unsupported when read.
enum class TensorDtype {
    BOOL,
    F4,
    F6_E2M3,
    F6_E3M2,
    U8,
    I8,
    F8_E5M2,
    F8_E4M3,
    F8_E8M0,
    I16,
    U16,
    F16,
    BF16,
    I32,
    U32,
    F32,
    C64,
    F64,
    I64,
    U64,
};

std::optional<TensorDtype> parse_dtype(std::string_view name);  // nullopt: not a safetensors dtype
const char* dtype_name(TensorDtype dtype);                      // "BF16"
std::string safetensors_dtype_names();  // every dtype's name, space-separated
int dtype_bits(
    TensorDtype dtype);  // bits per element: 4 (F4), 6 (F6_*), 8 (BOOL, U8, ...), ..., 64 (C64)

struct TensorInfo {
    std::string name;
    TensorDtype dtype = TensorDtype::F32;
    std::vector<std::int64_t> shape;  // each >= 0; [] is a scalar (1 element)
    std::int64_t elements = 0;        // product of shape, known not to overflow
    std::uint64_t offset = 0;         // data_offsets[0], from the start of the data
    std::uint64_t bytes = 0;          // data_offsets[1] - data_offsets[0]
};

class SafetensorsFile {
public:
    // Maps `path` read-only and validates it; the label in messages is `path`.
    // The mapping lives as long as this object or any copy of it.
    static SafetensorsFile open(const std::string& path);
    // Validates `size` bytes at `data`, which are not copied: they must
    // outlive the returned object (and its copies). Any alignment.
    static SafetensorsFile from_memory(const void* data, std::size_t size,
                                       std::string label = "<memory>");

    const std::string& label() const { return label_; }
    // In file order (sorted by offset), which need not be the header's order.
    const std::vector<TensorInfo>& tensors() const { return tensors_; }
    const TensorInfo* find(std::string_view name) const;  // nullptr if absent
    const std::map<std::string, std::string>& metadata() const { return metadata_; }

    std::uint64_t header_length() const { return header_length_; }
    std::uint64_t data_size() const { return data_size_; }
    // The tensor's bytes as stored (little-endian, unaligned).
    const unsigned char* tensor_data(const TensorInfo& tensor) const;

    // The tensor's values as f32: F32 copied, BF16 and F16 widened exactly.
    // Other dtypes: swiglu::Error, Status::unsupported.
    std::vector<float> to_f32(const TensorInfo& tensor) const;

private:
    SafetensorsFile() = default;
    void parse();  // validates and fills tensors_, index_, metadata_

    std::shared_ptr<const unsigned char> owner_;  // the mapping, or nothing (from_memory)
    const unsigned char* bytes_ = nullptr;
    std::size_t size_ = 0;
    std::string label_;
    std::uint64_t header_length_ = 0;
    std::uint64_t data_size_ = 0;
    std::vector<TensorInfo> tensors_;
    std::map<std::string, std::size_t, std::less<>> index_;  // name -> position in tensors_
    std::map<std::string, std::string> metadata_;
};

// `name` in double quotes with control characters escaped and cut to 200
// bytes, for error messages about names taken from a hostile file.
std::string quote_name(std::string_view name);

}  // namespace swiglu::detail
