// What every fuzz target checks of an error: the one status it may have,
// a message that starts with the input's label and fits on one line; and
// the abort that makes libFuzzer keep the input when an invariant breaks.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include <swiglu/swiglu.hpp>

namespace fuzz {

inline const std::string kLabel = "<fuzz>";

[[noreturn]] inline void broken(const char* what, const std::string& detail = "") {
    std::fprintf(stderr, "invariant broken: %s %s\n", what, detail.c_str());
    std::abort();
}

// invalid_argument always; unsupported where `unsupported_allowed`.
inline void check_message(const swiglu::Error& e, bool unsupported_allowed) {
    const std::string m = e.what();
    if (e.status() != swiglu::Status::invalid_argument &&
        !(unsupported_allowed && e.status() == swiglu::Status::unsupported))
        broken("unexpected status", std::to_string(static_cast<int>(e.status())) + ": " + m);
    if (m.compare(0, kLabel.size() + 2, kLabel + ": ") != 0)
        broken("message without the label:", m);
    if (m.find('\n') != std::string::npos || m.find('\r') != std::string::npos)
        broken("message of more than one line:", m);
}

}  // namespace fuzz
