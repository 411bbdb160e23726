// JSON text from a hostile file, parsed so that it means the same to every
// reader: a first pass that builds nothing rejects duplicate keys at any
// level (nlohmann keeps the last silently; another reader may keep the
// first) and nesting past a limit (a "[[[[..." would grow the parser's
// stacks), then the tree is built. The safetensors header and the sharded
// checkpoint's index share it.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace swiglu::detail {

struct StrictJsonRules {
    const char* document;  // in messages: "header", "index"
    int max_nesting;
    const char* nesting_hint;  // after the nesting message, e.g. "a valid header nests 3 deep"
    // The message for a key that repeats; `inside` is the top-level key the
    // repeat is under ("" for a repeat at the top level).
    std::function<std::string(const std::string& key, const std::string& inside)> duplicate;
};

// Parses `text` or calls `fail` (which must throw) with what is wrong:
// "<document> is not valid JSON: ...", a duplicate (rules.duplicate), or
// "<document> nests deeper than N levels; <hint>".
nlohmann::json parse_strict_json(std::string_view text, const StrictJsonRules& rules,
                                 const std::function<void(const std::string&)>& fail);

}  // namespace swiglu::detail
