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

// The height of the pass at `rest` rows left: kMax while kMax + 3 or more
// are left, then the last kMax + 1 or kMax + 2 rows as two passes of about
// half (not kMax and a pass of 1 or 2 rows, which loads as much per row as
// a full pass but has far fewer fmas to hide it behind).
template <int kMax>
constexpr std::int64_t even_pass_height(std::int64_t rest) {
    return rest <= kMax ? rest : rest >= kMax + 3 ? kMax : (rest + 1) / 2;
}

template <int kMax>
constexpr std::int64_t even_pass_count(std::int64_t rows) {
    std::int64_t count = 0;
    for (std::int64_t m = 0; m < rows; m += even_pass_height<kMax>(rows - m)) ++count;
    return count;
}

// pass(std::integral_constant<int, R>{}, m, index) over rows [0, rows) in
// passes of even_pass_height rows; index counts the passes from 0.
template <int kMax, class Pass>
inline void even_row_passes(std::int64_t rows, Pass&& pass) {
    std::int64_t index = 0;
    auto numbered = [&](auto height, std::int64_t m) { pass(height, m, index++); };
    for (std::int64_t m = 0; m < rows;) {
        const std::int64_t height = even_pass_height<kMax>(rows - m);
        last_row_pass<kMax>(height, m, numbered);
        m += height;
    }
}

}  // namespace swiglu::detail
