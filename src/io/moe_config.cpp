// The routing rules of the model families (io/moe_config.hpp), from
// config.json or GGUF metadata. What each family does, after its own code:
//   mixtral      softmax, top-k, normalized (transformers' MixtralSparseMoeBlock)
//   qwen2_moe    softmax, normalize = norm_topk_prob (default false), one
//                shared expert with a sigmoid gate (Qwen2MoeSparseMoeBlock)
//   qwen3_moe    softmax, normalize = norm_topk_prob (default false)
//   olmoe        softmax, normalize = norm_topk_prob (default false)
//   deepseek_v2  scoring_func (softmax), topk_method greedy or
//                group_limited_greedy (groups scored by their best expert);
//                normalized when norm_topk_prob and k > 1, else scaled by
//                routed_scaling_factor (DeepSeek-V2's MoEGate: one or the
//                other); n_shared_experts as one block
//   deepseek_v3  scoring_func (sigmoid), topk_method noaux_tc: groups scored
//                by their two best (+ e_score_correction_bias, which chooses
//                only), normalized when norm_topk_prob and k > 1, then
//                scaled by routed_scaling_factor (DeepSeek-V3's MoEGate)
// GGUF, as llama.cpp's loader and build_moe_ffn read them:
//   llama (Mixtral)    softmax, normalized
//   qwen2moe           softmax, not normalized; ffn_*_shexp gated by ffn_gate_inp_shexp
//   qwen3moe           softmax, normalized
//   olmoe              softmax, not normalized
//   deepseek2          expert_gating_func (1 softmax, 2 sigmoid; absent:
//                      softmax, as DeepSeek-V2 files are), expert_weights_norm
//                      (absent: false), then expert_weights_scale (0: none);
//                      expert_group_count / expert_group_used_count; exp_probs_b
// Where llama.cpp scores every group by its two best experts, a softmax
// layer's groups are scored here by their best, as DeepSeek-V2 defines them
// (a sigmoid layer's by the two best, DeepSeek-V3's): the model's rule.
#include "io/moe_config.hpp"

#include <sys/stat.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/messages.hpp"
#include "io/safetensors.hpp"  // quote_name
#include "io/strict_json.hpp"

namespace swiglu::detail {

namespace {

using json = nlohmann::json;

// A config.json is a few KB; a multimodal one a few hundred.
constexpr std::size_t kMaxConfigBytes = 16u * 1000 * 1000;
constexpr int kMaxConfigNesting = 32;

std::string q(const std::string& key) { return quote_name(key); }

// A value from the file, short and on one line, for messages.
std::string shown(const json& v) {
    std::string s = one_line(v.dump());
    return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

// The keys of a config.json, each read as the type the rule needs.
class JsonKeys {
public:
    JsonKeys(const json& root, const std::string& label, const std::string& model)
        : root_(root), label_(label), model_(model) {}

    [[noreturn]] void fail(const std::string& what) const { invalid(label_ + ": " + what); }

    // nullptr when missing or null (as transformers reads a null: the default).
    const json* find(const std::string& key) const {
        const auto it = root_.find(key);
        return it == root_.end() || it->is_null() ? nullptr : &*it;
    }
    [[noreturn]] void missing(const std::string& key, const char* meaning) const {
        fail(q(key) + " is missing: " + model_ + "'s routing needs it (" + meaning + ")");
    }
    [[noreturn]] void wrong(const std::string& key, const json& v, const char* type) const {
        fail(q(key) + " must be " + type + ", found " + shown(v));
    }

    std::optional<std::int64_t> integer(const std::string& key) const {
        const json* v = find(key);
        if (!v) return std::nullopt;
        if (!v->is_number_integer()) wrong(key, *v, "an integer");
        if (v->is_number_unsigned() &&
            v->get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
            wrong(key, *v, "an integer that fits 63 bits");
        return v->get<std::int64_t>();
    }
    std::int64_t integer(const std::string& key, const char* meaning) const {
        const auto v = integer(key);
        if (!v) missing(key, meaning);
        return *v;
    }
    std::optional<bool> flag(const std::string& key) const {
        const json* v = find(key);
        if (!v) return std::nullopt;
        if (!v->is_boolean()) wrong(key, *v, "true or false");
        return v->get<bool>();
    }
    bool flag(const std::string& key, const char* meaning) const {
        const auto v = flag(key);
        if (!v) missing(key, meaning);
        return *v;
    }
    float number(const std::string& key, const char* meaning) const {
        const json* v = find(key);
        if (!v) missing(key, meaning);
        if (!v->is_number()) wrong(key, *v, "a number");
        const double d = v->get<double>();
        if (!std::isfinite(d) || std::fabs(d) > std::numeric_limits<float>::max())
            wrong(key, *v, "a finite float");
        return float(d);
    }
    std::optional<std::string> text(const std::string& key) const {
        const json* v = find(key);
        if (!v) return std::nullopt;
        if (!v->is_string()) wrong(key, *v, "a string");
        return v->get<std::string>();
    }

private:
    const json& root_;
    const std::string& label_;
    const std::string& model_;
};

// The checks every family's rule shares, naming the keys the values came
// from; `fail` throws.
struct RuleKeys {
    const char* groups = nullptr;  // nullptr: the family has no groups
    const char* top_groups = nullptr;
};
void check_rule(const MoeConfig& c, const RuleKeys& keys,
                const std::function<void(const std::string&)>& fail) {
    const std::string e = q(c.experts_key) + " = " + std::to_string(c.experts);
    if (c.experts < 1) fail(e + " must be >= 1");
    const RouterRule& r = c.rule;
    if (r.top_k < 1 || r.top_k > c.experts)
        fail(q(c.k_key) + " = " + std::to_string(r.top_k) + " must be from 1 to " + e);
    if (!keys.groups) return;
    const std::string g = q(keys.groups) + " = " + std::to_string(r.groups);
    if (r.groups < 1 || c.experts % r.groups != 0) fail(g + " must be >= 1 and divide " + e);
    const std::int64_t size = c.experts / r.groups;
    if (r.top_groups < 1 || r.top_groups > r.groups)
        fail(q(keys.top_groups) + " = " + std::to_string(r.top_groups) + " must be from 1 to " + g);
    if (r.top_k > r.top_groups * size)
        fail(q(c.k_key) + " = " + std::to_string(r.top_k) + " exceeds the " +
             std::to_string(r.top_groups * size) + " experts of " + q(keys.top_groups) + " = " +
             std::to_string(r.top_groups) + " groups of " + std::to_string(size));
    if (r.groups > 1 && r.group_score == GroupScore::top2_sum && size < 2)
        fail(g + " leaves " + std::to_string(size) +
             " expert per group; groups are scored by their two best experts");
}

const char* const kExperts = "the number of routed experts";
const char* const kK = "the number of experts each token runs through";

RouterScore scoring(const JsonKeys& keys, const std::string& key, RouterScore fallback) {
    const auto s = keys.text(key);
    if (!s) return fallback;
    if (*s == "softmax") return RouterScore::softmax;
    if (*s == "sigmoid") return RouterScore::sigmoid;
    keys.fail(q(key) + " is " + q(*s) + "; the router scores with \"softmax\" or \"sigmoid\"");
}

// DeepSeek-V2 / V3's MoEGate.
void deepseek(MoeConfig& c, const JsonKeys& keys, bool v3, RuleKeys& groups) {
    c.experts_key = "n_routed_experts";
    c.experts = keys.integer(c.experts_key, kExperts);
    c.rule.top_k = keys.integer(c.k_key, kK);
    c.rule.score = scoring(keys, "scoring_func", v3 ? RouterScore::sigmoid : RouterScore::softmax);
    const auto method = keys.text("topk_method");
    if (!method) keys.missing("topk_method", "how experts are chosen");
    const bool grouped = v3 ? *method == "noaux_tc" : *method == "group_limited_greedy";
    if (v3 ? !grouped : (!grouped && *method != "greedy"))
        keys.fail("\"topk_method\" is " + q(*method) + "; " + c.model + " routes with " +
                  (v3 ? "\"noaux_tc\"" : "\"greedy\" or \"group_limited_greedy\""));
    if (grouped) {
        c.rule.groups = keys.integer("n_group", "the expert groups");
        c.rule.top_groups = keys.integer("topk_group", "the groups a token chooses from");
        c.rule.group_score = v3 ? GroupScore::top2_sum : GroupScore::max;
        groups = {"n_group", "topk_group"};
    }
    const bool norm = keys.flag("norm_topk_prob", "whether the k weights are normalized");
    c.rule.normalize = norm && c.rule.top_k > 1;
    const float scale = keys.number("routed_scaling_factor", "the routed weights' scale");
    // V2 scales the weights it does not normalize; V3 scales them all.
    c.rule.scaling = v3 || !c.rule.normalize ? scale : 1.0f;
    if (v3) c.bias = Presence::required;  // noaux_tc's e_score_correction_bias
    c.shared_experts = keys.integer("n_shared_experts").value_or(0);
    if (c.shared_experts < 0)
        keys.fail("\"n_shared_experts\" = " + std::to_string(c.shared_experts) + " must be >= 0");
    if (c.shared_experts > 0) c.shared = Presence::required;
}

}  // namespace

MoeConfig hf_moe_config_text(std::string_view text, const std::string& label) {
    const auto fail = [&label](const std::string& what) { invalid(label + ": " + what); };
    if (text.size() > kMaxConfigBytes)
        fail("config is " + std::to_string(text.size()) + " bytes, over the limit of " +
             std::to_string(kMaxConfigBytes));
    if (text.find('\0') != std::string_view::npos) fail("config contains a NUL byte");
    const StrictJsonRules rules{"config", kMaxConfigNesting, "a model's config nests a few deep",
                                [](const std::string& key, const std::string& inside) {
                                    return "duplicate key " + quote_name(key) +
                                           (inside.empty() ? "" : " inside " + quote_name(inside));
                                }};
    const json root = parse_strict_json(text, rules, fail);
    if (!root.is_object())
        fail(std::string("config must be a JSON object, found ") + root.type_name());

    MoeConfig c;
    c.source = label;
    const std::string no_model = "(none)";
    const JsonKeys type_key(root, label, no_model);
    const auto model = type_key.text("model_type");
    if (!model) type_key.missing("model_type", "the model family, which defines the routing");
    c.model = *model;
    const JsonKeys keys(root, label, c.model);
    c.k_key = "num_experts_per_tok";
    RuleKeys groups;
    if (c.model == "mixtral") {
        c.experts_key = "num_local_experts";
        c.experts = keys.integer(c.experts_key, kExperts);
        c.rule.top_k = keys.integer(c.k_key, kK);
        c.rule.normalize = true;
    } else if (c.model == "qwen2_moe" || c.model == "qwen3_moe" || c.model == "olmoe") {
        c.experts_key = "num_experts";
        c.experts = keys.integer(c.experts_key, kExperts);
        c.rule.top_k = keys.integer(c.k_key, kK);
        c.rule.normalize = keys.flag("norm_topk_prob").value_or(false);
        if (c.model == "qwen2_moe") {
            c.shared = c.shared_gate = Presence::required;
            c.shared_experts = 1;
        }
    } else if (c.model == "deepseek_v2" || c.model == "deepseek_v3") {
        deepseek(c, keys, c.model == "deepseek_v3", groups);
    } else {
        fail("model_type " + q(c.model) +
             " has no Mixture-of-Experts routing rule here (known: mixtral, qwen2_moe, qwen3_moe, "
             "olmoe, deepseek_v2, deepseek_v3)");
    }
    check_rule(c, groups, fail);
    return c;
}

MoeConfig hf_moe_config(const std::string& path) {
    const std::string label = one_line(path);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        invalid(label +
                ": not found: a Mixture-of-Experts layer's routing rule (k, normalization, "
                "groups, scaling) comes from the model's config.json; put it beside the weights");
    if (!S_ISREG(st.st_mode)) invalid(label + ": not a regular file");
    if (std::uint64_t(st.st_size) > kMaxConfigBytes)
        invalid(label + ": config is " + std::to_string(st.st_size) + " bytes, over the limit of " +
                std::to_string(kMaxConfigBytes));
    std::ifstream in(path, std::ios::binary);
    std::string text(static_cast<std::size_t>(st.st_size), '\0');
    in.read(text.data(), std::streamsize(text.size()));
    if (!in || in.gcount() != std::streamsize(text.size())) invalid(label + ": cannot be read");
    return hf_moe_config_text(text, label);
}

namespace {

// The metadata keys of a GGUF file's architecture, each read as the type
// the rule needs.
class GgufKeys {
public:
    GgufKeys(const GgufFile& file, std::string arch) : file_(file), arch_(std::move(arch)) {}

    std::string key(const char* name) const { return arch_ + "." + name; }
    [[noreturn]] void fail(const std::string& what) const { invalid("GGUF metadata: " + what); }

    const GgufScalar* find(const std::string& k, const char* type) const {
        const GgufScalar* v = file_.scalar(k);
        if (!v && file_.strings().count(k)) fail(q(k) + " must be " + type + ", found a string");
        return v;
    }
    [[noreturn]] void wrong(const std::string& k, const GgufScalar& v, const char* type) const {
        fail(q(k) + " must be " + type + ", found a " + gguf_value_type_name(v.type));
    }
    std::optional<std::int64_t> integer(const char* name) const {
        const std::string k = key(name);
        const GgufScalar* v = find(k, "an integer");
        if (!v) return std::nullopt;
        if (!v->is_integer()) wrong(k, *v, "an integer");
        if (v->value < 0 || v->value > double(std::int64_t{1} << 53))
            fail(q(k) + " = " + std::to_string(v->value) + " is out of range");
        return std::int64_t(v->value);
    }
    std::int64_t integer(const char* name, const char* meaning) const {
        const auto v = integer(name);
        if (!v) missing(name, meaning);
        return *v;
    }
    std::optional<bool> flag(const char* name) const {
        const std::string k = key(name);
        const GgufScalar* v = find(k, "a bool");
        if (!v) return std::nullopt;
        if (!v->is_bool()) wrong(k, *v, "a bool");
        return v->value != 0;
    }
    std::optional<float> number(const char* name) const {
        const std::string k = key(name);
        const GgufScalar* v = find(k, "a number");
        if (!v) return std::nullopt;
        if (v->is_bool()) wrong(k, *v, "a number");
        if (!std::isfinite(v->value) || std::fabs(v->value) > std::numeric_limits<float>::max())
            fail(q(k) + " = " + std::to_string(v->value) + " is not a finite float");
        return float(v->value);
    }
    [[noreturn]] void missing(const char* name, const char* meaning) const {
        fail(q(key(name)) + " is missing: the " + arch_ + " routing needs it (" + meaning + ")");
    }

private:
    const GgufFile& file_;
    std::string arch_;
};

}  // namespace

MoeConfig gguf_moe_config(const GgufFile& file) {
    const auto fail = [](const std::string& what) { invalid("GGUF metadata: " + what); };
    const auto arch = file.strings().find("general.architecture");
    if (arch == file.strings().end())
        fail("\"general.architecture\" is missing: the model family defines the routing");
    MoeConfig c;
    c.model = arch->second;
    c.source = "GGUF metadata";
    const GgufKeys keys(file, c.model);
    c.experts_key = keys.key("expert_count");
    c.k_key = keys.key("expert_used_count");
    bool grouped = false;
    const std::string a = c.model;
    if (a != "llama" && a != "qwen2moe" && a != "qwen3moe" && a != "olmoe" && a != "deepseek2")
        fail("general.architecture " + q(a) +
             " has no Mixture-of-Experts routing rule here (known: llama (Mixtral), qwen2moe, "
             "qwen3moe, olmoe, deepseek2)");
    c.experts = keys.integer("expert_count", kExperts);
    c.rule.top_k = keys.integer("expert_used_count", kK);
    // llama.cpp's graphs: Mixtral and Qwen3-MoE normalize, Qwen2-MoE and OLMoE do not.
    c.rule.normalize = a == "llama" || a == "qwen3moe";
    c.shared = Presence::optional;
    if (a == "qwen2moe") c.shared_gate = Presence::optional;
    if (a == "deepseek2") {
        const std::int64_t gating = keys.integer("expert_gating_func").value_or(1);
        if (gating != 1 && gating != 2)
            fail(q(keys.key("expert_gating_func")) + " = " + std::to_string(gating) +
                 "; the router scores with 1 (softmax) or 2 (sigmoid)");
        c.rule.score = gating == 2 ? RouterScore::sigmoid : RouterScore::softmax;
        c.rule.normalize = keys.flag("expert_weights_norm").value_or(false);
        const auto scale = keys.number("expert_weights_scale");
        if (!scale) keys.missing("expert_weights_scale", "the routed weights' scale");
        c.rule.scaling = *scale == 0.0f ? 1.0f : *scale;  // llama.cpp: 0 scales nothing
        const std::int64_t n_groups = keys.integer("expert_group_count").value_or(0);
        if (n_groups > 1) {
            c.rule.groups = n_groups;
            c.rule.top_groups =
                keys.integer("expert_group_used_count", "the groups a token chooses from");
            c.rule.group_score =
                c.rule.score == RouterScore::sigmoid ? GroupScore::top2_sum : GroupScore::max;
            grouped = true;
        }
        c.bias = Presence::optional;
        c.shared_experts = keys.integer("expert_shared_count").value_or(0);
    }
    const std::string groups_key = keys.key("expert_group_count"),
                      top_groups_key = keys.key("expert_group_used_count");
    check_rule(c, grouped ? RuleKeys{groups_key.c_str(), top_groups_key.c_str()} : RuleKeys{},
               fail);
    return c;
}

}  // namespace swiglu::detail
