#include "core/packed_block.hpp"

#include <cmath>
#include <set>
#include <vector>

namespace swiglu::detail {

namespace {

// How a tile is packed, rounded up to a cache line.
std::size_t tile_bytes(const Phase& phase, std::int64_t tile, const TileEngine& engine) {
    return (engine.tile_layout(phase, tile).get_size() + 63) / 64 * 64;
}

}  // namespace

PackedBlock::PackedBlock(const WeightSource& gate_w, const WeightSource& up_w,
                         const WeightSource& down_w, Dtype dtype, Dtype down_dtype,
                         const BuildPolicy& policy)
    : d(gate_w.in_features()), f(gate_w.out_features()) {
    auto candidates = precision_candidates(dtype, down_dtype, d, f, policy);
    for (std::size_t i = 0; i < candidates.size(); ++i) {
        const bool last = i + 1 == candidates.size();
        TileEngine& engine = *candidates[i].engine;
        plan_tiles(engine);
        try {
            make_kernels(engine);
        } catch (const Error& e) {
            // A mode oneDNN cannot serve at all here: the next one may.
            if (e.status() != Status::unsupported || last) throw;
            continue;
        }
        if (engine.accepts(all_kernels()) || last) {
            numerics = std::move(candidates[i].numerics);
            this->engine = std::move(candidates[i].engine);
            break;
        }
    }
    // The >= 4-row tiles of streamed weights suit brgemm only; without it
    // (no AVX-512: gemm:jit) oneDNN's 1-row path streams faster, so those
    // kernels are made again for 1-row tiles. (docs/measurements.md)
    if (min_bucket > 0 && !is_brgemm_kernel(gate_up.top())) {
        min_bucket = 0;
        make_kernels(*engine);
    }
    numerics->plan(gate_up.columns.count);
    pack(gate_w, up_w, down_w);
    describe();
}

void PackedBlock::plan_tiles(const TileEngine& engine) {
    // Tile sizes: gate|up tiles read 2 weights of d per column, down tiles f.
    auto bytes = [](double weights, double per_weight) {
        return static_cast<std::int64_t>(std::ceil(weights * per_weight));
    };
    const EngineGeometry& g = engine.geometry();
    const std::int64_t weight_bytes = bytes(3.0 * double(d) * double(f), g.bytes_per_weight);
    cached = !weights_stream_from_dram(weight_bytes);
    gate_up.id = PhaseId::gate_up;
    gate_up.k = d;
    gate_up.outputs_per_column = 2;
    gate_up.columns = plan_phase_columns(f, bytes(2.0 * double(d), g.tile_bytes_per_weight), cached,
                                         g.gate_up_column_multiple);
    down.id = PhaseId::down;
    down.k = f;
    down.columns = plan_phase_columns(d, bytes(double(f), g.tile_bytes_per_weight), cached);
    min_bucket = min_row_bucket(weight_bytes, g.streams_with_one_row);
}

// A refused candidate's kernels go first: only the chosen engine's remain.
void PackedBlock::make_kernels(TileEngine& engine) {
    const bool streamed = weights_stream_from_dram(static_cast<std::int64_t>(
        3.0 * double(d) * double(f) * engine.geometry().bytes_per_weight));
    gate_up.clear_kernels();
    down.clear_kernels();
    engine.make_kernels(gate_up, down, min_bucket, streamed);
}

std::vector<const MatmulKernel*> PackedBlock::all_kernels() const {
    std::vector<const MatmulKernel*> all;  // none for our own kernels
    if (gate_up.top()) all.push_back(&gate_up.top());
    for (const Phase* p : {&gate_up, &down}) {
        for (const auto& row : p->kernels)
            for (const MatmulKernel& k : row)
                if (k && &k != &gate_up.top()) all.push_back(&k);
        for (const auto& row : p->prefill)
            for (const MatmulKernel& k : row)
                if (k) all.push_back(&k);
    }
    return all;
}

// Every packed tile in one arena, in the order the tasks read them. Each
// tile goes through a plain f32 (k x n) copy, decoded from the sources
// (weight_source.hpp): [gate | up] side by side for gate_up, the slice of
// W_down for down; the numerics converts it and the engine packs it from
// there. Only one plain tile exists at a time, and a file mapping's pages
// are given back tile by tile.
void PackedBlock::pack(const WeightSource& gate_w, const WeightSource& up_w,
                       const WeightSource& down_w) {
    std::size_t total = 0;
    for (const Phase* p : {&gate_up, &down})
        for (std::int64_t j = 0; j < p->columns.count; ++j) total += tile_bytes(*p, j, *engine);
    arena = WeightArena(total);
    std::size_t offset = 0;
    std::vector<float> plain;
    // Tile j of phase p: its columns are [c0, c0 + w) of each source in turn.
    auto pack_tile = [&](PhaseId id, Phase& p, std::int64_t j, const WeightSource* const* sources,
                         int count) {
        const std::int64_t c0 = p.columns.begin(j), w = p.columns.size(j), n = p.outputs(j);
        p.tiles.emplace_back(engine->tile_layout(p, j), cpu_engine(), arena.data() + offset);
        p.tile_data.push_back(arena.data() + offset);
        offset += tile_bytes(p, j, *engine);
        if (!engine->pack_stored(p, sources, count, c0, w, p.k, p.tiles.back())) {
            plain.assign(static_cast<std::size_t>(p.k * n), 0.0f);
            for (int s = 0; s < count; ++s)
                read_columns(*sources[s], c0, w, plain.data(), n, s * w);
            engine->pack(
                p, numerics->convert_weights(id, plain.data(), p.k, n, p.outputs_per_column * c0),
                p.k, n, p.tiles.back());
        }
        for (int s = 0; s < count; ++s) release_columns(*sources[s], c0, w);
    };
    const WeightSource* gate_and_up[2] = {&gate_w, &up_w};
    const WeightSource* down_only[1] = {&down_w};
    for (std::int64_t j = 0; j < gate_up.columns.count; ++j)
        pack_tile(PhaseId::gate_up, gate_up, j, gate_and_up, 2);
    for (std::int64_t j = 0; j < down.columns.count; ++j)
        pack_tile(PhaseId::down, down, j, down_only, 1);
    for (Phase* p : {&gate_up, &down}) p->joinable = engine->joins_tiles(*p);
}

void PackedBlock::describe() {
    std::set<std::string> impls;
    for (const MatmulKernel* k : all_kernels()) {
        impls.insert(k->implementation);
        if (k->scratchpad_bytes > scratchpad_bytes) scratchpad_bytes = k->scratchpad_bytes;
    }
    for (const std::string& name : impls)
        implementation += (implementation.empty() ? "" : ",") + name;
    implementation += engine->note();
}

}  // namespace swiglu::detail
