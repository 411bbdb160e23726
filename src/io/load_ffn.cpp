// load_ffn and load_ffn_slice, the functions of io/ that build an Ffn. They
// live apart from the loader (io/checkpoint.cpp) so that the readers link
// without core/, as the fuzzers (fuzz/CMakeLists.txt) build them.
//
// The block packs straight from the mapped file: each tile is decoded from
// the stored format (its decoder in formats/format_table.cpp) into one plain f32 tile and
// packed, and the file's pages are given back tile by tile, so loading
// costs the packed weights plus a tile, not an f32 copy of the weights. A
// slice reads its rows of a tensor, or a window of each row (with the
// kernel's read-around off): the pages of other slices are never read (but
// for those a boundary shares).
#include <swiglu/checkpoint.hpp>

#include "core/ffn_access.hpp"
#include "io/checkpoint_files.hpp"
#include "io/checkpoint_loader.hpp"
#include "io/ffn_builder.hpp"

namespace swiglu {

namespace {

// A stored 2-D tensor (its row `row0` on, when it holds two weights) read
// in hidden columns [begin, end): a range of its rows or a window of each
// row, whichever of its dimensions is f. `hidden_out`: f is the weight's
// output dimension (gate, up), else its input (down).
detail::WeightSource slice(const detail::StoredTensor& t, Layout layout, bool hidden_out,
                           std::int64_t row0, std::int64_t rows, HiddenColumns c) {
    detail::WeightSource s;
    s.type = t.format->format;  // resolve_block let only readable types through
    s.layout = layout;
    s.drop_pages = true;  // CheckpointFiles::open maps every file it reads
    s.row_values = t.shape[1];
    s.rows = rows;
    s.cols = t.shape[1];
    if ((layout == Layout::out_in) == hidden_out) {  // f is the stored rows
        row0 += c.begin;
        s.rows = c.end - c.begin;
    } else {
        s.first_col = c.begin;
        s.cols = c.end - c.begin;
    }
    s.data = t.data + std::size_t(row0) * detail::source_row_bytes(s.type, s.row_values);
    detail::read_window_pages_only(s);
    return s;
}

}  // namespace

namespace detail {

Ffn build_ffn(const ResolvedBlock& r, const Options& options, const HiddenColumns* columns) {
    const LoadedWeights& w = r.described;
    const HiddenColumns c = columns ? *columns : HiddenColumns{0, w.f};
    if (c.begin < 0 || c.begin >= c.end || c.end > w.f)
        throw Error(Status::invalid_argument,
                    "load_ffn_slice: hidden columns [" + std::to_string(c.begin) + ", " +
                        std::to_string(c.end) + ") must hold at least one of the block's f = " +
                        std::to_string(w.f) + " (0 <= begin < end <= f)");
    // A merged gate_up tensor holds gate's f rows, then up's.
    const std::int64_t gate_rows = r.gate.shape[0] / (r.merged ? 2 : 1);
    const detail::WeightSource gate = slice(r.gate, w.gate_layout, true, 0, gate_rows, c);
    const detail::WeightSource up = r.merged
                                        ? slice(r.gate, w.up_layout, true, gate_rows, gate_rows, c)
                                        : slice(r.up, w.up_layout, true, 0, r.up.shape[0], c);
    const detail::WeightSource down = slice(r.down, w.down_layout, false, 0, r.down.shape[0], c);
    return detail::FfnAccess::make(
        gate, up, down,
        detail::resolve_stored(*r.gate.format, *(r.merged ? r.gate : r.up).format, *r.down.format,
                               options));
}

}  // namespace detail

namespace {

Ffn load(const std::string& path, const WeightSelector& selector, const Options& options,
         const HiddenColumns* columns) {
    const detail::CheckpointFiles files = detail::CheckpointFiles::open(path);
    return detail::build_ffn(detail::resolve_block(files, selector), options, columns);
}

}  // namespace

Ffn load_ffn(const std::string& path, const WeightSelector& selector, const Options& options) {
    return load(path, selector, options, nullptr);
}

Ffn load_ffn_slice(const std::string& path, HiddenColumns columns, const WeightSelector& selector,
                   const Options& options) {
    return load(path, selector, options, &columns);
}

}  // namespace swiglu
