// Everything one forward() call writes besides y: the act buffer between the
// two phases, the chunk's input in the matmul's precision, and per-thread
// state. Sized by the shape and the chunk height, never by the token count,
// and allocated once per lease slot (see ffn.cpp), so the hot path allocates
// nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "common/aligned_buffer.hpp"
#include "onednn/matmul.hpp"
#include "core/packed_block.hpp"
#include "core/tiling.hpp"

namespace swiglu::detail {

struct WorkerState {
    explicit WorkerState(const PackedBlock& block);

    dnnl::stream stream;
    MatmulBinding bindings[2][2][kRowBuckets];  // [0 gate_up, 1 down][tail][bucket]
    AlignedBuffer<float> tile;                  // one matmul result tile (f32 or s32)
    AlignedBuffer<unsigned char> scratchpad;    // oneDNN's, for any kernel
};

struct Workspace {
    Workspace(const PackedBlock& block, int threads);

    // SiLU(gate) * up, kChunkRows x f: f32 (f32, int8 before quantising,
    // emulated bf16) ...
    AlignedBuffer<float> act;
    // ... and as the down matmul reads it: bf16 or s8 (empty for f32).
    AlignedBuffer<unsigned char> act_lp;
    // The chunk's x as the gate|up matmul reads it: f32 only for a padded
    // last tile (kMaxRowTile rows), bf16 / s8 / bf16-rounded f32 for all
    // kChunkRows rows otherwise. Zeroed once: padding rows are computed and
    // thrown away and must not be uninitialised memory.
    AlignedBuffer<unsigned char> x_lp;
    // int8: per-row scales of x and act.
    AlignedBuffer<float> x_scale, act_scale;
    std::vector<WorkerState> workers;
};

}  // namespace swiglu::detail
