// The checkpoint loader: the block a selector picks (io/block_selection.cpp),
// its tensors checked (2-D, a dtype the loader reads, shapes that agree,
// stacked experts sliced), described (list_blocks, describe_block) and
// converted to f32 (load_weights).
#include <swiglu/checkpoint.hpp>

#include <algorithm>
#include <array>

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

const StoredTensor& up_of(const Checked& c) { return c.up ? *c.up : *c.gate; }

// What `--dtype stored` (Options::keep_stored) does with the block, where it
// keeps a weight in a block format (packed from the file's blocks
// unchanged, core/engine_grouped.cpp's pack_stored) or where the stored
// formats cannot share a block; "" otherwise (F32, BF16: nothing to say).
std::string import_note(const Checked& c) {
    const detail::FormatTraits &gate = *c.gate->format, &up = *up_of(c).format,
                               &down = *c.down->format;
    Options stored;
    stored.keep_stored = true;  // the fallback: f32, the CLI's for a format that does not run
    const Options o = detail::resolve_stored(gate, up, down, stored);
    const Dtype down_dtype = o.down_dtype.value_or(o.dtype);
    const bool gate_up_kept = gate.runs && gate.block > 1 && o.dtype == gate.dtype;
    const bool down_kept = down.runs && down.block > 1 && down_dtype == down.dtype;
    const std::string others = "; other --dtype values start from their exact values";
    if (!gate_up_kept && !down_kept) {
        if (&gate != &up && (gate.block > 1 || up.block > 1))
            return std::string("--dtype stored runs all three as --dtype (f32 by default): gate ") +
                   gate.stored_name + " and up " + up.stored_name +
                   " differ, and gate and up are packed in one format";
        return "";
    }
    std::int64_t blocks = 0;
    auto count = [&](const StoredTensor& t) {
        blocks += t.shape[0] * (t.shape[1] / t.format->block);
    };
    if (gate_up_kept) {
        count(*c.gate);
        if (c.up) count(*c.up);
    }
    if (down_kept) count(*c.down);
    if (gate_up_kept && down_kept && &gate == &down)
        return std::string("--dtype stored (or ") + gate.name + ") runs the file's " +
               std::to_string(blocks) + " " + gate.stored_name + " blocks as stored" + others;
    return "--dtype stored runs the file's " + std::to_string(blocks) +
           " blocks as stored: gate/up " +
           (gate_up_kept ? gate.stored_name : detail::traits(o.dtype).name) + ", down " +
           (down_kept ? down.stored_name : detail::traits(down_dtype).name) + others;
}

// Each weight's stored format, for BlockInfo.
void describe_formats(const Checked& c, BlockInfo& info) {
    info.gate_format = c.gate->type_name;
    info.up_format = up_of(c).type_name;
    info.down_format = c.down->type_name;
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

Options resolve_stored(const FormatTraits& gate, const FormatTraits& up, const FormatTraits& down,
                       const Options& options) {
    if (!options.keep_stored) return options;
    Options out = options;
    out.keep_stored = false;
    // A bad dtype is the Ffn's to refuse, with its message.
    const auto known = [](Dtype d) {
        for (Dtype t : kDtypes)
            if (t == d) return true;
        return false;
    };
    if (!known(options.dtype) || (options.down_dtype && !known(*options.down_dtype))) return out;
    // gate and up are packed side by side, in one format: differing, they
    // (and so down, to stay a pair a block runs) take options' formats.
    if (&gate != &up) return out;
    const Dtype gate_up = gate.runs ? gate.dtype : options.dtype;
    const Dtype down_dtype = down.runs ? down.dtype : options.down_dtype.value_or(options.dtype);
    // The pairs a block runs: one format, or two block formats (Ffn's check).
    if (gate_up != down_dtype && (traits(gate_up).block == 1 || traits(down_dtype).block == 1))
        return out;
    out.dtype = gate_up;
    out.down_dtype = down_dtype == gate_up ? std::nullopt : std::optional<Dtype>(down_dtype);
    return out;
}

ResolvedBlock resolve_block(const CheckpointFiles& file, const WeightSelector& selector) {
    return resolve_block(file, select_block(file, selector));
}

ResolvedBlock resolve_block(const CheckpointFiles& file, const FoundBlock& b) {
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
    return describe_block(file, select_block(file, selector));
}

BlockInfo describe_block(const CheckpointFiles& file, const FoundBlock& b) {
    const Checked c = check_block(file, b);
    BlockInfo info;
    describe(b, c, info);
    describe_formats(c, info);
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
            describe_formats(c, info);
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

namespace {

// The stored formats BlockInfo names, checked.
std::array<const detail::FormatTraits*, 3> stored_formats(const BlockInfo& block, const char* who) {
    std::array<const detail::FormatTraits*, 3> formats = {};
    const std::string* names[3] = {&block.gate_format, &block.up_format, &block.down_format};
    for (int i = 0; i < 3; ++i) {
        formats[i] = detail::format_by_name(*names[i]);
        if (!formats[i] || !formats[i]->decode)
            throw Error(Status::invalid_argument,
                        std::string(who) + ": " +
                            std::string(i == 0   ? "gate"
                                        : i == 1 ? "up"
                                                 : "down") +
                            "_format " + detail::quote_name(*names[i]) + " is no stored format (" +
                            detail::format_names(detail::FormatSet::stored) + ")");
    }
    return formats;
}

}  // namespace

Options stored_options(const BlockInfo& block, const Options& options) {
    const auto f = stored_formats(block, "stored_options");
    return detail::resolve_stored(*f[0], *f[1], *f[2], options);
}

std::int64_t block_values(const BlockInfo& block, const Options& options) {
    const auto f = stored_formats(block, "block_values");
    const Options run = detail::resolve_stored(*f[0], *f[1], *f[2], options);
    std::int64_t most = 1;
    for (const detail::FormatTraits* t : f) most = std::max(most, t->block);
    for (Dtype d : {run.dtype, run.down_dtype.value_or(run.dtype)})
        for (Dtype known : kDtypes)  // an unknown dtype is the Ffn's to refuse
            if (d == known) most = std::max(most, detail::traits(d).block);
    return most;
}

}  // namespace swiglu
