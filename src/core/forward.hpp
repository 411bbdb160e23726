// The two phases of the block over a (rows, d) input.
#pragma once

#include <cstdint>

#include "core/packed_block.hpp"
#include "core/thread_pool.hpp"
#include "core/workspace.hpp"

namespace swiglu::detail {

// Where a traced call copies the intermediates: (rows, f) each; a null
// sink is off; a null act is not copied (the backward keeps gate and up).
struct TraceSink {
    float* gate = nullptr;
    float* up = nullptr;
    float* act = nullptr;
};

// y = block(x) for `rows` >= 1 tokens, in chunks of kChunkRows rows:
//   phase 1, tasks = row tile x f-column tile: x @ [Wg|Wu] tile into the
//            thread's tile, then SiLU(gate)*up into act while it is in cache;
//   phase 2, tasks = row tile x d-column tile: act @ Wd tile into y.
// With one row tile, a task may take a run of adjacent column tiles in one
// kernel call (Phase::joinable, tiling.hpp's joined_tiles).
// `pool` null runs everything on this thread (workspace with >= 1 worker);
// otherwise the workspace has pool->threads() workers. y may equal x.
void run_block(const PackedBlock& block, Workspace& workspace, ThreadPool* pool, const float* x,
               float* y, std::int64_t rows, const TraceSink* trace = nullptr);

}  // namespace swiglu::detail
