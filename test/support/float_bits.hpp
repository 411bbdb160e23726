// A float's IEEE bits and back, for tests that spell values bit by bit
// (NaN payloads, rounding ties).
#pragma once

#include <cstdint>
#include <cstring>

namespace swiglu::test {

inline std::uint32_t bits(float v) {
    std::uint32_t u;
    std::memcpy(&u, &v, sizeof(u));
    return u;
}

inline float from_bits(std::uint32_t u) {
    float v;
    std::memcpy(&v, &u, sizeof(v));
    return v;
}

}  // namespace swiglu::test
