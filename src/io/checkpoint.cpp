// The checkpoint loader: the block a selector picks (io/block_selection.cpp),
// its tensors checked (2-D, a dtype the loader reads, shapes that agree,
// stacked experts sliced), described (list_blocks, describe_block) and
// converted to f32 (load_weights).
#include <swiglu/checkpoint.hpp>

#include "common/messages.hpp"
#include "io/block_discovery.hpp"
#include "io/block_selection.hpp"
#include "io/checkpoint_files.hpp"
#include "io/checkpoint_loader.hpp"
#include "io/safetensors.hpp"

namespace swiglu {

namespace {

using detail::CheckpointFiles;
using detail::fail;
using detail::FoundBlock;
using detail::quote_name;
using detail::shape_text;
using detail::StoredTensor;
using detail::TensorDtype;
using detail::TensorInfo;

std::string role_text(const StoredTensor& t, const char* role) {
    return std::string(role) + " " + quote_name(t.name);
}

void check_weight(const CheckpointFiles& file, const StoredTensor& t, const char* role) {
    if (t.shape.size() != 2)
        fail(file, role_text(t, role) + " must be 2-D, found shape " + shape_text(t.shape) + " (" +
                       std::to_string(t.shape.size()) + "-D)");
    if (!detail::readable(t))
        fail(file,
             role_text(t, role) + " has unsupported dtype " + t.type_name + "; weights must be " +
                 detail::format_names(detail::FormatSet::safetensors) + " (in GGUF also " +
                 detail::format_names(detail::FormatSet::gguf_only) + ")",
             Status::unsupported);
}

void expect_shape(const CheckpointFiles& file, const StoredTensor& t, const char* role,
                  std::int64_t rows, std::int64_t cols, const char* dims,
                  const std::string& because) {
    if (t.shape[0] != rows || t.shape[1] != cols)
        fail(file, "shapes disagree: expected " + role_text(t, role) + " to be " + dims + " = " +
                       shape_text({rows, cols}) + " (" + because + "), found " +
                       shape_text(t.shape));
}

// A block's tensors, checked: each 2-D in a dtype that converts, shapes
// that agree, d and f >= 1.
struct Checked {
    std::optional<StoredTensor> gate;
    std::optional<StoredTensor> up;  // empty: merged into gate
    std::optional<StoredTensor> down;
    std::int64_t d, f;
};

// Maps the shards that hold the block (only those, in a sharded checkpoint).
// Expert `e` of a stacked (E, out, in) tensor, as a 2-D one.
StoredTensor expert_slice(const CheckpointFiles& file, const StoredTensor& t, const char* role,
                          std::int64_t e) {
    if (t.shape.size() != 3)
        fail(file, role_text(t, role) + " must be 3-D (experts, out, in), found shape " +
                       shape_text(t.shape));
    if (e < 0 || e >= t.shape[0])
        fail(file, role_text(t, role) + " " + shape_text(t.shape) + " holds " +
                       std::to_string(t.shape[0]) + " experts; there is no expert " +
                       std::to_string(e));
    StoredTensor s = t;
    s.shape = {t.shape[1], t.shape[2]};
    s.elements = t.shape[1] * t.shape[2];  // <= the checked product: there are e + 1 >= 1 experts
    if (t.data) {
        s.bytes = std::uint64_t(t.shape[1]) * detail::stored_row_bytes(t, t.shape[2]);
        s.data = t.data + std::uint64_t(e) * s.bytes;
    }
    return s;
}

Checked check_block(const CheckpointFiles& file, const FoundBlock& b) {
    Checked c{file.find(b.gate), b.up.empty() ? std::nullopt : file.find(b.up), file.find(b.down),
              0, 0};
    if (b.stacked) {
        const std::int64_t experts = c.gate->shape.empty() ? 0 : c.gate->shape[0];
        for (auto [t, role] : {std::pair{&c.gate, "gate"}, {&c.up, "up"}, {&c.down, "down"}}) {
            if ((*t)->shape.size() == 3 && (*t)->shape[0] != experts)
                fail(file, role_text(**t, role) + " " + shape_text((*t)->shape) + " holds " +
                               std::to_string((*t)->shape[0]) + " experts, the gate " +
                               std::to_string(experts));
            *t = expert_slice(file, **t, role, b.expert);
        }
    }
    check_weight(file, *c.gate, c.up ? "gate" : "gate_up");
    if (c.up) check_weight(file, *c.up, "up");
    check_weight(file, *c.down, "down");

    // d and f come from the gate (or gate_up); up and down must agree.
    std::int64_t& d = c.d;
    std::int64_t& f = c.f;
    const std::string from =
        "from " + role_text(*c.gate, c.up ? "gate" : "gate_up") + " " + shape_text(c.gate->shape);
    if (!c.up) {
        if (c.gate->shape[0] % 2 != 0)
            fail(file, "gate_up " + quote_name(c.gate->name) + " " + shape_text(c.gate->shape) +
                           " must have an even number of rows (2f: gate rows, then up rows)");
        f = c.gate->shape[0] / 2;
        d = c.gate->shape[1];
        expect_shape(file, *c.down, "down", d, f, "[d, f]", from + " as [2f, d]");
    } else if (b.family->layout == Layout::out_in) {
        f = c.gate->shape[0];
        d = c.gate->shape[1];
        expect_shape(file, *c.up, "up", f, d, "[f, d]", from + " as [f, d]");
        expect_shape(file, *c.down, "down", d, f, "[d, f]", from + " as [f, d]");
    } else {
        d = c.gate->shape[0];
        f = c.gate->shape[1];
        expect_shape(file, *c.up, "up", d, f, "[d, f]", from + " as [d, f]");
        expect_shape(file, *c.down, "down", f, d, "[f, d]", from + " as [d, f]");
    }
    if (d < 1 || f < 1)
        fail(file, "empty block: d = " + std::to_string(d) + ", f = " + std::to_string(f) + " (" +
                       from + "); both must be >= 1");
    return c;
}

std::string dtype_summary(const Checked& c) {
    const std::string& g = c.gate->type_name;
    const std::string& u = (c.up ? *c.up : *c.gate).type_name;
    const std::string& d = c.down->type_name;
    if (g == u && g == d) return g;
    return "mixed (gate " + g + ", up " + u + ", down " + d + ")";
}

// For weights in a block format a block runs in (GGUF Q8_0, Q4_0): the
// --dtype that runs the file's blocks as stored (packed unchanged,
// core/engine_grouped.cpp's pack_stored).
std::string import_note(const Checked& c) {
    std::int64_t blocks = 0;
    std::string format;
    for (const auto* t : {&c.gate, &c.up, &c.down}) {
        if (!*t) continue;
        // A block format a block runs in: its blocks pack unchanged.
        const detail::FormatTraits* type = (*t)->format;
        if (!type || type->block == 1 || !type->runs) continue;
        if (!format.empty() && format != (*t)->type_name) return "";  // mixed formats
        format = (*t)->type_name;
        blocks += (*t)->shape[0] * ((*t)->shape[1] / type->block);
    }
    if (format.empty() || (c.up && c.gate->format != c.up->format) ||
        c.gate->format != c.down->format)
        return "";
    return std::string("--dtype ") + c.gate->format->name + " runs the file's " +
           std::to_string(blocks) + " " + format +
           " blocks as stored; other --dtype values start from their exact values";
}

// What LoadedWeights and BlockInfo share.
template <class Out>
void describe(const FoundBlock& b, const Checked& c, Out& out) {
    out.d = c.d;
    out.f = c.f;
    out.prefix = b.prefix;
    out.scheme = b.scheme;
    out.layer = b.layer;
    out.expert = b.expert;
    out.gate_name = b.gate;
    out.up_name = b.up.empty() ? b.gate : b.up;
    out.down_name = b.down;
    out.source_dtype = dtype_summary(c);
}

}  // namespace

namespace detail {

ResolvedBlock resolve_block(const CheckpointFiles& file, const WeightSelector& selector) {
    const FoundBlock b = select_block(file, selector);
    const Checked c = check_block(file, b);
    ResolvedBlock r;
    describe(b, c, r.described);
    r.described.gate_layout = r.described.up_layout = r.described.down_layout = b.family->layout;
    r.gate = *c.gate;
    r.merged = !c.up;
    if (c.up) r.up = *c.up;
    r.down = *c.down;
    return r;
}

BlockInfo describe_block(const CheckpointFiles& file, const WeightSelector& selector) {
    const FoundBlock b = select_block(file, selector);
    const Checked c = check_block(file, b);
    BlockInfo info;
    describe(b, c, info);
    info.import_note = import_note(c);
    return info;
}

LoadedWeights load_weights(const CheckpointFiles& file, const WeightSelector& selector) {
    const ResolvedBlock r = resolve_block(file, selector);
    LoadedWeights w = r.described;
    if (!r.merged) {
        w.gate = file.to_f32(r.gate);
        w.up = file.to_f32(r.up);
    } else {
        // Split [2f, d] row-major: the first f rows are gate, the rest up.
        const std::vector<float> both = file.to_f32(r.gate);
        const auto half = static_cast<std::ptrdiff_t>(w.f * w.d);
        w.gate.assign(both.begin(), both.begin() + half);
        w.up.assign(both.begin() + half, both.end());
    }
    w.down = file.to_f32(r.down);
    return w;
}

LoadedWeights load_weights(const SafetensorsFile& file, const WeightSelector& selector) {
    return load_weights(CheckpointFiles::single(file), selector);
}

std::vector<BlockInfo> list_blocks(const CheckpointFiles& file) {
    std::vector<BlockInfo> out;
    for (const FoundBlock& b : expand_stacked(file, discover_blocks(file.names()).blocks)) {
        BlockInfo info;
        info.prefix = b.prefix;
        info.scheme = b.scheme;
        info.layer = b.layer;
        info.expert = b.expert;
        try {
            const Checked c = check_block(file, b);
            describe(b, c, info);
            info.import_note = import_note(c);
        } catch (const Error& e) {
            // The message without the file's label, which the caller knows.
            const std::string m = e.what(), label = file.label() + ": ";
            info.problem = m.compare(0, label.size(), label) == 0 ? m.substr(label.size()) : m;
        }
        out.push_back(std::move(info));
    }
    return out;
}

std::vector<BlockInfo> list_blocks(const SafetensorsFile& file) {
    return list_blocks(CheckpointFiles::single(file));
}

}  // namespace detail

WeightView LoadedWeights::gate_view() const {
    return gate_layout == Layout::out_in ? WeightView::out_in(gate.data(), f, d)
                                         : WeightView::in_out(gate.data(), d, f);
}

WeightView LoadedWeights::up_view() const {
    return up_layout == Layout::out_in ? WeightView::out_in(up.data(), f, d)
                                       : WeightView::in_out(up.data(), d, f);
}

WeightView LoadedWeights::down_view() const {
    return down_layout == Layout::out_in ? WeightView::out_in(down.data(), d, f)
                                         : WeightView::in_out(down.data(), f, d);
}

LoadedWeights load_weights(const std::string& path, const WeightSelector& selector) {
    return detail::load_weights(CheckpointFiles::open(path), selector);
}

std::vector<BlockInfo> list_blocks(const std::string& path) {
    return detail::list_blocks(CheckpointFiles::open(path));
}

BlockInfo describe_block(const std::string& path, const WeightSelector& selector) {
    return detail::describe_block(CheckpointFiles::open(path), selector);
}

}  // namespace swiglu
