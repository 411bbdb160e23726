#include "io/block_discovery.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>

namespace swiglu::detail {

namespace {

bool is_digits(std::string_view s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool ends_with(std::string_view s, std::string_view tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The prefix's dot-separated components ("a.b.3." -> a, b, 3).
std::vector<std::string_view> components(std::string_view prefix) {
    std::vector<std::string_view> out;
    std::size_t start = 0;
    while (start < prefix.size()) {
        std::size_t dot = prefix.find('.', start);
        if (dot == std::string_view::npos) dot = prefix.size();
        out.push_back(prefix.substr(start, dot - start));
        start = dot + 1;
    }
    return out;
}

bool is_layer_word(std::string_view c) { return c == "layers" || c == "blocks" || c == "blk"; }
bool is_expert_word(std::string_view c) { return c == "experts"; }

// The number after the first component `word` accepts (-1: none, or too long
// to be an index).
template <class Word>
std::int64_t index_after(std::string_view prefix, Word word) {
    const std::vector<std::string_view> parts = components(prefix);
    for (std::size_t i = 0; i + 1 < parts.size(); ++i)
        if (word(parts[i]) && is_digits(parts[i + 1]) && parts[i + 1].size() <= 18)
            return std::stoll(std::string(parts[i + 1]));
    return -1;
}

}  // namespace

const std::vector<Family>& block_families() {
    static const std::vector<Family> families{
        {"bare", "bare", "gate_proj.weight", "up_proj.weight", "down_proj.weight", Layout::out_in},
        {"phi3-merged", "phi3-merged", "gate_up_proj.weight", nullptr, "down_proj.weight",
         Layout::out_in},
        // The CyberSLM seed's module: every nn.Linear in its state_dict adds .weight.
        {"cyberslm", "cyberslm", "gate_proj.weight", "val_proj.weight", "out_proj.weight",
         Layout::out_in},
        {"cyberslm", "cyberslm without .weight", "gate_proj", "val_proj", "out_proj",
         Layout::out_in},
        {"glassllm", "glassllm", "W1", "W3", "W2", Layout::in_out},
        // Meta's and Mistral's original checkpoints (feed_forward.w1 ...), and
        // Mixtral's experts: w1 gate, w3 up, w2 down, as nn.Linear saves them.
        {"meta", "meta", "w1.weight", "w3.weight", "w2.weight", Layout::out_in},
        // llama.cpp's GGUF names (blk.N.): its shapes read (out, in) once
        // GGUF's ne is reversed, as the loader does.
        {"gguf", "gguf", "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight", Layout::out_in},
        // Its Mixture-of-Experts layers: every expert in one 3-D tensor each.
        {"gguf-expert", "gguf-expert", "ffn_gate_exps.weight", "ffn_up_exps.weight",
         "ffn_down_exps.weight", Layout::out_in, true},
    };
    return families;
}

std::int64_t layer_of(std::string_view prefix) { return index_after(prefix, is_layer_word); }
std::int64_t expert_of(std::string_view prefix) { return index_after(prefix, is_expert_word); }

std::string scheme_at(const Family& family, const std::string& prefix) {
    const std::string scheme = family.scheme;
    const bool expert = expert_of(prefix) >= 0;
    if (scheme == "bare") {
        if (expert) return "hf-moe-expert";
        // ...layers.{N}.mlp.: where Hugging Face's LLaMA-style models put it.
        const std::vector<std::string_view> parts = components(prefix);
        const std::size_t n = parts.size();
        if (n >= 3 && parts[n - 3] == "layers" && is_digits(parts[n - 2]) && parts[n - 1] == "mlp")
            return "hf-llama";
        return scheme;
    }
    if (scheme == "meta" && expert) return "mixtral-expert";
    return scheme;
}

std::string prefix_pattern(const std::string& prefix) {
    const std::vector<std::string_view> parts = components(prefix);
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        const bool numbered = i > 0 && is_digits(parts[i]);
        if (numbered && is_layer_word(parts[i - 1]))
            out += "{N}";
        else if (numbered && is_expert_word(parts[i - 1]))
            out += "{E}";
        else
            out += parts[i];
        out += '.';
    }
    return out;
}

bool natural_less(std::string_view a, std::string_view b) {
    std::size_t i = 0, j = 0;
    auto digit = [](char c) { return c >= '0' && c <= '9'; };
    while (i < a.size() && j < b.size()) {
        if (digit(a[i]) && digit(b[j])) {
            std::size_t ie = i, je = j;
            while (ie < a.size() && digit(a[ie])) ++ie;
            while (je < b.size() && digit(b[je])) ++je;
            // Compare the runs as numbers: without leading zeros, shorter is smaller.
            std::size_t is = i, js = j;
            while (is + 1 < ie && a[is] == '0') ++is;
            while (js + 1 < je && b[js] == '0') ++js;
            const std::string_view ra = a.substr(is, ie - is), rb = b.substr(js, je - js);
            if (ra.size() != rb.size()) return ra.size() < rb.size();
            if (ra != rb) return ra < rb;
            i = ie;
            j = je;
        } else {
            if (a[i] != b[j]) return a[i] < b[j];
            ++i;
            ++j;
        }
    }
    return a.size() - i < b.size() - j;
}

Discovery discover_blocks(const std::vector<std::string_view>& names) {
    const std::vector<Family>& families = block_families();
    // prefix -> per family, a bit per role found (1 gate, 2 up, 4 down).
    struct NaturalOrder {
        bool operator()(const std::string& a, const std::string& b) const {
            return natural_less(a, b) || (!natural_less(b, a) && a < b);
        }
    };
    std::map<std::string, std::vector<unsigned>, NaturalOrder> groups;
    for (std::string_view name : names)
        for (std::size_t fi = 0; fi < families.size(); ++fi) {
            const Family& f = families[fi];
            const char* roles[] = {f.gate, f.up, f.down};
            for (unsigned r = 0; r < 3; ++r) {
                if (!roles[r] || !ends_with(name, roles[r])) continue;
                const std::string_view prefix = name.substr(0, name.size() - std::strlen(roles[r]));
                if (!prefix.empty() && prefix.back() != '.') continue;
                std::vector<unsigned>& found = groups[std::string(prefix)];
                found.resize(families.size());
                found[fi] |= 1u << r;
            }
        }

    Discovery out;
    for (const auto& [prefix, found] : groups) {
        bool complete = false;
        for (std::size_t fi = 0; fi < families.size() && !complete; ++fi) {
            const Family& f = families[fi];
            const unsigned all = f.up ? 7u : 5u;
            if (found[fi] != all) continue;
            complete = true;
            FoundBlock b;
            b.prefix = prefix;
            b.family = &f;
            b.scheme = scheme_at(f, prefix);
            b.layer = layer_of(prefix);
            b.expert = expert_of(prefix);
            b.stacked = f.stacked;
            b.gate = prefix + f.gate;
            if (f.up) b.up = prefix + f.up;
            b.down = prefix + f.down;
            out.blocks.push_back(std::move(b));
        }
        if (complete) continue;
        for (std::size_t fi = 0; fi < families.size(); ++fi) {
            if (!found[fi]) continue;
            const Family& f = families[fi];
            PartialBlock p;
            p.prefix = prefix;
            p.label = std::string(f.label) == f.scheme ? scheme_at(f, prefix) : f.label;
            p.layer = layer_of(prefix);
            p.expert = expert_of(prefix);
            const char* roles[] = {f.gate, f.up, f.down};
            for (unsigned r = 0; r < 3; ++r) {
                if (!roles[r]) continue;
                if (found[fi] & (1u << r))
                    ++p.present;
                else
                    p.missing.push_back(prefix + roles[r]);
            }
            out.partial.push_back(std::move(p));
        }
    }
    return out;
}

}  // namespace swiglu::detail
