// Finding and checking a checkpoint's Mixture-of-Experts layer
// (io/moe_resolution.hpp), and the public describe_moe_layer,
// is_moe_layer and moe_layers on it.
#include "io/moe_resolution.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "common/messages.hpp"
#include "io/block_selection.hpp"
#include "io/checkpoint_loader.hpp"
#include "io/moe_config.hpp"
#include "io/safetensors.hpp"  // quote_name

namespace swiglu::detail {

namespace {

// GGUF's shared experts: no block of discovery's (their names end in
// _shexp.weight), named here beside the stacked experts.
const Family kGgufShared{"gguf-shared-expert",  "gguf-shared-expert",    "ffn_gate_shexp.weight",
                         "ffn_up_shexp.weight", "ffn_down_shexp.weight", Layout::out_in};

bool routed_expert(const FoundBlock& b) { return b.layer >= 0 && (b.expert >= 0 || b.stacked); }

// Where an expert's block sits: P in "P experts.E." (Hugging Face), or the
// stacked tensors' own prefix (GGUF).
std::string container_of(const std::string& prefix, std::int64_t expert) {
    std::size_t start = 0;
    while (start < prefix.size()) {
        std::size_t dot = prefix.find('.', start);
        if (dot == std::string::npos) dot = prefix.size();
        if (prefix.compare(start, dot - start, "experts") == 0 &&
            expert_of(std::string_view(prefix).substr(start)) == expert)
            return prefix.substr(0, start);
        start = dot + 1;
    }
    return prefix;  // not reached: discovery's expert number follows an "experts."
}
std::string container_of(const FoundBlock& b) {
    return b.stacked ? b.prefix : container_of(b.prefix, b.expert);
}

std::string pattern_of(const FoundBlock& b, const std::string& container) {
    return b.stacked ? container + "ffn_*_exps." : container + "experts.{E}.";
}

std::string numbers_text(const std::vector<std::int64_t>& values) {
    std::string s;
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (i == 20) return s + ", ...";
        s += (i ? ", " : "") + std::to_string(values[i]);
    }
    return s.empty() ? "none" : s;
}

class Resolver {
public:
    Resolver(const CheckpointFiles& file, std::int64_t layer)
        : file_(file), layer_(layer), where_("layer " + std::to_string(layer)) {}

    ResolvedMoe run();

private:
    [[noreturn]] void fail(const std::string& what,
                           Status status = Status::invalid_argument) const {
        detail::fail(file_, where_ + ": " + what, status);
    }
    void find_experts();
    void read_config();
    void find_router();
    void find_bias();
    void find_shared();
    void describe_experts();
    // A 1-D tensor of n values (or (1, n)), readable, for the bias and the shared gate.
    StoredTensor vector_tensor(const std::string& name, const char* role, std::int64_t n,
                               const char* n_text) const;
    std::string experts_text() const {
        return std::to_string(r_.experts.size()) + " experts (" + quote_name(pattern_) +
               " with E = " + numbers_text(ids_) + ")";
    }

    const CheckpointFiles& file_;
    std::int64_t layer_;
    std::string where_;
    Discovery found_;
    std::vector<std::int64_t> ids_;
    std::string container_, pattern_;
    bool gguf_ = false;
    MoeConfig config_;
    std::int64_t d_ = 0;
    ResolvedMoe r_;
};

ResolvedMoe Resolver::run() {
    gguf_ = file_.gguf() != nullptr;
    found_ = discover_blocks(file_.names());
    find_experts();
    describe_experts();
    find_router();
    read_config();
    find_bias();
    find_shared();
    return std::move(r_);
}

void Resolver::find_experts() {
    std::vector<FoundBlock> blocks;
    for (const FoundBlock& b : found_.blocks)
        if (b.layer == layer_ && routed_expert(b)) blocks.push_back(b);
    if (blocks.empty()) {
        std::set<std::int64_t> layers, moe;
        for (const FoundBlock& b : found_.blocks) {
            if (b.layer >= 0) layers.insert(b.layer);
            if (routed_expert(b)) moe.insert(b.layer);
        }
        fail(std::string(layers.count(layer_) ? "holds no routed experts"
                                              : "holds no SwiGLU block") +
             " (layers with experts: " +
             numbers_text(std::vector<std::int64_t>(moe.begin(), moe.end())) +
             "; layers present: " +
             numbers_text(std::vector<std::int64_t>(layers.begin(), layers.end())) + ")");
    }
    container_ = container_of(blocks.front());
    pattern_ = pattern_of(blocks.front(), container_);
    for (const FoundBlock& b : blocks)
        if (container_of(b) != container_ || b.stacked != blocks.front().stacked)
            fail("holds experts in two places, " + quote_name(pattern_) + " and " +
                 quote_name(pattern_of(b, container_of(b))) +
                 ": a Mixture-of-Experts layer has one set");
    if (blocks.front().stacked) {
        // Expanded into one block per expert once the gate's shape says how
        // many; left whole, the block says what is wrong with it.
        const std::vector<FoundBlock> expanded = expand_stacked(file_, blocks);
        if (expanded.size() == 1 && expanded.front().expert < 0) {
            FoundBlock first = expanded.front();
            first.expert = 0;
            describe_block(file_, first);  // throws what is wrong with the tensors
            fail(quote_name(first.gate) + " holds more experts than a layer may (65536)");
        }
        blocks = expanded;
    }
    std::sort(blocks.begin(), blocks.end(),
              [](const FoundBlock& a, const FoundBlock& b) { return a.expert < b.expert; });
    for (const FoundBlock& b : blocks) ids_.push_back(b.expert);
    r_.experts = std::move(blocks);
    for (std::size_t e = 0; e < r_.experts.size(); ++e) {
        if (ids_[e] == std::int64_t(e)) continue;
        // Expert e lacks a tensor (a block found only in part: the family
        // with the most of its names there), or is not there at all.
        const PartialBlock* nearest = nullptr;
        for (const PartialBlock& p : found_.partial)
            if (p.layer == layer_ && p.expert == std::int64_t(e) &&
                container_of(p.prefix, p.expert) == container_ &&
                (!nearest || p.present > nearest->present))
                nearest = &p;
        std::string lacks;
        if (nearest)
            for (const std::string& m : nearest->missing)
                lacks += (lacks.empty() ? " (missing " : ", ") + quote_name(m);
        fail("holds " + experts_text() + " but no expert " + std::to_string(e) +
             (lacks.empty() ? "" : lacks + ")") + ": the experts are numbered 0 to E - 1");
    }
    r_.info.layer = layer_;
    r_.info.experts = std::int64_t(r_.experts.size());
    r_.info.experts_pattern = pattern_;
}

void Resolver::describe_experts() {
    std::map<std::string, std::vector<std::int64_t>> dtypes;
    for (std::size_t e = 0; e < r_.experts.size(); ++e) {
        const BlockInfo b = describe_block(file_, r_.experts[e]);
        if (e == 0) {
            r_.info.expert = b;
        } else if (b.d != r_.info.expert.d || b.f != r_.info.expert.f) {
            fail("expert " + std::to_string(e) + " (" + quote_name(b.gate_name) +
                 ") has d = " + std::to_string(b.d) + ", f = " + std::to_string(b.f) +
                 "; expert 0 has d = " + std::to_string(r_.info.expert.d) + ", f = " +
                 std::to_string(r_.info.expert.f) + ": a layer's experts share one shape");
        }
        dtypes[b.source_dtype].push_back(std::int64_t(e));
    }
    d_ = r_.info.expert.d;
    if (dtypes.size() == 1) {
        r_.info.experts_dtype = dtypes.begin()->first;
    } else {
        r_.info.experts_dtype = "mixed (";
        for (const auto& [dtype, experts] : dtypes)
            r_.info.experts_dtype += (r_.info.experts_dtype.back() == '(' ? "" : "; ") + dtype +
                                     ": experts " + numbers_text(experts);
        r_.info.experts_dtype += ")";
    }
}

void Resolver::find_router() {
    const std::string name = container_ + (gguf_ ? "ffn_gate_inp.weight" : "gate.weight");
    const std::int64_t e = r_.info.experts;
    const std::string expected = "[E, d] = [" + std::to_string(e) + ", " + std::to_string(d_) + "]";
    const std::optional<StoredTensor> t = file_.find(name);
    if (!t)
        fail("holds " + experts_text() + " but no router: " + quote_name(name) +
             " is missing (the (E, d) logits' weights, " + expected + ")");
    const std::string who = "router " + quote_name(name) + " " + shape_text(t->shape);
    if (t->shape.size() != 2) fail(who + " must be 2-D, " + expected);
    if (t->shape[0] != e)
        fail(who + " routes to " + std::to_string(t->shape[0]) + " experts, but the layer holds " +
             experts_text());
    if (t->shape[1] != d_)
        fail(who + " takes d = " + std::to_string(t->shape[1]) + ", the experts' d is " +
             std::to_string(d_) + " (" + expected + ")");
    if (!readable(*t))
        fail(who + " has type " + t->type_name + ", which the loader does not read",
             Status::unsupported);
    r_.router = *t;
    r_.info.router_name = name;
    r_.info.router_format = t->type_name;
}

void Resolver::read_config() {
    std::string path;
    try {
        if (gguf_) {
            config_ = gguf_moe_config(*file_.gguf());
        } else {
            if (file_.folder().empty())
                fail("holds " + experts_text() +
                     "; its routing rule comes from the model's config.json, and a file from "
                     "memory has none beside it");
            path = file_.folder() + (file_.folder().back() == '/' ? "" : "/") + "config.json";
            struct stat st {};
            if (::stat(path.c_str(), &st) != 0)
                fail("holds " + experts_text() +
                     "; its routing rule comes from the model's config.json: " + one_line(path) +
                     " not found. Put the model's config.json beside the weights, or choose one "
                     "expert with the expert selector (--expert E)");  // Python rewords: module.cpp
            config_ = hf_moe_config(path);
        }
    } catch (const Error& e) {
        if (std::string(e.what()).rfind(file_.label(), 0) == 0) throw;
        fail("its routing rule: " + std::string(e.what()), e.status());
    }
    if (config_.experts != r_.info.experts)
        fail("holds " + experts_text() + ", but " + config_.source + " says " +
             quote_name(config_.experts_key) + " = " + std::to_string(config_.experts));
    r_.info.model = config_.model;
    r_.info.config = config_.source;
    r_.info.rule = config_.rule;
    r_.info.shared_experts = config_.shared_experts;
}

StoredTensor Resolver::vector_tensor(const std::string& name, const char* role, std::int64_t n,
                                     const char* n_text) const {
    const StoredTensor t = *file_.find(name);
    const std::string who = std::string(role) + " " + quote_name(name) + " " + shape_text(t.shape);
    const bool fits = (t.shape.size() == 1 && t.shape[0] == n) ||
                      (t.shape.size() == 2 && t.shape[0] == 1 && t.shape[1] == n);
    if (!fits)
        fail(who + " must hold " + n_text + " = " + std::to_string(n) + " values ([" +
             std::to_string(n) + "] or [1, " + std::to_string(n) + "])");
    if (!readable(t))
        fail(who + " has type " + t.type_name + ", which the loader does not read",
             Status::unsupported);
    return t;
}

void Resolver::find_bias() {
    if (config_.bias == Presence::none) return;
    const std::string name =
        container_ + (gguf_ ? "exp_probs_b.bias" : "gate.e_score_correction_bias");
    if (!file_.has(name)) {
        if (config_.bias == Presence::required)
            fail(quote_name(name) + " is missing: " + config_.model +
                 "'s router chooses experts by score + this bias (E = " +
                 std::to_string(r_.info.experts) + " values)");
        return;
    }
    r_.bias = vector_tensor(name, "bias", r_.info.experts, "E");
    r_.info.bias_name = name;
}

void Resolver::find_shared() {
    if (config_.shared == Presence::none) return;
    std::optional<FoundBlock> block;
    std::vector<std::string> missing;
    std::string prefix;
    if (gguf_) {
        prefix = container_;
        FoundBlock b;
        b.prefix = prefix;
        b.family = &kGgufShared;
        b.scheme = kGgufShared.scheme;
        b.layer = layer_;
        b.gate = prefix + kGgufShared.gate;
        b.up = prefix + kGgufShared.up;
        b.down = prefix + kGgufShared.down;
        for (const std::string* n : {&b.gate, &b.up, &b.down})
            if (!file_.has(*n)) missing.push_back(*n);
        if (missing.size() < 3 && !missing.empty()) {
            std::string names;
            for (const std::string& m : missing)
                names += (names.empty() ? "" : ", ") + quote_name(m);
            fail("the shared experts lack " + names);
        }
        if (missing.empty()) block = b;
    } else {
        prefix = container_ + (config_.model == "qwen2_moe" ? "shared_expert." : "shared_experts.");
        for (const FoundBlock& b : found_.blocks)
            if (b.prefix == prefix) block = b;
        for (const PartialBlock& p : found_.partial)
            if (p.prefix == prefix && missing.empty()) missing = p.missing;
    }
    if (!block) {
        if (config_.shared == Presence::required) {
            std::string lacks;
            for (const std::string& m : missing)
                lacks += (lacks.empty() ? " (missing " : ", ") + quote_name(m);
            fail("no shared expert block at " + quote_name(prefix) +
                 (lacks.empty() ? "" : lacks + ")") + ", which " + config_.source + " gives " +
                 config_.model +
                 (config_.shared_experts > 1
                      ? " (\"n_shared_experts\" = " + std::to_string(config_.shared_experts) + ")"
                      : ""));
        }
        if (gguf_ && config_.shared_experts > 0)
            fail(quote_name(prefix + "ffn_{gate,up,down}_shexp.weight") + " are missing, but " +
                 config_.source + " says " + quote_name(config_.model + ".expert_shared_count") +
                 " = " + std::to_string(config_.shared_experts));
        return;
    }
    const BlockInfo shared = describe_block(file_, *block);
    if (shared.d != d_)
        fail("the shared block " + quote_name(prefix) + " has d = " + std::to_string(shared.d) +
             ", the experts' d is " + std::to_string(d_));
    r_.shared = block;
    r_.info.has_shared = true;
    r_.info.shared = shared;
    if (r_.info.shared_experts == 0) r_.info.shared_experts = 1;

    if (config_.shared_gate == Presence::none) return;
    const std::string gate =
        container_ + (gguf_ ? "ffn_gate_inp_shexp.weight" : "shared_expert_gate.weight");
    if (!file_.has(gate)) {
        if (config_.shared_gate == Presence::required)
            fail(quote_name(gate) + " is missing: " + config_.model +
                 " scales the shared expert by sigmoid(x . gate), d = " + std::to_string(d_) +
                 " values");
        return;
    }
    r_.shared_gate = vector_tensor(gate, "shared expert gate", d_, "d");
    r_.info.shared_gate_name = gate;
}

}  // namespace

std::vector<std::int64_t> moe_layers(const CheckpointFiles& files) {
    std::set<std::int64_t> layers;
    for (const FoundBlock& b : discover_blocks(files.names()).blocks)
        if (routed_expert(b)) layers.insert(b.layer);
    return {layers.begin(), layers.end()};
}

ResolvedMoe resolve_moe_layer(const CheckpointFiles& files, std::int64_t layer) {
    if (layer < 0) detail::fail(files, "layer must be >= 0 (got " + std::to_string(layer) + ")");
    return Resolver(files, layer).run();
}

}  // namespace swiglu::detail

namespace swiglu {

bool is_moe_layer(const std::string& path, std::int64_t layer) {
    const std::vector<std::int64_t> layers =
        detail::moe_layers(detail::CheckpointFiles::open(path));
    return std::binary_search(layers.begin(), layers.end(), layer);
}

std::vector<std::int64_t> moe_layers(const std::string& path) {
    return detail::moe_layers(detail::CheckpointFiles::open(path));
}

MoeInfo describe_moe_layer(const std::string& path, std::int64_t layer) {
    return detail::resolve_moe_layer(detail::CheckpointFiles::open(path), layer).info;
}

}  // namespace swiglu
