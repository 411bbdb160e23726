// How the kernels that keep several rows' accumulators in registers cover
// any row count: passes of kMax rows, then one pass of the rest, each pass's
// height a compile-time constant (so its accumulators are registers).
//
// Included by per-ISA TUs: every instantiation is on the caller's own
// lambda type, so no two TUs (built with different flags) share one.
#pragma once

#include <cstdint>
#include <type_traits>

namespace swiglu::detail {

// pass(std::integral_constant<int, R>{}, m) for rows [m, m + R), R = rest.
template <int R, class Pass>
inline void last_row_pass(std::int64_t rest, std::int64_t m, Pass& pass) {
    if constexpr (R > 0) {
        if (rest == R)
            pass(std::integral_constant<int, R>{}, m);
        else
            last_row_pass<R - 1>(rest, m, pass);
    }
}

// pass(std::integral_constant<int, R>{}, m) over rows [0, rows): R = kMax
// while kMax rows are left, then the rest.
template <int kMax, class Pass>
inline void row_passes(std::int64_t rows, Pass&& pass) {
    std::int64_t m = 0;
    for (; m + kMax <= rows; m += kMax) pass(std::integral_constant<int, kMax>{}, m);
    last_row_pass<kMax - 1>(rows - m, m, pass);
}

}  // namespace swiglu::detail
