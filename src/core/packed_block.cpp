#include "core/packed_block.hpp"

#include <set>
#include <vector>

#include "kernels/convert.hpp"

namespace swiglu::detail {

namespace {

using dt = dnnl::memory::data_type;

// Columns [col0, col0 + width) of W as x @ W sees it: a (in x width) view of
// the caller's buffer, whatever its layout.
struct Slice {
    const float* data;
    dnnl::memory::desc md;
};

Slice slice(const WeightView& w, std::int64_t col0, std::int64_t width) {
    const std::int64_t in = w.in_features();
    const std::int64_t out = w.out_features();
    if (w.layout == Layout::out_in)  // (out, in): column c of x @ W is row c
        return {w.data + col0 * in, dnnl::memory::desc({in, width}, dt::f32, {1, in})};
    return {w.data + col0, dnnl::memory::desc({in, width}, dt::f32, {out, 1})};
}

MatmulTypes types_of(Dtype dtype) {
    switch (dtype) {
        case Dtype::bf16: return {dt::bf16, dt::bf16, dt::f32};
        case Dtype::int8: return {dt::s8, dt::s8, dt::s32};
        case Dtype::f32: break;
    }
    return {};
}

// The 64-row kernel with the packed weight layout oneDNN picks, except one
// case: for f32 weights that stream from DRAM. oneDNN 2.6's brgemm picks
// 64-column blocks (BA16a64b), but it streams 32-column blocks (BA16a32b)
// faster at the few rows of a decode. Measured here (AMD EPYC, AVX-512), one
// plain matmul on one thread, 4 rows: K 4096 x N 22016 25.7-27.1 GB/s (mean)
// vs 22.9-23.7, K 11008 x N 8192 24.7-25.2 vs 23.4-23.6; the block, 1 thread:
// llama7b at 1 token 24.3-27.6 vs 20.4-22.8 GB/s (p50), at 16 tokens 43.2 vs
// 46.4-47.3 ms, at 64 and 512 tokens the same. Blocks that stay in cache
// keep 64: they are compute-bound, where 32 is ~4 % slower (cyber, 64 and
// 512 tokens). (bf16's 32-column blocks gained nothing on the mean; int8
// streams at ~98 % of the probe already.)
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

// Creates the kernels of `phase` for every row height and tile width; the
// 64-row kernel picks the packed weight layout, the others must share it.
void make_kernels(Phase& phase, int min_bucket, const MatmulTypes& types, bool streamed) {
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

bool is_reference(const Phase& phase) {
    for (const auto& row : phase.kernels)
        for (const MatmulKernel& k : row)
            if (k && k.implementation.find("ref") != std::string::npos) return true;
    return false;
}

// A packed tile's size, rounded up to a cache line.
std::size_t tile_bytes(const Phase& phase, std::int64_t tile) {
    return (phase.kernel(tile, kRowBuckets - 1).weights.get_size() + 63) / 64 * 64;
}

}  // namespace

void PackedBlock::pack_tile(Phase& phase, std::int64_t j, std::vector<float>& plain,
                            const dnnl::memory& to) {
    const std::int64_t k = phase.k;
    const std::int64_t n = phase.columns.size(j) * phase.outputs_per_column;
    const dnnl::memory::desc plain_md({k, n}, dt::f32, {n, 1});
    switch (storage) {
        case Dtype::f32:
        case Dtype::bf16:  // oneDNN's reorder rounds f32 to bf16, nearest even
            reorder(plain.data(), plain_md, to);
            return;
        case Dtype::int8: {
            // One symmetric scale per output channel (column).
            std::vector<std::int8_t> q(static_cast<std::size_t>(k * n));
            float* scales = phase.scales.data() + phase.outputs_per_column * phase.columns.begin(j);
            for (std::int64_t c = 0; c < n; ++c)
                scales[c] = quantize_column(plain.data() + c, static_cast<std::size_t>(k), n,
                                            q.data() + c, n);
            reorder(q.data(), dnnl::memory::desc({k, n}, dt::s8, {n, 1}), to);
            return;
        }
    }
}

PackedBlock::PackedBlock(const WeightView& gate_w, const WeightView& up_w,
                         const WeightView& down_w, Dtype dtype_)
    : d(gate_w.in_features()), f(gate_w.out_features()), dtype(dtype_), storage(dtype_) {
    // Tile sizes: gate|up tiles read 2 weights of d per column, down tiles f.
    const std::int64_t bytes_per_weight = dtype == Dtype::f32 ? 4 : dtype == Dtype::bf16 ? 2 : 1;
    gate_up.k = d;
    gate_up.outputs_per_column = 2;
    gate_up.columns = plan_columns(f, 2 * d * bytes_per_weight);
    down.k = f;
    down.columns = plan_columns(d, f * bytes_per_weight);

    min_bucket = min_row_bucket(3 * d * f * bytes_per_weight, dtype == Dtype::int8);
    const bool streamed = weights_stream_from_dram(3 * d * f * bytes_per_weight);
    auto make_all = [&] {
        for (Phase* p : {&gate_up, &down})
            for (auto& row : p->kernels)
                for (MatmulKernel& k : row) k = MatmulKernel{};
        make_kernels(gate_up, min_bucket, types_of(storage), streamed);
        make_kernels(down, min_bucket, types_of(storage), streamed);
    };
    if (dtype == Dtype::bf16) {
        // No bf16 matmul on this CPU (oneDNN 2.6 needs AVX-512; with only
        // reference code it would be slower than f32): keep bf16 numerics
        // (weights and matmul inputs rounded to bf16) on f32 kernels instead,
        // and say so in `implementation`.
        try {
            make_all();
            if (is_reference(gate_up) || is_reference(down)) storage = Dtype::f32;
        } catch (const Error& e) {
            if (e.status() != Status::unsupported) throw;
            storage = Dtype::f32;
        }
        if (storage == Dtype::f32) make_all();
    } else {
        make_all();
    }
    if (storage == Dtype::int8 && gate_up.kernels[0][kRowBuckets - 1].implementation.rfind("brg:", 0) != 0)
        // Without AVX512-VNNI oneDNN 2.6 picks gemm:jit for s8 x s8, whose
        // results did not match our int8 simulation in tests (not pursued
        // further): refuse rather than compute garbage.
        throw Error(Status::unsupported,
                    "Ffn: int8 needs a CPU with AVX512-VNNI (oneDNN chose " +
                        gate_up.kernels[0][kRowBuckets - 1].implementation +
                        "); use Dtype::bf16 or Dtype::f32 here");
    if (storage == Dtype::int8) {
        gate_up.scales.resize(static_cast<std::size_t>(2 * f));
        down.scales.resize(static_cast<std::size_t>(d));
    }

    // Every packed tile in one arena, in the order the tasks read them.
    std::size_t total = 0;
    for (const Phase* p : {&gate_up, &down})
        for (std::int64_t j = 0; j < p->columns.count; ++j) total += tile_bytes(*p, j);
    arena = WeightArena(total);
    std::size_t offset = 0;
    auto next_tile = [&](Phase& p, std::int64_t j) -> dnnl::memory& {
        p.tiles.emplace_back(p.kernel(j, kRowBuckets - 1).weights, cpu_engine(),
                             arena.data() + offset);
        offset += tile_bytes(p, j);
        return p.tiles.back();
    };
    // Each tile goes through a plain f32 (k x n) copy: [gate | up] side by
    // side for gate_up, the slice of W_down for down; then it is packed.
    const bool emulate_bf16 = dtype == Dtype::bf16 && storage == Dtype::f32;
    std::vector<float> plain;
    auto to_plain = [&](const Slice& s, std::int64_t k, std::int64_t n, std::int64_t col0) {
        const dnnl::memory::desc whole({k, n}, dt::f32, {n, 1});
        reorder(s.data, s.md,
                dnnl::memory(whole.submemory_desc(s.md.dims(), {0, col0}), cpu_engine(),
                             plain.data()));
    };
    auto finish = [&](Phase& p, std::int64_t j) {
        if (emulate_bf16)
            round_to_bf16(plain.data(), plain.data(), plain.size());
        pack_tile(p, j, plain, next_tile(p, j));
    };
    for (std::int64_t j = 0; j < gate_up.columns.count; ++j) {
        const std::int64_t c0 = gate_up.columns.begin(j), w = gate_up.columns.size(j);
        plain.assign(static_cast<std::size_t>(d * 2 * w), 0.0f);
        to_plain(slice(gate_w, c0, w), d, 2 * w, 0);
        to_plain(slice(up_w, c0, w), d, 2 * w, w);
        finish(gate_up, j);
    }
    for (std::int64_t j = 0; j < down.columns.count; ++j) {
        const std::int64_t w = down.columns.size(j);
        plain.assign(static_cast<std::size_t>(f * w), 0.0f);
        to_plain(slice(down_w, down.columns.begin(j), w), f, w, 0);
        finish(down, j);
    }

    std::set<std::string> impls;
    for (const Phase* p : {&gate_up, &down})
        for (const auto& row : p->kernels)
            for (const MatmulKernel& k : row)
                if (k) {
                    impls.insert(k.implementation);
                    if (k.scratchpad_bytes > scratchpad_bytes) scratchpad_bytes = k.scratchpad_bytes;
                }
    for (const std::string& name : impls)
        implementation += (implementation.empty() ? "" : ",") + name;
    if (emulate_bf16)
        implementation += " (f32 kernels on bf16-rounded weights: this CPU has no bf16 matmul; "
                          "expect f32 speed)";
}

}  // namespace swiglu::detail
