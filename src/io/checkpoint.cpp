// Finds the block's three weights in a safetensors checkpoint by naming
// scheme, checks their shapes agree, and converts them to f32.
//
// Schemes, tried in this order (names relative to a prefix):
//   hf-llama     model.layers.{N}.mlp.{gate,up,down}_proj.weight   (out, in)
//   phi3-merged  model.layers.{N}.mlp.gate_up_proj.weight (2f, d): gate rows
//                first, then up; plus ...down_proj.weight          (out, in)
//   bare         {gate,up,down}_proj.weight                        (out, in)
//   cyberslm     {gate,val,out}_proj.weight: the seed's nn.Linear
//                layers gate_proj, val_proj (up), out_proj (down)  (out, in)
//                (and, as an alias, the same names without .weight)
//   glassllm     W1 (gate), W3 (up), W2 (down)                     (in, out)
// WeightSelector::layer picks N; WeightSelector::prefix replaces the prefix
// for every scheme ("bare" is then reported as "hf-llama" when the prefix is
// model.layers.{N}.mlp.).
#include <swiglu/checkpoint.hpp>

#include <set>

#include "common/messages.hpp"
#include "io/checkpoint_loader.hpp"
#include "io/safetensors.hpp"

namespace swiglu {

namespace {

using detail::quote_name;
using detail::SafetensorsFile;
using detail::shape_text;
using detail::TensorDtype;
using detail::TensorInfo;

// One way of naming the three weights, after the prefix.
struct Family {
    const char* scheme;  // reported as LoadedWeights::scheme
    const char* label;   // in "no block found": the scheme, told apart from its aliases
    const char* gate;
    const char* up;  // nullptr: up is the second half of `gate` (merged gate_up)
    const char* down;
    Layout layout;
};

constexpr Family kProj{
    "bare", "bare", "gate_proj.weight", "up_proj.weight", "down_proj.weight", Layout::out_in};
constexpr Family kMerged{"phi3-merged", "phi3-merged",      "gate_up_proj.weight",
                         nullptr,       "down_proj.weight", Layout::out_in};
// The CyberSLM seed's module: every nn.Linear in its state_dict adds .weight.
constexpr Family kCyberslm{"cyberslm",        "cyberslm",        "gate_proj.weight",
                           "val_proj.weight", "out_proj.weight", Layout::out_in};
constexpr Family kCyberslmBare{
    "cyberslm", "cyberslm without .weight", "gate_proj", "val_proj", "out_proj", Layout::out_in};
constexpr Family kGlassllm{"glassllm", "glassllm", "W1", "W3", "W2", Layout::in_out};

struct Candidate {
    std::string scheme;  // the family's, or hf-llama for bare names under model.layers.{N}.mlp.
    std::string prefix;
    const Family* family;
    // In "no block found": the scheme as reported, or the alias it tried.
    std::string label() const {
        return std::string(family->label) == family->scheme ? scheme : family->label;
    }
};

// The tensors of a candidate that matched: up is null for a merged gate_up.
struct Match {
    const Candidate* candidate;
    const TensorInfo* gate;
    const TensorInfo* up;
    const TensorInfo* down;
};

constexpr std::size_t kListedTensors = 20;
constexpr std::size_t kListedLayers = 20;

[[noreturn]] void fail(const SafetensorsFile& file, const std::string& what,
                       Status status = Status::invalid_argument) {
    throw Error(status, file.label() + ": " + what);
}

std::string layer_prefix(const std::string& layer) { return "model.layers." + layer + ".mlp."; }

// "model.layers.{digits}.mlp." followed by nothing else.
bool is_layer_prefix(const std::string& prefix) {
    const std::string head = "model.layers.", tail = ".mlp.";
    if (prefix.size() <= head.size() + tail.size() || prefix.compare(0, head.size(), head) != 0 ||
        prefix.compare(prefix.size() - tail.size(), tail.size(), tail) != 0)
        return false;
    for (std::size_t i = head.size(); i < prefix.size() - tail.size(); ++i)
        if (prefix[i] < '0' || prefix[i] > '9') return false;
    return true;
}

// Layer numbers as written in the file, in numeric order.
struct NumericOrder {
    bool operator()(const std::string& a, const std::string& b) const {
        return a.size() != b.size() ? a.size() < b.size() : a < b;
    }
};
using LayerSet = std::set<std::string, NumericOrder>;

// The N of every model.layers.{N}.mlp.<a weight name of hf-llama or phi3>.
LayerSet find_layers(const SafetensorsFile& file) {
    const std::string head = "model.layers.";
    const std::string suffixes[] = {"gate_proj.weight", "up_proj.weight", "down_proj.weight",
                                    "gate_up_proj.weight"};
    LayerSet layers;
    for (const TensorInfo& t : file.tensors()) {
        const std::string& name = t.name;
        if (name.compare(0, head.size(), head) != 0) continue;
        const std::size_t dot = name.find('.', head.size());
        if (dot == std::string::npos || dot == head.size()) continue;
        const std::string prefix = name.substr(0, dot) + ".mlp.";
        if (!is_layer_prefix(prefix) || name.compare(0, prefix.size(), prefix) != 0) continue;
        for (const std::string& s : suffixes)
            if (name.size() == prefix.size() + s.size() &&
                name.compare(prefix.size(), s.size(), s) == 0)
                layers.insert(name.substr(head.size(), dot - head.size()));
    }
    return layers;
}

std::string layers_text(const LayerSet& layers) {
    std::string s;
    std::size_t n = 0;
    for (const std::string& layer : layers) {
        if (n++ == kListedLayers) {
            s += ", ...";
            break;
        }
        s += (s.empty() ? "" : ", ") + layer;
    }
    return s;
}

std::string tensors_text(const SafetensorsFile& file) {
    const auto& tensors = file.tensors();
    std::string s = "tensors present (" + std::to_string(tensors.size()) + "):";
    if (tensors.empty()) return s + " none";
    for (std::size_t i = 0; i < tensors.size() && i < kListedTensors; ++i)
        s += (i ? ", " : " ") + quote_name(tensors[i].name) + " " + shape_text(tensors[i].shape) +
             " " + detail::dtype_name(tensors[i].dtype);
    if (tensors.size() > kListedTensors) s += ", ...";
    return s;
}

std::vector<Candidate> candidates_for(const SafetensorsFile& file, const WeightSelector& selector,
                                      const LayerSet& layers) {
    if (selector.layer >= 0) {
        const std::string p = layer_prefix(std::to_string(selector.layer));
        return {{"hf-llama", p, &kProj}, {"phi3-merged", p, &kMerged}};
    }
    if (!selector.prefix.empty()) {
        const std::string& p = selector.prefix;
        return {{is_layer_prefix(p) ? "hf-llama" : "bare", p, &kProj},
                {"phi3-merged", p, &kMerged},
                {"cyberslm", p, &kCyberslm},
                {"cyberslm", p, &kCyberslmBare},
                {"glassllm", p, &kGlassllm}};
    }
    if (layers.size() > 1)
        fail(file, "holds " + std::to_string(layers.size()) +
                       " layers (model.layers.{N}.mlp with N = " + layers_text(layers) +
                       "): choose one with the layer selector (--layer N)");
    std::vector<Candidate> out;
    if (layers.size() == 1) {
        const std::string p = layer_prefix(*layers.begin());
        out.push_back({"hf-llama", p, &kProj});
        out.push_back({"phi3-merged", p, &kMerged});
    }
    out.push_back({"bare", "", &kProj});
    out.push_back({"cyberslm", "", &kCyberslm});
    out.push_back({"cyberslm", "", &kCyberslmBare});
    out.push_back({"glassllm", "", &kGlassllm});
    return out;
}

// The first candidate whose tensors are all present; otherwise an error that
// lists, per scheme, what was missing, and what the file does hold.
Match find_block(const SafetensorsFile& file, const std::vector<Candidate>& candidates,
                 const LayerSet& layers) {
    std::string tried;
    for (const Candidate& c : candidates) {
        const Family& f = *c.family;
        std::string missing;
        auto look = [&](const char* suffix) -> const TensorInfo* {
            if (!suffix) return nullptr;
            const std::string name = c.prefix + suffix;
            const TensorInfo* t = file.find(name);
            if (!t) missing += (missing.empty() ? "" : ", ") + quote_name(name);
            return t;
        };
        const TensorInfo* gate = look(f.gate);
        const TensorInfo* up = look(f.up);
        const TensorInfo* down = look(f.down);
        if (missing.empty()) return {&c, gate, up, down};
        tried += (tried.empty() ? "" : "; ") + c.label() + " (missing " + missing + ")";
    }
    std::string what = "no SwiGLU block found: tried " + tried + ". ";
    if (!layers.empty()) what += "Layers present: " + layers_text(layers) + ". ";
    fail(file, what + tensors_text(file));
}

std::string role_text(const TensorInfo& t, const char* role) {
    return std::string(role) + " " + quote_name(t.name);
}

void check_weight(const SafetensorsFile& file, const TensorInfo& t, const char* role) {
    if (t.shape.size() != 2)
        fail(file, role_text(t, role) + " must be 2-D, found shape " + shape_text(t.shape) + " (" +
                       std::to_string(t.shape.size()) + "-D)");
    if (t.dtype != TensorDtype::F32 && t.dtype != TensorDtype::BF16 && t.dtype != TensorDtype::F16)
        fail(file,
             role_text(t, role) + " has unsupported dtype " + detail::dtype_name(t.dtype) +
                 "; weights must be F32, BF16 or F16",
             Status::unsupported);
}

void expect_shape(const SafetensorsFile& file, const TensorInfo& t, const char* role,
                  std::int64_t rows, std::int64_t cols, const char* dims,
                  const std::string& because) {
    if (t.shape[0] != rows || t.shape[1] != cols)
        fail(file, "shapes disagree: expected " + role_text(t, role) + " to be " + dims + " = " +
                       shape_text({rows, cols}) + " (" + because + "), found " +
                       shape_text(t.shape));
}

std::string dtype_summary(const Match& m) {
    const char* g = detail::dtype_name(m.gate->dtype);
    const char* u = detail::dtype_name((m.up ? m.up : m.gate)->dtype);
    const char* d = detail::dtype_name(m.down->dtype);
    if (std::string(g) == u && std::string(g) == d) return g;
    return std::string("mixed (gate ") + g + ", up " + u + ", down " + d + ")";
}

}  // namespace

namespace detail {

LoadedWeights load_weights(const SafetensorsFile& file, const WeightSelector& selector) {
    if (selector.layer >= 0 && !selector.prefix.empty())
        fail(file, "give a layer (" + std::to_string(selector.layer) + ") or a prefix (" +
                       quote_name(selector.prefix) + "), not both");
    const LayerSet layers = find_layers(file);
    const std::vector<Candidate> candidates = candidates_for(file, selector, layers);
    const Match m = find_block(file, candidates, layers);
    const Family& family = *m.candidate->family;

    check_weight(file, *m.gate, m.up ? "gate" : "gate_up");
    if (m.up) check_weight(file, *m.up, "up");
    check_weight(file, *m.down, "down");

    // d and f come from the gate (or gate_up); up and down must agree.
    std::int64_t d, f;
    const std::string from =
        "from " + role_text(*m.gate, m.up ? "gate" : "gate_up") + " " + shape_text(m.gate->shape);
    if (!m.up) {
        if (m.gate->shape[0] % 2 != 0)
            fail(file, "gate_up " + quote_name(m.gate->name) + " " + shape_text(m.gate->shape) +
                           " must have an even number of rows (2f: gate rows, then up rows)");
        f = m.gate->shape[0] / 2;
        d = m.gate->shape[1];
        expect_shape(file, *m.down, "down", d, f, "[d, f]", from + " as [2f, d]");
    } else if (family.layout == Layout::out_in) {
        f = m.gate->shape[0];
        d = m.gate->shape[1];
        expect_shape(file, *m.up, "up", f, d, "[f, d]", from + " as [f, d]");
        expect_shape(file, *m.down, "down", d, f, "[d, f]", from + " as [f, d]");
    } else {
        d = m.gate->shape[0];
        f = m.gate->shape[1];
        expect_shape(file, *m.up, "up", d, f, "[d, f]", from + " as [d, f]");
        expect_shape(file, *m.down, "down", f, d, "[f, d]", from + " as [d, f]");
    }
    if (d < 1 || f < 1)
        fail(file, "empty block: d = " + std::to_string(d) + ", f = " + std::to_string(f) + " (" +
                       from + "); both must be >= 1");

    LoadedWeights w;
    w.d = d;
    w.f = f;
    w.scheme = m.candidate->scheme;
    w.gate_name = m.gate->name;
    w.up_name = m.up ? m.up->name : m.gate->name;
    w.down_name = m.down->name;
    w.source_dtype = dtype_summary(m);
    w.gate_layout = w.up_layout = w.down_layout = family.layout;
    if (m.up) {
        w.gate = file.to_f32(*m.gate);
        w.up = file.to_f32(*m.up);
    } else {
        // Split [2f, d] row-major: the first f rows are gate, the rest up.
        const std::vector<float> both = file.to_f32(*m.gate);
        const auto half = static_cast<std::ptrdiff_t>(f * d);
        w.gate.assign(both.begin(), both.begin() + half);
        w.up.assign(both.begin() + half, both.end());
    }
    w.down = file.to_f32(*m.down);
    return w;
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
    return detail::load_weights(SafetensorsFile::open(path), selector);
}

}  // namespace swiglu
