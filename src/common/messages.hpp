// Message helpers every layer shares, so that an argument error is thrown
// one way and a shape reads the same in every message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <swiglu/swiglu.hpp>

namespace swiglu::detail {

// Throws swiglu::Error(Status::invalid_argument, message).
[[noreturn]] inline void invalid(const std::string& message) {
    throw Error(Status::invalid_argument, message);
}

// "[2, 3]", "[3]", "[]": a shape as safetensors headers write it.
inline std::string shape_text(const std::vector<std::int64_t>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

}  // namespace swiglu::detail
