// Which block of a checkpoint a WeightSelector picks (io/checkpoint.cpp has
// the loader around it). A prefix names the block exactly, in any scheme
// (the families are tried at it in priority order, then at it + '.' when it
// lacks one and nothing completes, so a module's name works); otherwise the blocks found are kept
// whose layer and expert match those asked for, and exactly one must remain. When none or several
// do, the error says what the file holds and which selector tells them apart.
#include "io/block_selection.hpp"

#include <set>

#include "common/messages.hpp"

namespace swiglu::detail {

void fail(const CheckpointFiles& file, const std::string& what, Status status) {
    throw Error(status, file.label() + ": " + what);
}

namespace {

// How many items a message lists before "... and N more": numbers are
// short, names long (a message stays one readable line, a few hundred
// bytes, whatever the file holds).
constexpr std::size_t kListedNumbers = 20;
constexpr std::size_t kListedNames = 6;

// "a, b, c" of the first `cap`, then ", ... and N more".
std::string listed(const std::vector<std::string>& items, std::size_t cap = kListedNames,
                   const char* separator = ", ") {
    std::string s;
    for (std::size_t i = 0; i < items.size() && i < cap; ++i) s += (i ? separator : "") + items[i];
    if (items.size() > cap) s += separator + more_text(items.size() - cap);
    return s;
}

std::string missing_text(const std::string& label, const std::vector<std::string>& missing) {
    std::vector<std::string> quoted;
    for (const std::string& name : missing) quoted.push_back(quote_name(name));
    return label + " (missing " + listed(quoted) + ")";
}

// Each family tried at `prefix`: those with some of their names there, with
// the names they lack; those with none, by label in one clause (listing
// each one's three names would say nothing more, at great length).
std::string tried_at(const CheckpointFiles& file, const std::string& prefix) {
    std::string tried, absent;
    std::string example;  // the first family's gate name, to show what was looked for
    for (const Family& f : detail::block_families()) {
        std::vector<std::string> missing;
        for (const char* role : {f.gate, f.up, f.down})
            if (role && !file.has(prefix + role)) missing.push_back(prefix + role);
        const std::string label =
            std::string(f.label) == f.scheme ? detail::scheme_at(f, prefix) : f.label;
        if (missing.empty()) continue;
        if (example.empty()) example = quote_name(prefix + f.gate);
        if (missing.size() < (f.up ? 3u : 2u))
            tried += (tried.empty() ? "" : "; ") + missing_text(label, missing);
        else
            absent += (absent.empty() ? "" : ", ") + label;
    }
    if (!absent.empty())
        tried += (tried.empty() ? "" : "; ") + absent + " (no tensor of theirs at " +
                 (prefix.empty() ? "the top level" : quote_name(prefix)) + ", e.g. " + example +
                 ")";
    return tried;
}

// The blocks that are not quite there (at least `min_present` of three
// names), for "no block found".
std::string partial_text(const std::vector<const PartialBlock*>& partial, int min_present) {
    std::vector<std::string> items;
    for (const PartialBlock* p : partial)
        if (p->present >= min_present) items.push_back(missing_text(p->label, p->missing));
    return listed(items, kListedNames, "; ");
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

// Several blocks remain: what tells them apart. Selectors are named as the
// CLI spells them ("--layer N", "--expert E", "--block PREFIX", "--layer N
// --expert E"); the Python module rewords exactly these (module.cpp's
// in_python_words): a new spelling goes in both.
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
                 (pattern.empty() ? "" : pattern + " with ") +
                 "N = " + listed(numbers(layers), kListedNumbers) +
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
                       "E = " + listed(numbers(experts), kListedNumbers) + ")" +
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

// The first family complete at `prefix`, or null.
const Family* complete_at(const CheckpointFiles& file, const std::string& prefix) {
    for (const Family& f : detail::block_families()) {
        bool complete = true;
        for (const char* role : {f.gate, f.up, f.down})
            complete = complete && (!role || file.has(prefix + role));
        if (complete) return &f;
    }
    return nullptr;
}

// The block `prefix` names, in the first family complete there. A prefix
// may leave out its trailing '.' (the module's name, "model.layers.1.mlp",
// as PyTorch prints it): where nothing is complete at it as given, it is
// taken with the '.', and a failure is told at that.
FoundBlock block_at(const CheckpointFiles& file, const std::string& given,
                    const std::vector<FoundBlock>& found) {
    const Family* f = complete_at(file, given);
    const std::string prefix = f || given.back() == '.' ? given : given + '.';
    if (!f) f = complete_at(file, prefix);
    if (f && f->stacked)
        fail(file, quote_name(prefix) + " holds a layer's experts stacked (" + f->gate +
                       " ...): choose one with the layer and expert selectors (--layer N "
                       "--expert E)");
    if (f) {
        FoundBlock b;
        b.prefix = prefix;
        b.family = f;
        b.scheme = detail::scheme_at(*f, prefix);
        b.layer = detail::layer_of(prefix);
        b.expert = detail::expert_of(prefix);
        b.gate = prefix + f->gate;
        if (f->up) b.up = prefix + f->up;
        b.down = prefix + f->down;
        return b;
    }
    std::vector<std::string> present;
    for (const FoundBlock& b : found) present.push_back(b.prefix);
    present = closest_first(std::move(present), prefix);
    for (std::string& p : present) p = quote_name(p);
    // The blocks there are are the choices; without any, the tensors nearest
    // the prefix show how the file names things.
    fail(file, "no SwiGLU block at " + quote_name(prefix) + ": tried " + tried_at(file, prefix) +
                   ". " +
                   (present.empty() ? file.tensors_text(prefix)
                                    : "Blocks present: " + listed(present) + "."));
}

// The most experts a stacked tensor may hold, and blocks a file may expand
// into: more is a hostile shape, not a model (the largest have a few
// hundred experts per layer, a few tens of thousands in all).
constexpr std::int64_t kMaxStackedExperts = 1 << 16;
constexpr std::size_t kMaxBlocks = std::size_t{1} << 18;

}  // namespace

std::vector<FoundBlock> expand_stacked(const CheckpointFiles& file,
                                       std::vector<FoundBlock> blocks) {
    std::vector<FoundBlock> out;
    for (FoundBlock& b : blocks) {
        const std::optional<StoredTensor> gate = b.stacked ? file.find(b.gate) : std::nullopt;
        if (!gate || !readable(*gate) || gate->shape.size() != 3 || gate->shape[0] < 1 ||
            gate->shape[0] > kMaxStackedExperts) {
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
    // What is there instead: the layers or blocks to choose from, else the
    // tensors (the nearest few), which show the naming the file uses.
    what += ".";
    std::string choices;
    if (!layers.empty())
        choices += " Layers present: " + listed(numbers(layers), kListedNumbers) + ".";
    if (selector.expert >= 0 && !found.blocks.empty()) {
        std::vector<std::string> present;
        for (const FoundBlock* b : all) present.push_back(quote_name(b->prefix));
        choices += " Blocks present: " + listed(present) + ".";
    }
    fail(file, what + (choices.empty() ? " " + file.tensors_text() : choices));
}

}  // namespace swiglu::detail
