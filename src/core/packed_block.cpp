#include "core/packed_block.hpp"

#include <cmath>
#include <set>
#include <vector>

namespace swiglu::detail {

namespace {

using dt = dnnl::memory::data_type;

// The 64-row kernel with the packed weight layout oneDNN picks, except for
// f32 weights that stream from DRAM: oneDNN 2.6's brgemm picks 64-column
// blocks (BA16a64b) but streams 32-column blocks (BA16a32b) faster at a
// decode's few rows; weights that stay in cache keep 64, where 32 computes
// slower. (docs/measurements.md, "f32 weight blocks".)
MatmulKernel make_top_kernel(std::int64_t k, std::int64_t n, const MatmulTypes& types,
                             bool streamed) {
    MatmulKernel chosen = make_matmul(kMaxRowTile, k, n, nullptr, types);
    using tag = dnnl::memory::format_tag;
    if (!streamed || types.weights != dt::f32 ||
        chosen.weights != dnnl::memory::desc({k, n}, dt::f32, tag::BA16a64b))
        return chosen;
    const dnnl::memory::desc narrow({k, n}, dt::f32, tag::BA16a32b);
    try {
        MatmulKernel alternative = make_matmul(kMaxRowTile, k, n, &narrow, types);
        if (alternative.implementation == chosen.implementation) return alternative;
    } catch (const Error&) {
        // Not offered for this shape: keep oneDNN's choice.
    }
    return chosen;
}

// How a tile is packed: oneDNN's layout of the 64-row kernel, or the mode's own.
dnnl::memory::desc tile_desc(const Phase& phase, std::int64_t tile, const Precision& mode) {
    if (!mode.own_kernels()) return phase.kernel(tile, kRowBuckets - 1).weights;
    const auto bytes =
        static_cast<dnnl::memory::dim>(mode.own_tile_bytes(phase.k, phase.outputs(tile)));
    return dnnl::memory::desc({bytes}, dt::u8, dnnl::memory::format_tag::a);
}

// A packed tile's size, rounded up to a cache line.
std::size_t tile_bytes(const Phase& phase, std::int64_t tile, const Precision& mode) {
    return (tile_desc(phase, tile, mode).get_size() + 63) / 64 * 64;
}

}  // namespace

// Creates the kernels of `phase` for every row height and tile width; the
// 64-row kernel picks the packed weight layout, the others must share it.
void make_phase_kernels(Phase& phase, int min_bucket, const MatmulTypes& types, bool streamed) {
    for (auto& row : phase.kernels)
        for (MatmulKernel& k : row) k = MatmulKernel{};
    const std::int64_t widths[2] = {phase.columns.width, phase.columns.tail};
    for (int tail = 0; tail < 2; ++tail) {
        if (tail == 1 && phase.columns.tail == phase.columns.width) break;
        const std::int64_t n = widths[tail] * phase.outputs_per_column;
        MatmulKernel& top = phase.kernels[tail][kRowBuckets - 1];
        top = make_top_kernel(phase.k, n, types, streamed);
        for (int b = min_bucket; b + 1 < kRowBuckets; ++b)
            phase.kernels[tail][b] =
                make_matmul(std::int64_t{1} << b, phase.k, n, &top.weights, types);
    }
}

PackedBlock::PackedBlock(const WeightSource& gate_w, const WeightSource& up_w,
                         const WeightSource& down_w, Dtype dtype)
    : d(gate_w.in_features()), f(gate_w.out_features()) {
    auto candidates = precision_candidates(dtype, d, f);
    for (std::size_t i = 0; i < candidates.size(); ++i) {
        const bool last = i + 1 == candidates.size();
        Precision& mode = *candidates[i];
        plan_tiles(mode);
        if (mode.own_kernels()) {  // oneDNN serves its prefill path at most
            if (!mode.accepts({}) && !last) continue;
            precision = std::move(candidates[i]);
            make_prefill_kernels();
            break;
        }
        try {
            make_kernels(mode);
        } catch (const Error& e) {
            // A mode oneDNN cannot serve at all here: the next one may.
            if (e.status() != Status::unsupported || last) throw;
            continue;
        }
        if (mode.accepts(all_kernels()) || last) {
            precision = std::move(candidates[i]);
            break;
        }
    }
    // The >= 4-row tiles of streamed weights suit brgemm only; without it
    // (no AVX-512: gemm:jit) oneDNN's 1-row path streams faster, so those
    // kernels are made again for 1-row tiles. (docs/measurements.md)
    if (min_bucket > 0 && !is_brgemm_kernel(gate_up.top())) {
        min_bucket = 0;
        make_kernels(*precision);
    }
    precision->plan(gate_up.columns.count);
    pack(gate_w, up_w, down_w);
    describe();
}

void PackedBlock::plan_tiles(const Precision& mode) {
    // Tile sizes: gate|up tiles read 2 weights of d per column, down tiles f.
    auto bytes = [](double weights, double per_weight) {
        return static_cast<std::int64_t>(std::ceil(weights * per_weight));
    };
    const double tile = mode.tile_bytes_per_weight();
    const std::int64_t weight_bytes = bytes(3.0 * double(d) * double(f), mode.bytes_per_weight());
    const bool cached = !weights_stream_from_dram(weight_bytes);
    gate_up.k = d;
    gate_up.outputs_per_column = 2;
    gate_up.columns = plan_phase_columns(f, bytes(2.0 * double(d), tile), cached);
    down.k = f;
    down.columns = plan_phase_columns(d, bytes(double(f), tile), cached);
    min_bucket = min_row_bucket(weight_bytes, mode.streams_with_one_row());
}

void PackedBlock::make_kernels(const Precision& mode) {
    const bool streamed = weights_stream_from_dram(
        static_cast<std::int64_t>(3.0 * double(d) * double(f) * mode.bytes_per_weight()));
    for (Phase* p : {&gate_up, &down})
        make_phase_kernels(*p, min_bucket, mode.matmul_types(), streamed);
}

void PackedBlock::make_prefill_kernels() {
    Precision& mode = *precision;
    for (const MatmulTypes& types : mode.prefill_candidates()) {
        mode.set_prefill(&types);
        plan_tiles(mode);
        bool accepted = true;
        try {
            for (Phase* p : {&gate_up, &down})
                for (int tail = 0; tail < 2; ++tail) {
                    if (tail == 1 && p->columns.tail == p->columns.width) break;
                    const std::int64_t n =
                        (tail ? p->columns.tail : p->columns.width) * p->outputs_per_column;
                    const dnnl::memory::desc plain({p->k, n}, types.weights,
                                                   dnnl::memory::format_tag::ab);
                    for (int i = 0; i < kMaxPrefillTiles; ++i) {
                        MatmulKernel& k = p->prefill[tail][i];
                        k = make_matmul((i + 1) * kMaxRowTile, p->k, n, &plain, types);
                        accepted = accepted && mode.accepts_prefill(k);
                    }
                }
        } catch (const Error& e) {
            if (e.status() != Status::unsupported) throw;
            accepted = false;
        }
        if (accepted) return;
        for (Phase* p : {&gate_up, &down})
            for (auto& row : p->prefill)
                for (MatmulKernel& k : row) k = MatmulKernel{};
    }
    mode.set_prefill(nullptr);
    plan_tiles(mode);
}

std::vector<const MatmulKernel*> PackedBlock::all_kernels() const {
    std::vector<const MatmulKernel*> all;  // none for a mode with kernels of its own
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
// W_down for down; the mode packs it from there. Only one plain tile exists
// at a time, and a file mapping's pages are given back tile by tile.
void PackedBlock::pack(const WeightSource& gate_w, const WeightSource& up_w,
                       const WeightSource& down_w) {
    std::size_t total = 0;
    for (const Phase* p : {&gate_up, &down})
        for (std::int64_t j = 0; j < p->columns.count; ++j) total += tile_bytes(*p, j, *precision);
    arena = WeightArena(total);
    std::size_t offset = 0;
    std::vector<float> plain;
    // Tile j of phase p: its columns are [c0, c0 + w) of each source in turn.
    auto pack_tile = [&](PhaseId id, Phase& p, std::int64_t j, const WeightSource* const* sources,
                         int count) {
        const std::int64_t c0 = p.columns.begin(j), w = p.columns.size(j), n = p.outputs(j);
        p.tiles.emplace_back(tile_desc(p, j, *precision), cpu_engine(), arena.data() + offset);
        p.tile_data.push_back(arena.data() + offset);
        offset += tile_bytes(p, j, *precision);
        if (!precision->pack_stored_tile(sources, count, c0, w, p.k, p.tiles.back())) {
            plain.assign(static_cast<std::size_t>(p.k * n), 0.0f);
            for (int s = 0; s < count; ++s)
                read_columns(*sources[s], c0, w, plain.data(), n, s * w);
            precision->pack_tile(id, plain.data(), p.k, n, p.outputs_per_column * c0,
                                 p.tiles.back());
        }
        for (int s = 0; s < count; ++s) release_columns(*sources[s], c0, w);
    };
    const WeightSource* gate_and_up[2] = {&gate_w, &up_w};
    const WeightSource* down_only[1] = {&down_w};
    for (std::int64_t j = 0; j < gate_up.columns.count; ++j)
        pack_tile(PhaseId::gate_up, gate_up, j, gate_and_up, 2);
    for (std::int64_t j = 0; j < down.columns.count; ++j)
        pack_tile(PhaseId::down, down, j, down_only, 1);
}

void PackedBlock::describe() {
    std::set<std::string> impls;
    for (const MatmulKernel* k : all_kernels()) {
        impls.insert(k->implementation);
        if (k->scratchpad_bytes > scratchpad_bytes) scratchpad_bytes = k->scratchpad_bytes;
    }
    for (const std::string& name : impls)
        implementation += (implementation.empty() ? "" : ",") + name;
    implementation += precision->note();
}

}  // namespace swiglu::detail
