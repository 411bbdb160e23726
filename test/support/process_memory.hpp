// This process's memory as Linux reports it, for the peak-RSS checks of
// the `memory` test suite and of swiglu_peak_rss (header-only: both use it;
// bench/CMakeLists.txt adds this folder to swiglu_peak_rss's include path).
#pragma once

#include <cstdio>
#include <fstream>
#include <string>

namespace swiglu_memory {

// A field of /proc/self/status in KiB ("VmRSS", "VmHWM"); -1 if absent.
inline long status_kib(const std::string& field) {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.compare(0, field.size() + 1, field + ":") == 0)
            return std::stol(line.substr(field.size() + 1));
    return -1;
}

// Sets the peak RSS (VmHWM) to the current RSS; false where the kernel can't.
inline bool reset_peak() {
    std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
    if (!f) return false;
    const bool ok = std::fputs("5", f) >= 0;
    return std::fclose(f) == 0 && ok;
}

}  // namespace swiglu_memory
