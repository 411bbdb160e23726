// Everything one forward() call writes besides y: the act buffer between the
// two phases, a padded row tile, and per-thread state. Sized by the shape and
// the chunk height, never by the token count, and allocated once per lease
// slot (see ffn.cpp), so the hot path allocates nothing.
#pragma once

#include <vector>

#include "aligned_buffer.hpp"
#include "matmul.hpp"
#include "packed_block.hpp"
#include "tiling.hpp"

namespace swiglu::detail {

struct WorkerState {
    explicit WorkerState(const PackedBlock& block);

    dnnl::stream stream;
    MatmulBinding bindings[2][2][kRowBuckets];  // [0 gate_up, 1 down][tail][bucket]
    AlignedBuffer<float> tile;                  // one matmul result tile
    AlignedBuffer<unsigned char> scratchpad;    // oneDNN's, for any kernel
};

struct Workspace {
    Workspace(const PackedBlock& block, int threads);

    AlignedBuffer<float> act;    // kChunkRows x f: SiLU(gate) * up
    AlignedBuffer<float> x_pad;  // kMaxRowTile x d: a short last row tile, padded
    std::vector<WorkerState> workers;
};

}  // namespace swiglu::detail
