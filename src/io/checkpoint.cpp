// Chooses a block among those a safetensors checkpoint holds (discovery and
// its naming schemes: io/block_discovery.hpp), checks its shapes agree, and
// converts it to f32.
//
// Selection (WeightSelector): a prefix names the block exactly, in any
// scheme (the families are tried at it in priority order, so any prefix
// works, not only one that ends in '.'); otherwise the blocks found are kept
// whose layer and expert match those asked for, and exactly one must remain.
// When none or several do, the error says what the file holds and which
// selector tells them apart.
#include <swiglu/checkpoint.hpp>

#include <cctype>
#include <set>

#include "common/messages.hpp"
#include "io/block_discovery.hpp"
#include "io/checkpoint_files.hpp"
#include "io/checkpoint_loader.hpp"
#include "io/safetensors.hpp"

namespace swiglu {

namespace {

using detail::CheckpointFiles;
using detail::Family;
using detail::FoundBlock;
using detail::PartialBlock;
using detail::quote_name;
using detail::shape_text;
using detail::StoredTensor;
using detail::TensorDtype;
using detail::TensorInfo;

constexpr std::size_t kListed = 20;  // layers and blocks listed in a message

[[noreturn]] void fail(const CheckpointFiles& file, const std::string& what,
                       Status status = Status::invalid_argument) {
    throw Error(status, file.label() + ": " + what);
}

// "a, b, c" of the first kListed, then ", ...".
std::string listed(const std::vector<std::string>& items) {
    std::string s;
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i == kListed) return s + ", ...";
        s += (i ? ", " : "") + items[i];
    }
    return s;
}

std::string missing_text(const std::string& label, const std::vector<std::string>& missing) {
    std::vector<std::string> quoted;
    for (const std::string& name : missing) quoted.push_back(quote_name(name));
    return label + " (missing " + listed(quoted) + ")";
}

// Each family tried at `prefix`, with the names it lacks.
std::string tried_at(const CheckpointFiles& file, const std::string& prefix) {
    std::string tried;
    for (const Family& f : detail::block_families()) {
        std::vector<std::string> missing;
        for (const char* role : {f.gate, f.up, f.down})
            if (role && !file.has(prefix + role)) missing.push_back(prefix + role);
        const std::string label =
            std::string(f.label) == f.scheme ? detail::scheme_at(f, prefix) : f.label;
        if (!missing.empty()) tried += (tried.empty() ? "" : "; ") + missing_text(label, missing);
    }
    return tried;
}

// The blocks that are not quite there (at least `min_present` of three
// names), for "no block found".
std::string partial_text(const std::vector<const PartialBlock*>& partial, int min_present) {
    std::vector<std::string> items;
    for (const PartialBlock* p : partial)
        if (p->present >= min_present) items.push_back(missing_text(p->label, p->missing));
    std::string s;
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i == kListed) return s + "; ...";
        s += (i ? "; " : "") + items[i];
    }
    return s;
}

std::vector<std::string> numbers(const std::set<std::int64_t>& values) {
    std::vector<std::string> out;
    for (std::int64_t v : values) out.push_back(std::to_string(v));
    return out;
}

std::set<std::int64_t> layers_of(const std::vector<const FoundBlock*>& blocks) {
    std::set<std::int64_t> layers;
    for (const FoundBlock* b : blocks)
        if (b->layer >= 0) layers.insert(b->layer);
    return layers;
}

// "model.layers.{N}.mlp" when every block shares it, else "".
std::string common_pattern(const std::vector<const FoundBlock*>& blocks) {
    std::string pattern;
    for (const FoundBlock* b : blocks) {
        // Stacked experts share their prefix: name their tensors instead.
        const std::string p = detail::prefix_pattern(b->prefix) + (b->stacked ? "ffn_*_exps." : "");
        if (!pattern.empty() && p != pattern) return "";
        pattern = p;
    }
    if (!pattern.empty() && pattern.back() == '.') pattern.pop_back();
    return quote_name(pattern);
}

std::string selection_text(const WeightSelector& s) {
    std::string text;
    if (s.layer >= 0) text += " in layer " + std::to_string(s.layer);
    if (s.expert >= 0) text += " with expert " + std::to_string(s.expert);
    return text;
}

// Several blocks remain: what tells them apart.
[[noreturn]] void ambiguous(const CheckpointFiles& file,
                            const std::vector<const FoundBlock*>& blocks,
                            const WeightSelector& selector) {
    const std::set<std::int64_t> layers = layers_of(blocks);
    bool all_layered = true;
    std::set<std::int64_t> experts;
    std::vector<std::string> others;  // blocks that are no expert
    for (const FoundBlock* b : blocks) {
        all_layered = all_layered && b->layer >= 0;
        if (b->expert >= 0)
            experts.insert(b->expert);
        else
            others.push_back(quote_name(b->prefix));
    }
    // "layer N holds ...": the layer asked for, or the only one there is.
    const std::string where = selector.layer >= 0 ? "layer " + std::to_string(selector.layer)
                              : all_layered && layers.size() == 1
                                  ? "layer " + std::to_string(*layers.begin())
                                  : "";
    if (all_layered && layers.size() > 1) {
        const std::string pattern = common_pattern(blocks);
        fail(file,
             "holds " + std::to_string(layers.size()) + " layers (" +
                 (pattern.empty() ? "" : pattern + " with ") + "N = " + listed(numbers(layers)) +
                 "): choose one with the layer selector (--layer N)" +
                 (experts.empty() ? "" : ", and an expert with the expert selector (--expert E)"));
    }
    if (experts.size() > 1) {
        std::vector<const FoundBlock*> expert_blocks;
        for (const FoundBlock* b : blocks)
            if (b->expert >= 0) expert_blocks.push_back(b);
        const std::string pattern = common_pattern(expert_blocks);
        fail(file, (where.empty() ? "holds " : where + " holds ") + std::to_string(experts.size()) +
                       " experts (" + (pattern.empty() ? "" : pattern + " with ") +
                       "E = " + listed(numbers(experts)) + ")" +
                       (others.empty() ? "" : " and other blocks (" + listed(others) + ")") +
                       ": choose one with the expert selector (--expert E)" +
                       (others.empty() ? "" : " or the block selector (--block PREFIX)"));
    }
    std::vector<std::string> items;
    for (const FoundBlock* b : blocks) items.push_back(quote_name(b->prefix) + " " + b->scheme);
    fail(file, (where.empty() ? "holds " : where + " holds ") + std::to_string(blocks.size()) +
                   " SwiGLU blocks (" + listed(items) +
                   "): choose one with the block selector (--block PREFIX)");
}

// The block `prefix` names, in the first family complete there.
FoundBlock block_at(const CheckpointFiles& file, const std::string& prefix,
                    const std::vector<FoundBlock>& found) {
    for (const Family& f : detail::block_families()) {
        bool complete = true;
        for (const char* role : {f.gate, f.up, f.down})
            complete = complete && (!role || file.has(prefix + role));
        if (!complete) continue;
        if (f.stacked)
            fail(file, quote_name(prefix) + " holds a layer's experts stacked (" + f.gate +
                           " ...): choose one with the layer and expert selectors (--layer N "
                           "--expert E)");
        FoundBlock b;
        b.prefix = prefix;
        b.family = &f;
        b.scheme = detail::scheme_at(f, prefix);
        b.layer = detail::layer_of(prefix);
        b.expert = detail::expert_of(prefix);
        b.gate = prefix + f.gate;
        if (f.up) b.up = prefix + f.up;
        b.down = prefix + f.down;
        return b;
    }
    std::vector<std::string> present;
    for (const FoundBlock& b : found) present.push_back(quote_name(b.prefix));
    fail(file, "no SwiGLU block found: tried " + tried_at(file, prefix) + ". " +
                   (present.empty() ? "" : "Blocks present: " + listed(present) + ". ") +
                   file.tensors_text());
}

// The most experts a stacked tensor may hold, and blocks a file may expand
// into: more is a hostile shape, not a model (the largest have a few
// hundred experts per layer, a few tens of thousands in all).
constexpr std::int64_t kMaxStackedExperts = 1 << 16;
constexpr std::size_t kMaxBlocks = std::size_t{1} << 18;

// A stacked block (GGUF's ffn_*_exps) as one block per expert, once its
// gate's shape (E, out, in) says how many; left whole when it has no such
// shape or a type whose size was not checked against the file
// (check_block then says what is wrong).
std::vector<FoundBlock> expand_stacked(const CheckpointFiles& file,
                                       std::vector<FoundBlock> blocks) {
    std::vector<FoundBlock> out;
    for (FoundBlock& b : blocks) {
        const std::optional<StoredTensor> gate = b.stacked ? file.find(b.gate) : std::nullopt;
        if (!gate || !detail::readable(gate->type) || gate->shape.size() != 3 ||
            gate->shape[0] < 1 || gate->shape[0] > kMaxStackedExperts) {
            out.push_back(std::move(b));
            continue;
        }
        if (out.size() + std::size_t(gate->shape[0]) > kMaxBlocks)
            fail(file, "holds more than " + std::to_string(kMaxBlocks) +
                           " blocks once its stacked experts are counted");
        for (std::int64_t e = 0; e < gate->shape[0]; ++e) {
            out.push_back(b);
            out.back().expert = e;
        }
    }
    return out;
}

FoundBlock select_block(const CheckpointFiles& file, const WeightSelector& selector) {
    if (!selector.prefix.empty() && selector.layer >= 0)
        fail(file, "give a layer (" + std::to_string(selector.layer) + ") or a prefix (" +
                       quote_name(selector.prefix) + "), not both");
    if (!selector.prefix.empty() && selector.expert >= 0)
        fail(file, "give an expert (" + std::to_string(selector.expert) + ") or a prefix (" +
                       quote_name(selector.prefix) + "), not both");
    detail::Discovery found = detail::discover_blocks(file.names());
    if (!selector.prefix.empty()) return block_at(file, selector.prefix, found.blocks);
    found.blocks = expand_stacked(file, std::move(found.blocks));

    std::vector<const FoundBlock*> chosen;
    for (const FoundBlock& b : found.blocks)
        if ((selector.layer < 0 || b.layer == selector.layer) &&
            (selector.expert < 0 || b.expert == selector.expert))
            chosen.push_back(&b);
    if (chosen.size() > 1) ambiguous(file, chosen, selector);
    if (chosen.size() == 1) return *chosen.front();

    std::vector<const PartialBlock*> partial;
    for (const PartialBlock& p : found.partial)
        if ((selector.layer < 0 || p.layer == selector.layer) &&
            (selector.expert < 0 || p.expert == selector.expert))
            partial.push_back(&p);
    std::vector<const FoundBlock*> all;
    for (const FoundBlock& b : found.blocks) all.push_back(&b);
    const std::set<std::int64_t> layers = layers_of(all);
    std::string what = "no SwiGLU block found" + selection_text(selector);
    // Names that nearly make a block (two of three; one under a selector)
    // say most; with none, every family tried at the top level.
    const std::string nearly = partial_text(partial, selector.layer >= 0 ? 1 : 2);
    if (!nearly.empty())
        what += ": tried " + nearly;
    else if (selector.layer < 0 && selector.expert < 0)
        what += ": tried " + tried_at(file, "");
    what += ". ";
    if (!layers.empty()) what += "Layers present: " + listed(numbers(layers)) + ". ";
    if (selector.expert >= 0 && !found.blocks.empty()) {
        std::vector<std::string> present;
        for (const FoundBlock* b : all) present.push_back(quote_name(b->prefix));
        what += "Blocks present: " + listed(present) + ". ";
    }
    fail(file, what + file.tensors_text());
}

std::string role_text(const StoredTensor& t, const char* role) {
    return std::string(role) + " " + quote_name(t.name);
}

void check_weight(const CheckpointFiles& file, const StoredTensor& t, const char* role) {
    if (t.shape.size() != 2)
        fail(file, role_text(t, role) + " must be 2-D, found shape " + shape_text(t.shape) + " (" +
                       std::to_string(t.shape.size()) + "-D)");
    if (!detail::readable(t.type))
        fail(file,
             role_text(t, role) + " has unsupported dtype " + t.type_name +
                 "; weights must be F32, BF16 or F16 (in GGUF also Q8_0 or Q4_0)",
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
        s.bytes = std::uint64_t(t.shape[1]) * detail::stored_row_bytes(t.type, t.shape[2]);
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

// For quantised weights (GGUF Q8_0, Q4_0): the --dtype that runs the
// file's blocks as stored (packed unchanged, core/precision_grouped.cpp).
std::string import_note(const Checked& c) {
    std::int64_t blocks = 0;
    std::string format;
    for (const auto* t : {&c.gate, &c.up, &c.down}) {
        if (!*t) continue;
        const detail::StoredType type = (*t)->type;
        if (type != detail::StoredType::q8_0 && type != detail::StoredType::q4_0) continue;
        if (!format.empty() && format != (*t)->type_name) return "";  // mixed formats
        format = (*t)->type_name;
        blocks += (*t)->shape[0] * ((*t)->shape[1] / 32);
    }
    if (format.empty() || (c.up && c.gate->type != c.up->type) || c.gate->type != c.down->type)
        return "";
    std::string dtype = format;
    for (char& ch : dtype) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return "--dtype " + dtype + " runs the file's " + std::to_string(blocks) + " " + format +
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
