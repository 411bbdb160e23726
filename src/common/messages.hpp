// Message helpers every layer shares, so that an argument error is thrown
// one way and a shape reads the same in every message.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
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

// "... and 12 more": the tail of a list a message cuts short.
inline std::string more_text(std::size_t left) {
    return "... and " + std::to_string(left) + " more";
}

// `names` with those that share the longest start with `near` first (the
// given order among equals): a message that lists a few of many names lists
// those nearest what was asked for.
template <class Name>
std::vector<Name> closest_first(std::vector<Name> names, std::string_view near) {
    const auto shared = [near](std::string_view name) {
        std::size_t n = 0;
        while (n < name.size() && n < near.size() && name[n] == near[n]) ++n;
        return n;
    };
    std::stable_sort(names.begin(), names.end(),
                     [&shared](const Name& a, const Name& b) { return shared(a) > shared(b); });
    return names;
}

// `text` on one line: control characters written as \n, \r, \t or \xHH.
// Every path goes through it where it becomes a file's label or a message:
// a path may hold a name a file chose (a shard's, from an index: fuzz_index
// found a newline there), and every message fits on one line.
inline std::string one_line(std::string_view text) {
    std::string s;
    s.reserve(text.size());
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '\n') {
            s += "\\n";
        } else if (c == '\r') {
            s += "\\r";
        } else if (c == '\t') {
            s += "\\t";
        } else if (u < 0x20 || u == 0x7f) {
            char hex[5];
            std::snprintf(hex, sizeof hex, "\\x%02x", u);
            s += hex;
        } else {
            s += c;
        }
    }
    return s;
}

}  // namespace swiglu::detail
