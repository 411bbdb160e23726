// The backward's construction (backward.hpp): the forward's weights read
// back, transposed and packed on the backward's engine, the gradients'
// geometry, and a call's scratch. The phases that run them: backward.cpp.
#include <algorithm>
#include <cstring>
#include <set>

#include "core/backward.hpp"

namespace swiglu::detail {

namespace {

// Weight tiles of phases A and B: a quarter of the forward's, so a tile
// stays in a core's L2 while every row tile of the chunk runs over it
// (cyber, 512 tokens: phase A 42 -> GFLOP/s).
constexpr std::int64_t kBackwardTileBytes = std::int64_t{1} << 18;

// A packed tile's size, rounded up to a cache line.
std::size_t tile_bytes(const Phase& phase, std::int64_t tile, const TileEngine& engine) {
    return (engine.tile_layout(phase, tile).get_size() + 63) / 64 * 64;
}

}  // namespace

BackwardBlock::BackwardBlock(const PackedBlock& block, const Layout (&layouts)[3])
    : d(block.d), f(block.f) {
    dact.k = d;
    dact.columns = plan_columns(f, 4 * d, kBackwardTileBytes);
    dx.id = PhaseId::down;
    dx.k = 2 * f;
    dx.columns = plan_columns(d, 8 * f, kBackwardTileBytes);
    // The forward's f32 runs on panels where it takes the panels engine.
    engine = block.engine->kind() == EngineKind::panels && block.dtype() == Dtype::f32
                 ? make_panels_engine(Dtype::f32)
                 : make_onednn_engine({}, {}, KernelDemand::any);
    engine->make_kernels(dact, dx, 0, false);
    plan_gradients(layouts);
    gradient_gemm = swiglu::detail::gradient_gemm();
    pack(block);
    std::set<std::string> impls;
    if (!engine->note().empty()) impls.insert(engine->note());
    impls.insert("f32 gradients:" + std::string(isa_name(gradient_gemm_isa())));
    auto note = [&](const MatmulKernel& k) {
        if (!k) return;
        impls.insert(k.implementation);
        scratchpad_bytes = std::max(scratchpad_bytes, k.scratchpad_bytes);
    };
    for (const Phase* p : {&dact, &dx})
        for (const auto& row : p->kernels)
            for (const MatmulKernel& k : row) note(k);
    for (const std::string& name : impls)
        implementation += (implementation.empty() ? "" : ",") + name;
}

// The forward's f32 weights, read back tile by tile into plain (in, out)
// matrices, then transposed into the backward's tiles: Wd^T's (d x w)
// slices of f, and [Wg^T ; Wu^T]'s (2f x w) slices of d.
void BackwardBlock::pack(const PackedBlock& block) {
    const TileEngine& forward = *block.engine;
    const auto df = static_cast<std::size_t>(d * f);
    std::vector<float> wg(df), wu(df), wd(df), plain;  // (d, f), (d, f), (f, d)
    const Phase& gu = block.gate_up;
    for (std::int64_t j = 0; j < gu.columns.count; ++j) {
        const std::int64_t c0 = gu.columns.begin(j), w = gu.columns.size(j);
        plain.resize(static_cast<std::size_t>(d * 2 * w));
        if (block.dtype() != Dtype::f32 ||
            !forward.unpack_f32(gu.tiles[static_cast<std::size_t>(j)], d, 2 * w, plain.data()))
            throw Error(Status::unsupported,
                        std::string("backward: needs an Ffn of dtype f32 (this one is ") +
                            dtype_name(block.dtype()) + ")");
        for (std::int64_t i = 0; i < d; ++i)
            for (std::int64_t c = 0; c < w; ++c) {
                wg[static_cast<std::size_t>(i * f + c0 + c)] = plain[i * 2 * w + c];
                wu[static_cast<std::size_t>(i * f + c0 + c)] = plain[i * 2 * w + w + c];
            }
    }
    const Phase& dn = block.down;
    for (std::int64_t j = 0; j < dn.columns.count; ++j) {
        const std::int64_t c0 = dn.columns.begin(j), w = dn.columns.size(j);
        plain.resize(static_cast<std::size_t>(f * w));
        forward.unpack_f32(dn.tiles[static_cast<std::size_t>(j)], f, w, plain.data());
        for (std::int64_t i = 0; i < f; ++i)
            std::memcpy(&wd[static_cast<std::size_t>(i * d + c0)], &plain[i * w],
                        static_cast<std::size_t>(w) * sizeof(float));
    }

    std::size_t total = 0;
    for (const Phase* p : {&dact, &dx})
        for (std::int64_t j = 0; j < p->columns.count; ++j) total += tile_bytes(*p, j, *engine);
    arena = WeightArena(total);
    std::size_t offset = 0;
    auto place = [&](Phase& p, std::int64_t j, const std::vector<float>& tile, std::int64_t n) {
        p.tiles.emplace_back(engine->tile_layout(p, j), cpu_engine(), arena.data() + offset);
        p.tile_data.push_back(arena.data() + offset);
        engine->pack(p, {tile.data(), dnnl::memory::data_type::f32}, p.k, n, p.tiles.back());
        offset += tile_bytes(p, j, *engine);
    };
    // Wd^T tile j: (d x w), element (i, c) = Wd(c0 + c, i).
    for (std::int64_t j = 0; j < dact.columns.count; ++j) {
        const std::int64_t c0 = dact.columns.begin(j), w = dact.columns.size(j);
        plain.assign(static_cast<std::size_t>(d * w), 0.0f);
        for (std::int64_t c = 0; c < w; ++c)
            for (std::int64_t i = 0; i < d; ++i) plain[i * w + c] = wd[(c0 + c) * d + i];
        place(dact, j, plain, w);
    }
    // [Wg^T ; Wu^T] tile j: (2f x w), element (k, c) = Wg(c0 + c, k) for
    // k < f, Wu(c0 + c, k - f) after.
    for (std::int64_t j = 0; j < dx.columns.count; ++j) {
        const std::int64_t c0 = dx.columns.begin(j), w = dx.columns.size(j);
        plain.assign(static_cast<std::size_t>(2 * f * w), 0.0f);
        for (std::int64_t c = 0; c < w; ++c)
            for (std::int64_t k = 0; k < f; ++k) {
                plain[k * w + c] = wg[(c0 + c) * f + k];
                plain[(f + k) * w + c] = wu[(c0 + c) * f + k];
            }
        place(dx, j, plain, w);
    }
}

// Each gradient as its weight is held: (out, in) takes dW = dOut^T @ In,
// (in, out) dW = In^T @ dOut, with In / dOut the span's rows of x and
// [dgate | dup] (gate, up) or of act and dy (down).
void BackwardBlock::plan_gradients(const Layout (&layouts)[3]) {
    for (int role = 0; role < 3; ++role) {
        GradientGeometry& g = gradients[role];
        const bool out_in = g.out_in = layouts[role] == Layout::out_in;
        if (role < 2) {  // gate, up: In = x (stride d), dOut = a half of [dgate | dup] (2f)
            g.rows = out_in ? f : d;
            g.cols = out_in ? d : f;
            g.s_stride = out_in ? 2 * f : d;
            g.b_stride = out_in ? d : 2 * f;
        } else {  // down: In = act (stride f), dOut = dy (d)
            g.rows = out_in ? d : f;
            g.cols = out_in ? f : d;
            g.s_stride = out_in ? d : f;
            g.b_stride = out_in ? f : d;
        }
        g.row_tiles = fixed_width_tiles(g.rows, kGradientTileRows);
    }
}

BackwardWorkspace::BackwardWorkspace(const BackwardBlock& block, int threads)
    : gate(static_cast<std::size_t>(kChunkRows * block.f)),
      up(static_cast<std::size_t>(kChunkRows * block.f)),
      y(static_cast<std::size_t>(kChunkRows * block.d)),
      dgate_up(static_cast<std::size_t>(kChunkRows * 2 * block.f)),
      act(static_cast<std::size_t>(kChunkRows * block.f)) {
    for (int role = 0; role < 3; ++role) {
        const GradientGeometry& g = block.gradients[role];
        strips[role] = AlignedBuffer<float>(
            static_cast<std::size_t>(kGradientSpanRows * strip_count(g.rows) * kGradientStrip));
        panels[role] = AlignedBuffer<float>(
            static_cast<std::size_t>(kGradientSpanRows * panel_count(g.cols) * kPanelColumns));
    }
    const auto tile_floats = static_cast<std::size_t>(
        kMaxRowTile * std::max(block.dact.columns.width, block.dx.columns.width));
    workers.reserve(static_cast<std::size_t>(threads));
    for (int w = 0; w < threads; ++w)
        workers.emplace_back(block.dact, block.dx, tile_floats, block.scratchpad_bytes, 0);
}

}  // namespace swiglu::detail
