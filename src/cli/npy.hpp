// NumPy .npy files of float32, C order: what the `swiglu` command reads its
// input from and writes its output to.
//
// Format (numpy.lib.format): "\x93NUMPY", major, minor, header length (u16
// little-endian for version 1.0, u32 for 2.0 and 3.0), then a Python dict
// literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded
// with spaces and ending in '\n', then the raw data.
//
// The reader is strict on purpose: the data of a file whose header lies
// would silently be read as something else, so every field is checked and
// the data must be exactly product(shape) * 4 bytes. Every error is a
// swiglu::Error(Status::invalid_argument) whose message starts with the
// file's name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace swiglu::detail {

struct NpyArray {
    std::vector<std::int64_t> shape;  // () for a 0-D array (one element)
    std::vector<float> data;          // row-major, product(shape) elements

    std::int64_t elements() const { return static_cast<std::int64_t>(data.size()); }
};

// Reads a whole .npy file. `path` is named in every error message.
NpyArray read_npy(const std::string& path);
// The same from bytes in memory; `name` stands for the file in messages.
NpyArray parse_npy(std::string_view bytes, const std::string& name = "<memory>");

// The header dict numpy writes for a float32 C-order array of `shape`:
// "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }".
std::string npy_header_dict(const std::vector<std::int64_t>& shape);
// Magic, version, header length, `dict` padded with spaces to make the data
// start at a multiple of 64 bytes, and '\n': everything before the data.
// Version 1.0 unless the header needs more than 65535 bytes (then 2.0).
// Exposed apart from npy_bytes so tests can wrap hand-written (bad) dicts.
std::string npy_preamble(const std::string& dict);
// A complete .npy file (version 1.0, '<f4', C order) of `data`, which must
// hold product(shape) elements.
std::string npy_bytes(const float* data, const std::vector<std::int64_t>& shape);
// "(2, 3)", "(3,)", "()": shapes in messages read as numpy prints them.
std::string shape_string(const std::vector<std::int64_t>& shape);

}  // namespace swiglu::detail
