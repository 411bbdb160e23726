// Placing GGUF blocks in the grouped layout, and quantising activations for
// it. Load time (placing) or O(tokens x width) per call (activations).
#include "kernels/grouped_layout.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/convert.hpp"
#include "kernels/kquant_layout.hpp"

namespace swiglu::detail {

namespace {

// The record of (column's group, block b), and the column's lane j in it.
struct Slot {
    std::uint8_t* record;
    std::size_t j;
};
Slot slot(GroupedFormat format, std::int64_t k, std::int64_t column, std::size_t b,
          std::uint8_t* tile) {
    const std::size_t blocks = ggml_blocks(static_cast<std::size_t>(k));
    const auto group = static_cast<std::size_t>(column / kGroupColumns);
    return {tile + (group * blocks + b) * record_bytes(format),
            static_cast<std::size_t>(column % kGroupColumns)};
}

void place_scale(GroupedFormat format, const Slot& s, std::uint16_t d) {
    std::memcpy(s.record + record_quant_bytes(format) + 2 * s.j, &d, sizeof(d));
}

}  // namespace

void place_column(const BlockQ8_0* blocks, std::int64_t k, std::int64_t column,
                  std::uint8_t* tile) noexcept {
    const std::size_t nb = ggml_blocks(static_cast<std::size_t>(k));
    for (std::size_t b = 0; b < nb; ++b) {
        const Slot s = slot(GroupedFormat::q8_0, k, column, b, tile);
        for (std::size_t e = 0; e < kGgmlBlock; ++e)
            s.record[32 * (e / 4) + 4 * s.j + e % 4] = static_cast<std::uint8_t>(blocks[b].qs[e]);
        place_scale(GroupedFormat::q8_0, s, blocks[b].d);
    }
}

void place_column(const BlockQ4_0* blocks, std::int64_t k, std::int64_t column,
                  std::uint8_t* tile) noexcept {
    const std::size_t nb = ggml_blocks(static_cast<std::size_t>(k));
    for (std::size_t b = 0; b < nb; ++b) {
        const Slot s = slot(GroupedFormat::q4_0, k, column, b, tile);
        std::uint8_t q[kGgmlBlock];  // GGUF: byte j = element j (low), j + 16 (high)
        for (std::size_t j = 0; j < kGgmlBlock / 2; ++j) {
            q[j] = blocks[b].qs[j] & 0x0F;
            q[j + 16] = blocks[b].qs[j] >> 4;
        }
        for (std::size_t p = 0; p < 4; ++p)
            for (std::size_t t = 0; t < 4; ++t)
                s.record[32 * p + 4 * s.j + t] =
                    static_cast<std::uint8_t>(q[8 * p + t] | (q[8 * p + 4 + t] << 4));
        place_scale(GroupedFormat::q4_0, s, blocks[b].d);
    }
}

namespace {

std::size_t stored_block_bytes(GroupedFormat format) {
    switch (format) {
        case GroupedFormat::q8_0: return sizeof(BlockQ8_0);
        case GroupedFormat::q4_0: return sizeof(BlockQ4_0);
        case GroupedFormat::q4_k: return sizeof(BlockQ4K);
        case GroupedFormat::q5_k: return sizeof(BlockQ5K);
        case GroupedFormat::q6_k: return sizeof(BlockQ6K);
    }
    return 0;
}

// A column's super-blocks, stored as GGUF holds them, into the tile.
void place_k_column(GroupedFormat format, const unsigned char* blocks, std::int64_t k,
                    std::int64_t column, std::uint8_t* tile) {
    KSuperBlockInts ints;
    for (std::size_t b = 0; b < static_cast<std::size_t>(format_blocks(format, k)); ++b) {
        k_super_block(format, blocks + b * stored_block_bytes(format), ints);
        place_k_super_block(format, ints, k, column, b, tile);
    }
}

}  // namespace

void place_stored_column(GroupedFormat format, const unsigned char* blocks, std::int64_t k,
                         std::int64_t column, std::uint8_t* tile) {
    if (is_k_format(format)) return place_k_column(format, blocks, k, column, tile);
    // Copied out first: the file's blocks need not be aligned for the structs.
    const std::size_t nb = ggml_blocks(static_cast<std::size_t>(k));
    if (format == GroupedFormat::q8_0) {
        std::vector<BlockQ8_0> b(nb);
        std::memcpy(b.data(), blocks, nb * sizeof(BlockQ8_0));
        place_column(b.data(), k, column, tile);
    } else {
        std::vector<BlockQ4_0> b(nb);
        std::memcpy(b.data(), blocks, nb * sizeof(BlockQ4_0));
        place_column(b.data(), k, column, tile);
    }
}

void pack_grouped_tile(GroupedFormat format, const float* plain, std::int64_t k, std::int64_t n,
                       std::uint8_t* tile) {
    std::memset(tile, 0, grouped_tile_bytes(format, k, n));
    const std::size_t nb = ggml_blocks(static_cast<std::size_t>(k));
    std::vector<float> column(static_cast<std::size_t>(k));
    if (is_k_format(format)) {
        // Quantised into GGUF's super-blocks, then placed as stored ones are.
        const auto blocks = static_cast<std::size_t>(format_blocks(format, k));
        std::vector<unsigned char> stored(blocks * stored_block_bytes(format));
        for (std::int64_t c = 0; c < n; ++c) {
            for (std::int64_t i = 0; i < k; ++i)
                column[static_cast<std::size_t>(i)] = plain[i * n + c];
            switch (format) {
                case GroupedFormat::q5_k:
                    quantize_row_k(column.data(), column.size(),
                                   reinterpret_cast<BlockQ5K*>(stored.data()));
                    break;
                case GroupedFormat::q6_k:
                    quantize_row_k(column.data(), column.size(),
                                   reinterpret_cast<BlockQ6K*>(stored.data()));
                    break;
                default:
                    quantize_row_k(column.data(), column.size(),
                                   reinterpret_cast<BlockQ4K*>(stored.data()));
            }
            place_k_column(format, stored.data(), k, c, tile);
        }
        return;
    }
    std::vector<BlockQ8_0> q8(format == GroupedFormat::q8_0 ? nb : 0);
    std::vector<BlockQ4_0> q4(format == GroupedFormat::q4_0 ? nb : 0);
    for (std::int64_t c = 0; c < n; ++c) {
        for (std::int64_t i = 0; i < k; ++i) column[static_cast<std::size_t>(i)] = plain[i * n + c];
        if (format == GroupedFormat::q8_0) {
            quantize_row_q8_0(column.data(), column.size(), q8.data());
            place_column(q8.data(), k, c, tile);
        } else {
            quantize_row_q4_0(column.data(), column.size(), q4.data());
            place_column(q4.data(), k, c, tile);
        }
    }
}

void quantize_act_row_k(const float* x, std::size_t n, ActBlockK* out) noexcept {
    constexpr std::size_t kValues = kActBlockKValues;
    for (std::size_t b = 0; b * kValues < n; ++b) {
        const std::size_t count = std::min(kValues, n - b * kValues);
        ActBlockK& block = out[b];
        block.d = quantize_row(x + b * kValues, block.qs, count);
        std::memset(block.qs + count, 0, kValues - count);
        for (std::size_t g = 0; g < kValues / 16; ++g) {
            int sum = 0;
            for (std::size_t i = 0; i < 16; ++i) sum += block.qs[16 * g + i];
            block.bsums[g] = static_cast<std::int16_t>(sum);
        }
    }
}

void quantize_activations(GroupedFormat format, const float* x, std::size_t n, void* out) noexcept {
    if (is_k_format(format))
        quantize_act_row_k(x, n, static_cast<ActBlockK*>(out));
    else
        quantize_act_row(x, n, static_cast<ActBlock*>(out));
}

}  // namespace swiglu::detail
