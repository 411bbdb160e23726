// bf16 and IEEE f16 to f32, exactly: every 16-bit value (subnormals, +-0,
// +-inf, NaN with its payload) maps to the f32 of the same value. Scalar on
// purpose: conversion runs once, at load time, and must be obviously right.
#pragma once

#include <cstdint>
#include <cstring>

namespace swiglu::detail {

// bf16 is the top half of an f32, so widening is a shift.
inline float bf16_to_f32(std::uint16_t h) {
    const std::uint32_t bits = std::uint32_t{h} << 16;
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
}

// f16: 1 sign, 5 exponent (bias 15), 10 mantissa bits; f32 has 8 (bias 127)
// and 23. Every f16 is an f32 exactly, subnormals included (their smallest,
// 2^-24, is a normal f32), so no rounding happens here.
inline float f16_to_f32(std::uint16_t h) {
    const std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16;
    const std::uint32_t exponent = (h >> 10) & 0x1Fu;
    std::uint32_t mantissa = h & 0x3FFu;
    std::uint32_t bits;
    if (exponent == 0x1F) {
        // inf (mantissa 0) or NaN: keep the payload, so the quiet bit stays.
        bits = sign | 0x7F800000u | (mantissa << 13);
    } else if (exponent != 0) {
        bits = sign | ((exponent + (127 - 15)) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        bits = sign;  // +-0
    } else {
        // Subnormal: mantissa * 2^-24. Shift the leading 1 up to the implicit
        // bit position (bit 10), lowering the exponent once per shift.
        std::uint32_t e = 127 - 15 + 1;
        while ((mantissa & 0x400u) == 0) {
            mantissa <<= 1;
            --e;
        }
        bits = sign | (e << 23) | ((mantissa & 0x3FFu) << 13);
    }
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
}

}  // namespace swiglu::detail
