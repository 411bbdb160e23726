// A precision mode: a format's numerics (core/numerics.hpp) and the engine
// that runs its tile matmuls (core/engine.hpp), paired once when the block
// is built. A new weight format is a row of the format table
// (formats/format_table.hpp); if its numerics family is new, one numerics
// in its own file (plus its tests), an engine if no existing one reads it,
// and that family's line in precision_candidates().
//
// The modes today (numerics file; engine):
//   f32            f32 weights and x (precision_f32.cpp); onednn
//   bf16           bf16 weights and inputs (precision_bf16.cpp); onednn's bf16 kernels
//   panels         f32 or bf16 weights (precision_panels.cpp); panels, where
//                  oneDNN has no brgemm (no AVX-512), has no bf16 kernel, or
//                  decodes slower; the CPU needs AVX2
//   bf16 emulated  bf16 numerics (rounded weights and inputs) (precision_bf16_emulated.cpp);
//                  onednn's f32 kernels, where oneDNN has no fast bf16 kernel
//                  nor the CPU AVX2
//   int8           s8 weights with per-channel scales, x and act quantised per token,
//                  act either in the gate|up task or in a step of its own
//                  (precision_int8.cpp); s8
//   q8_0, q4_0     GGUF's grouped formats, x and act quantised per block of 32
//                  (precision_grouped.cpp); grouped, or prefill (BuildPolicy)
//   q4_k .. q6_k   GGUF's K-quants, x and act quantised per block of 256
//                  (precision_grouped.cpp); grouped. Any two block formats
//                  may share a block (gate|up in one, down in the other).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <swiglu/swiglu.hpp>

#include "core/engine.hpp"
#include "core/numerics.hpp"

namespace swiglu::detail {

struct Precision {
    std::unique_ptr<Numerics> numerics;
    std::unique_ptr<TileEngine> engine;
};

// The modes that can serve `dtype` under `policy`, best first: the block
// takes the first whose engine accepts its kernels (f32: panels, then
// oneDNN's; bf16: native, then panels, then emulated; q8_0 / q4_0: the
// prefill engine, then the grouped one). The one place where a dtype picks
// its candidates.
// `down` is down's format: `dtype` but for a block of block formats whose
// down differs (ffn.cpp lets no other pair through).
std::vector<Precision> precision_candidates(Dtype dtype, Dtype down, std::int64_t d, std::int64_t f,
                                            const BuildPolicy& policy);

// One factory per mode file.
Precision make_f32_precision(std::int64_t d, std::int64_t f);
Precision make_bf16_precision(std::int64_t d, std::int64_t f, const BuildPolicy& policy);
// Null where the panel kernels are no vector code (below AVX2 oneDNN's f32
// kernels are faster) or the policy does not allow them.
Precision make_panels_precision(Dtype dtype, std::int64_t d, std::int64_t f,
                                const BuildPolicy& policy);
Precision make_bf16_emulated_precision(std::int64_t d, std::int64_t f);
Precision make_int8_precision(std::int64_t d, std::int64_t f, const BuildPolicy& policy);
// The grouped formats (blocks of 32) on the prefill engine as the policy
// asks (null where it asks for none), and every block format on the grouped
// engine alone, each phase in its own.
Precision make_grouped_prefill_precision(Dtype dtype, std::int64_t d, std::int64_t f,
                                         const BuildPolicy& policy);
Precision make_grouped_precision(Dtype gate_up, Dtype down, std::int64_t d, std::int64_t f);

}  // namespace swiglu::detail
