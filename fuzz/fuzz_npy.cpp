// libFuzzer target: a .npy file from hostile bytes.
//
// parse_npy either returns an array whose data matches its shape, or throws
// swiglu::Error (invalid_argument) with a one-line message that starts with
// the file's name. What it accepts must survive a write/read round trip bit
// for bit. Anything else aborts, and libFuzzer keeps the input.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include <swiglu/swiglu.hpp>

#include "cli/npy.hpp"
#include "fuzz_checks.hpp"

using fuzz::broken;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using swiglu::detail::NpyArray;
    NpyArray a;
    try {
        a = swiglu::detail::parse_npy(std::string_view(reinterpret_cast<const char*>(data), size),
                                      fuzz::kLabel);
    } catch (const swiglu::Error& e) {
        fuzz::check_message(e, false);
        return 0;
    }
    std::int64_t elements = 1;
    for (std::int64_t n : a.shape) {
        if (n < 0) broken("negative dimension accepted");
        if (__builtin_mul_overflow(elements, n, &elements))
            elements = -1;  // only with a 0 elsewhere
    }
    bool has_zero = false;
    for (std::int64_t n : a.shape) has_zero = has_zero || n == 0;
    if (has_zero) elements = 0;
    if (elements != a.elements()) broken("shape and data disagree");

    const std::string bytes = swiglu::detail::npy_bytes(a.data.data(), a.shape);
    const NpyArray b = swiglu::detail::parse_npy(bytes, "round trip");
    if (b.shape != a.shape) broken("round trip changed the shape");
    if (b.data.size() != a.data.size() ||
        (!a.data.empty() &&
         std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) != 0))
        broken("round trip changed the data");
    return 0;
}
