// One matmul of a block (the forward's gate|up and down, the backward's dact
// and dx) cut into column tiles, and the oneDNN kernels an engine made for
// it (core/engine.hpp): data that the engines fill and read.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tiling.hpp"
#include "onednn/matmul.hpp"

namespace swiglu::detail {

// The two matmuls of the forward; indexes per-phase tables (kernels, bindings).
enum class PhaseId : int { gate_up = 0, down = 1 };
inline constexpr int kPhases = 2;

// Each tile packed on its own, so that a task touches one contiguous slice
// of weights.
struct Phase {
    PhaseId id = PhaseId::gate_up;         // which of the forward's (the backward's: dact, dx)
    std::int64_t k = 0;                    // reduction length
    ColumnTiling columns;                  // tiles of the phase's output columns
    std::int64_t outputs_per_column = 1;   // 2 for gate|up: a tile holds both
    std::vector<dnnl::memory> tiles;       // packed weights, one per column tile (in an arena)
    std::vector<const void*> tile_data;    // their bytes, for our own kernels
    bool joinable = false;                 // TileEngine::joins_tiles, once packed
    MatmulKernel kernels[2][kRowBuckets];  // [last tile is narrower][row bucket]; oneDNN engines
    // The prefill engine's kernels: [tail][i] runs (i + 1) full 64-row tiles
    // at once on plain unpacked weights, so that oneDNN packs them for its
    // kernel once per task, not once per row tile.
    MatmulKernel prefill[2][kMaxPrefillTiles];

    const MatmulKernel& kernel(std::int64_t tile, int bucket) const {
        return kernels[columns.is_tail(tile) ? 1 : 0][bucket];
    }
    // Output columns of a tile: both halves for gate|up.
    std::int64_t outputs(std::int64_t tile) const {
        return columns.size(tile) * outputs_per_column;
    }
    // Output columns of `count` adjacent tiles from `tile` (TileJob::tiles).
    std::int64_t outputs(std::int64_t tile, std::int64_t count) const {
        const std::int64_t last = tile + count - 1;
        return (columns.begin(last) + columns.size(last) - columns.begin(tile)) *
               outputs_per_column;
    }
    // The kernel that picked the packed layout: 64 rows, full-width tile.
    const MatmulKernel& top() const { return kernels[0][kRowBuckets - 1]; }
    // Drops every kernel (a candidate mode that was refused).
    void clear_kernels() {
        for (auto& row : kernels)
            for (MatmulKernel& k : row) k = MatmulKernel{};
        for (auto& row : prefill)
            for (MatmulKernel& k : row) k = MatmulKernel{};
    }
};

}  // namespace swiglu::detail
