// Writing a float32 .npy file in one piece (see atomic_file.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace swiglu::cli {

// Writes `data` (product(shape) floats) as a .npy file at `path`, atomically:
// on failure `path` is left as it was and no temporary file remains.
void write_npy_file(const std::string& path, const float* data,
                    const std::vector<std::int64_t>& shape);

}  // namespace swiglu::cli
