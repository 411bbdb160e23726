// bf16 and IEEE f16 to f32, exactly: every 16-bit value (subnormals, +-0,
// +-inf, NaN with its payload) maps to the f32 of the same value; and f32 to
// f16, rounded to nearest even as F16C's vcvtps2ph (and ggml's FP32_TO_FP16)
// does. Scalar on purpose: these run at load time and must be obviously right.
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

// f32 -> f16, round to nearest even: |v| >= 65520 (half an f16 ulp past the
// largest, 65504) becomes +-inf, tiny values become f16 subnormals or +-0,
// NaN stays a quiet NaN with the top of its payload.
inline std::uint16_t f32_to_f16(float v) {
    std::uint32_t x;
    std::memcpy(&x, &v, 4);
    const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
    const std::uint32_t a = x & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
    if (a >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // 65520: to inf
    if (a >= 0x38800000u) {
        // Normal f16 (>= 2^-14): rebias the exponent by 127 - 15, then drop
        // 13 mantissa bits rounding to even; a carry moves into the exponent.
        std::uint32_t m = a - (112u << 23);
        m += 0xFFFu + ((m >> 13) & 1u);
        return static_cast<std::uint16_t>(sign | (m >> 13));
    }
    // Subnormal f16: the value in units of 2^-24, rounded to even. Below
    // 2^-25 (exponent field < 102) that is 0; at the top it may round up
    // to 0x400, the smallest normal, which is the right encoding too.
    const std::uint32_t e = a >> 23;
    if (e < 102) return sign;
    const std::uint32_t mantissa = (a & 0x7FFFFFu) | 0x800000u;
    const std::uint32_t shift = 126 - e;  // 14 .. 24
    std::uint32_t q = mantissa >> shift;
    const std::uint32_t rest = mantissa & ((1u << shift) - 1);
    const std::uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (q & 1u))) ++q;
    return static_cast<std::uint16_t>(sign | q);
}

}  // namespace swiglu::detail
