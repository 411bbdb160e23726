// Writes safetensors files for the tests: well-formed ones from tensor specs,
// and raw bytes for the malformed ones.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace swiglu::test {

struct TensorSpec {
    std::string name;
    std::string dtype;  // "F32", "BF16" or "F16" (values are converted), or any other string (raw
                        // zero bytes, 4 per element)
    std::vector<std::int64_t> shape;
    std::vector<float> values;  // row-major, product(shape) elements
};

// The bytes of a safetensors file holding `tensors` in order, with an
// optional "__metadata__" object (JSON text) first in the header.
std::string safetensors_bytes(const std::vector<TensorSpec>& tensors,
                              const std::string& metadata_json = "");

// A tensor whose stored bytes are given as is, for any dtype and any length
// (e.g. 3 bytes of U8, to put the next tensor at an odd offset).
struct RawTensor {
    std::string name;
    std::string dtype;
    std::vector<std::int64_t> shape;
    std::string bytes;
};
// The stored bytes of `t` as safetensors_bytes writes them.
std::string tensor_bytes(const TensorSpec& t);
// The same layout as safetensors_bytes from raw tensors, back to back in order.
// (Its own name: an overload would make `{..., {}}` ambiguous.)
std::string safetensors_bytes_raw(const std::vector<RawTensor>& tensors,
                                  const std::string& metadata_json = "");
// A file from raw parts: the u64 header length, the header text, the data.
std::string safetensors_raw(std::uint64_t header_length, const std::string& header,
                            const std::string& data);
void write_file(const std::string& path, const std::string& bytes);
// A fresh directory under $TMPDIR (or /tmp), removed with its contents when
// the process exits normally.
std::string temp_dir();

std::uint16_t to_bf16(float v);  // round to nearest even
std::uint16_t to_f16(float v);   // round to nearest even
float from_bf16(std::uint16_t h);
float from_f16(std::uint16_t h);
// `v` as a file of `dtype` ("F32", "BF16", "F16") stores it, read back as f32.
std::vector<float> rounded(const std::vector<float>& v, const std::string& dtype);

}  // namespace swiglu::test
