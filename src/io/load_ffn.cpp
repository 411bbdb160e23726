// load_ffn, the one function of io/ that builds an Ffn. It lives apart from
// the loader (io/checkpoint.cpp) so that the readers link without core/, as
// the fuzzers (fuzz/CMakeLists.txt) build them.
//
// The block packs straight from the mapped file: each tile is decoded from
// the stored type (F32, F16, BF16, Q8_0, Q4_0) into one plain f32 tile and
// packed, and the file's pages are given back tile by tile, so loading
// costs the packed weights plus a tile, not an f32 copy of the weights.
#include <swiglu/checkpoint.hpp>

#include "core/ffn_access.hpp"
#include "io/checkpoint_files.hpp"
#include "io/checkpoint_loader.hpp"

namespace swiglu {

namespace {

detail::SourceType source_type(detail::StoredType type) {
    switch (type) {
        case detail::StoredType::f16: return detail::SourceType::f16;
        case detail::StoredType::bf16: return detail::SourceType::bf16;
        case detail::StoredType::q8_0: return detail::SourceType::q8_0;
        case detail::StoredType::q4_0: return detail::SourceType::q4_0;
        default: return detail::SourceType::f32;  // resolve_block let only readable types through
    }
}

// `rows` rows of a stored 2-D tensor, from row `first` on.
detail::WeightSource source(const detail::StoredTensor& t, Layout layout, std::int64_t first,
                            std::int64_t rows, bool mapped) {
    detail::WeightSource s;
    s.type = source_type(t.type);
    s.cols = t.shape[1];
    s.rows = rows;
    s.layout = layout;
    s.data = t.data + std::size_t(first) * detail::source_row_bytes(s.type, s.cols);
    s.drop_pages = mapped;
    return s;
}

}  // namespace

Ffn load_ffn(const std::string& path, const WeightSelector& selector, const Options& options) {
    const detail::CheckpointFiles files = detail::CheckpointFiles::open(path);
    const detail::ResolvedBlock r = detail::resolve_block(files, selector);
    const LoadedWeights& w = r.described;
    const bool mapped = true;  // open() maps every file it reads
    const std::int64_t gate_rows = r.gate.shape[0] / (r.merged ? 2 : 1);
    const detail::WeightSource gate = source(r.gate, w.gate_layout, 0, gate_rows, mapped);
    const detail::WeightSource up = r.merged
                                        ? source(r.gate, w.up_layout, gate_rows, gate_rows, mapped)
                                        : source(r.up, w.up_layout, 0, r.up.shape[0], mapped);
    const detail::WeightSource down = source(r.down, w.down_layout, 0, r.down.shape[0], mapped);
    return detail::FfnAccess::make(gate, up, down, options);
}

}  // namespace swiglu
