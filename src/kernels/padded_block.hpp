// One block of a row's inputs for the quantisers (ggml_blocks.cpp,
// kquant_blocks.cpp): the row's last block padded with zeros, and whether
// every value is finite (a block holding NaN or +-inf gets a NaN scale).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <iterator>

namespace swiglu::detail {

// Values [b * Size, b * Size + Size) of a row of n into v, past n zeros;
// false if any is NaN or +-inf.
template <std::size_t Size>
bool load_padded_block(const float* x, std::size_t n, std::size_t b, float (&v)[Size]) {
    const std::size_t begin = b * Size;
    const std::size_t count = std::min(Size, n - begin);
    std::fill(std::begin(v), std::end(v), 0.0f);
    std::memcpy(v, x + begin, count * sizeof(float));
    bool finite = true;
    for (float a : v) finite = finite && std::isfinite(a);
    return finite;
}

}  // namespace swiglu::detail
