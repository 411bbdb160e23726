// Placing GGUF's K-quant super-blocks in our kernels' layout
// (kquant_layout.hpp), and reading it back. Load time (placing) and the
// scalar reference (reading).
#include "kernels/kquant_layout.hpp"

#include <cstring>

#include "common/half.hpp"

namespace swiglu::detail {

namespace {

template <class Block>
void ints_of(const unsigned char* stored, KSuperBlockInts& out) {
    Block b;  // copied out: the file's bytes need not be aligned
    std::memcpy(&b, stored, sizeof(b));
    super_block_ints(b, out);
}

// Where input e (0..255) of column j sits in a record: its nibble's byte and
// shift, and its chunk's (c) place p, t, low / high.
struct Place {
    int chunk, p, t, high;  // high: 0 for e = 8 p + t, 1 for 8 p + 4 + t
};
Place place_of(int e) {
    const int c = e / 32, r = e % 32;
    return {c, r / 8, r % 4, (r % 8) / 4};
}
std::size_t nibble_byte(const Place& w, int j) {
    return std::size_t(128 * w.chunk + 32 * w.p + 4 * j + w.t);
}
// The top bits' byte and bit in the plane (Q5_K: 1 bit, Q6_K: 2).
std::size_t high_byte(GroupedFormat format, const Place& w, int j) {
    const KRecordLayout r = k_record(format);
    if (format == GroupedFormat::q5_k) return r.high + std::size_t(32 * w.chunk + 4 * j + w.t);
    return r.high + std::size_t(64 * w.chunk + 32 * (w.p / 2) + 4 * j + w.t);
}
int high_shift(GroupedFormat format, const Place& w) {
    if (format == GroupedFormat::q5_k) return 2 * w.p + w.high;
    return 4 * (w.p % 2) + 2 * w.high;
}

std::uint16_t f16_at(const std::uint8_t* record, std::size_t offset, int j) {
    std::uint16_t h;
    std::memcpy(&h, record + offset + 2 * std::size_t(j), sizeof(h));
    return h;
}

}  // namespace

void k_super_block(GroupedFormat format, const unsigned char* stored,
                   KSuperBlockInts& out) noexcept {
    switch (format) {
        case GroupedFormat::q5_k: ints_of<BlockQ5K>(stored, out); break;
        case GroupedFormat::q6_k: ints_of<BlockQ6K>(stored, out); break;
        default: ints_of<BlockQ4K>(stored, out); break;
    }
}

void place_k_super_block(GroupedFormat format, const KSuperBlockInts& s, std::int64_t k,
                         std::int64_t column, std::size_t b, std::uint8_t* tile) noexcept {
    const KRecordLayout r = k_record(format);
    const auto blocks = static_cast<std::size_t>(format_blocks(format, k));
    std::uint8_t* record =
        tile + (static_cast<std::size_t>(column / kGroupColumns) * blocks + b) * r.bytes;
    const int j = static_cast<int>(column % kGroupColumns);
    for (int e = 0; e < 256; ++e) {
        const Place w = place_of(e);
        const int q = s.q[e];
        record[nibble_byte(w, j)] |= static_cast<std::uint8_t>((q & 15) << (4 * w.high));
        if (r.high)
            record[high_byte(format, w, j)] |=
                static_cast<std::uint8_t>((q >> 4) << high_shift(format, w));
    }
    for (int i = 0; i < r.sub_blocks; ++i) {
        record[r.scales + 8 * std::size_t(i) + std::size_t(j)] =
            static_cast<std::uint8_t>(s.scale[i]);
        if (r.mins) record[r.mins + 8 * std::size_t(i) + std::size_t(j)] = s.min[i];
    }
    std::memcpy(record + r.d + 2 * std::size_t(j), &s.d, sizeof(s.d));
    if (r.dmin) std::memcpy(record + r.dmin + 2 * std::size_t(j), &s.dmin, sizeof(s.dmin));
}

int k_quant(GroupedFormat format, const std::uint8_t* record, int j, int e) noexcept {
    const Place w = place_of(e);
    int q = (record[nibble_byte(w, j)] >> (4 * w.high)) & 15;
    if (format == GroupedFormat::q5_k)
        q |= ((record[high_byte(format, w, j)] >> high_shift(format, w)) & 1) << 4;
    else if (format == GroupedFormat::q6_k)
        q |= ((record[high_byte(format, w, j)] >> high_shift(format, w)) & 3) << 4;
    return q;
}

int k_scale(GroupedFormat format, const std::uint8_t* record, int j, int i) noexcept {
    const std::uint8_t byte = record[k_record(format).scales + 8 * std::size_t(i) + std::size_t(j)];
    return format == GroupedFormat::q6_k ? static_cast<std::int8_t>(byte) : byte;
}

int k_min(GroupedFormat format, const std::uint8_t* record, int j, int i) noexcept {
    const KRecordLayout r = k_record(format);
    return r.mins ? record[r.mins + 8 * std::size_t(i) + std::size_t(j)] : 0;
}

float k_d(GroupedFormat format, const std::uint8_t* record, int j) noexcept {
    return f16_to_f32(f16_at(record, k_record(format).d, j));
}

float k_dmin(GroupedFormat format, const std::uint8_t* record, int j) noexcept {
    const KRecordLayout r = k_record(format);
    return r.dmin ? f16_to_f32(f16_at(record, r.dmin, j)) : 0.0f;
}

}  // namespace swiglu::detail
