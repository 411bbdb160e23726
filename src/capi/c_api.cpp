// The C API over the C++ one: every entry point catches everything and turns
// it into a status code plus a thread-local message.
#include <swiglu/swiglu.h>

#include <cctype>
#include <cstring>
#include <iterator>
#include <memory>
#include <new>
#include <string>

#include <swiglu/checkpoint.hpp>
#include <swiglu/moe.hpp>
#include <swiglu/moe_checkpoint.hpp>
#include <swiglu/swiglu.hpp>

#include "common/messages.hpp"

struct swiglu_ffn {
    swiglu::Ffn ffn;
};

struct swiglu_experts {
    swiglu::Experts experts;
};

struct swiglu_moe_layer {
    swiglu::MoeLayer layer;
};

static_assert(SWIGLU_DTYPE_F32 == int(swiglu::Dtype::f32) &&
                  SWIGLU_DTYPE_BF16 == int(swiglu::Dtype::bf16) &&
                  SWIGLU_DTYPE_INT8 == int(swiglu::Dtype::int8) &&
                  SWIGLU_DTYPE_Q8_0 == int(swiglu::Dtype::q8_0) &&
                  SWIGLU_DTYPE_Q4_0 == int(swiglu::Dtype::q4_0) &&
                  SWIGLU_DTYPE_Q4_K == int(swiglu::Dtype::q4_k) &&
                  SWIGLU_DTYPE_Q5_K == int(swiglu::Dtype::q5_k) &&
                  SWIGLU_DTYPE_Q6_K == int(swiglu::Dtype::q6_k),
              "swiglu_dtype mirrors swiglu::Dtype");

namespace {

using swiglu::detail::invalid;

thread_local std::string last_error;

swiglu_status fail(swiglu_status status, std::string message) {
    last_error = std::move(message);
    return status;
}

swiglu_status to_c(swiglu::Status s) {
    switch (s) {
        case swiglu::Status::ok: return SWIGLU_OK;
        case swiglu::Status::invalid_argument: return SWIGLU_INVALID_ARGUMENT;
        case swiglu::Status::out_of_memory: return SWIGLU_OUT_OF_MEMORY;
        case swiglu::Status::unsupported: return SWIGLU_UNSUPPORTED;
        case swiglu::Status::internal: return SWIGLU_INTERNAL;
    }
    return SWIGLU_INTERNAL;
}

// Runs `f` (which returns nothing) and returns how it went as a C status:
// SWIGLU_OK, or whatever it threw mapped to a status, its message kept.
template <class F>
swiglu_status status_of(F&& f) {
    try {
        f();
        last_error.clear();
        return SWIGLU_OK;
    } catch (const swiglu::Error& e) {
        return fail(to_c(e.status()), e.what());
    } catch (const std::bad_alloc&) {
        return fail(SWIGLU_OUT_OF_MEMORY, "out of memory");
    } catch (const std::exception& e) {
        return fail(SWIGLU_INTERNAL, e.what());
    } catch (...) {
        return fail(SWIGLU_INTERNAL, "unknown error");
    }
}

// A C caller can store any int in an enum field; reading it as the enum
// type would be undefined for values outside its range, so read the bits.
template <class Enum>
int bits_of(const Enum& field) {
    int value = 0;
    static_assert(sizeof(value) == sizeof(field), "the C enums are int-sized");
    std::memcpy(&value, &field, sizeof(value));
    return value;
}

// `what`: the field as the message names it, e.g. "swiglu_ffn_create: gate->layout".
swiglu::Layout layout_of(const swiglu_layout& field, const std::string& what) {
    const int layout = bits_of(field);
    if (layout != SWIGLU_LAYOUT_OUT_IN && layout != SWIGLU_LAYOUT_IN_OUT)
        invalid(what + " must be SWIGLU_LAYOUT_OUT_IN or SWIGLU_LAYOUT_IN_OUT (got " +
                std::to_string(layout) + ")");
    return layout == SWIGLU_LAYOUT_OUT_IN ? swiglu::Layout::out_in : swiglu::Layout::in_out;
}

// `who`: the function the message names.
swiglu::WeightView view(const char* name, const swiglu_weight& w,
                        const char* who = "swiglu_ffn_create") {
    return {w.data, w.rows, w.cols,
            layout_of(w.layout, std::string(who) + ": " + name + "->layout")};
}

// "SWIGLU_DTYPE_F32, _BF16, _INT8, _Q8_0 or _Q4_0", from the dtypes' names.
std::string c_dtype_names() {
    std::string out;
    const std::size_t n = std::size(swiglu::kDtypes);
    for (std::size_t i = 0; i < n; ++i) {
        out += i == 0 ? "SWIGLU_DTYPE_" : i + 1 == n ? " or _" : ", _";
        for (const char* c = swiglu::dtype_name(swiglu::kDtypes[i]); *c; ++c)
            out += static_cast<char>(std::toupper(static_cast<unsigned char>(*c)));
    }
    return out;
}

// A dtype field, read as an int for the same reason as the layout above.
swiglu::Dtype dtype_of(const swiglu_dtype& field, const char* name) {
    const int dtype = bits_of(field);
    // The C enum mirrors swiglu::Dtype value for value (asserted above).
    bool known = false;
    for (swiglu::Dtype t : swiglu::kDtypes) known = known || static_cast<int>(t) == dtype;
    if (!known)
        invalid(std::string("options->") + name + " must be " + c_dtype_names() + " (got " +
                std::to_string(dtype) + ")");
    return static_cast<swiglu::Dtype>(dtype);
}

// NULL means the defaults; so does a zeroed struct.
swiglu::Options options_of(const swiglu_options* options) {
    swiglu::Options out;
    if (!options) return out;
    out.threads = options->threads;
    out.dtype = dtype_of(options->dtype, "dtype");
    // down_dtype is read only where it is set: a zeroed one means f32.
    if (options->has_down_dtype != 0) out.down_dtype = dtype_of(options->down_dtype, "down_dtype");
    out.keep_stored = options->keep_stored != 0;
    return out;
}

void require(bool ok, const char* message) {
    if (!ok) invalid(message);
}

// The rule as route() takes it. route() checks the values; here only what C
// adds: the enums' bits, and the fields a zeroed struct leaves at 0 (the
// likeliest mistake, since swiglu_options is zeroed), told how to start one.
swiglu::RouterRule rule_of(const swiglu_router_rule& r, const std::string& who = "swiglu_route") {
    static const std::string start =
        " (start from SWIGLU_ROUTER_RULE_DEFAULT: a zeroed swiglu_router_rule is no rule)";
    if (r.top_k == 0) invalid(who + ": rule->top_k is 0" + start);
    if (r.groups == 0) invalid(who + ": rule->groups is 0; 1 means no groups" + start);
    if (r.top_groups == 0)
        invalid(who + ": rule->top_groups is 0; 1 with groups = 1 means no groups" + start);
    // C++ takes a scaling of 0; here it is what a zeroed field holds, and it
    // would zero every weight, so it is refused rather than run.
    if (r.scaling == 0.0f)
        invalid(who + ": rule->scaling is 0, which zeroes every weight; 1 means none" + start);
    const int score = bits_of(r.score), group_score = bits_of(r.group_score);
    if (score != SWIGLU_ROUTER_SOFTMAX && score != SWIGLU_ROUTER_SIGMOID)
        invalid(who +
                ": rule->score must be SWIGLU_ROUTER_SOFTMAX or SWIGLU_ROUTER_SIGMOID "
                "(got " +
                std::to_string(score) + ")");
    if (group_score != SWIGLU_GROUP_MAX && group_score != SWIGLU_GROUP_TOP2_SUM)
        invalid(who +
                ": rule->group_score must be SWIGLU_GROUP_MAX or SWIGLU_GROUP_TOP2_SUM "
                "(got " +
                std::to_string(group_score) + ")");
    swiglu::RouterRule rule;
    rule.top_k = r.top_k;
    rule.score = score == SWIGLU_ROUTER_SOFTMAX ? swiglu::RouterScore::softmax
                                                : swiglu::RouterScore::sigmoid;
    rule.normalize = r.normalize != 0;
    rule.groups = r.groups;
    rule.top_groups = r.top_groups;
    rule.group_score =
        group_score == SWIGLU_GROUP_MAX ? swiglu::GroupScore::max : swiglu::GroupScore::top2_sum;
    rule.scaling = r.scaling;
    return rule;
}

}  // namespace

extern "C" {

swiglu_status swiglu_ffn_create(const swiglu_weight* gate, const swiglu_weight* up,
                                const swiglu_weight* down, const swiglu_options* options,
                                swiglu_ffn** out) {
    if (out) *out = nullptr;
    return status_of([&] {
        require(out != nullptr, "swiglu_ffn_create: out is NULL");
        require(gate && up && down, "swiglu_ffn_create: gate, up and down must not be NULL");
        *out = new swiglu_ffn{swiglu::Ffn(view("gate", *gate), view("up", *up), view("down", *down),
                                          options_of(options))};
    });
}

swiglu_status swiglu_ffn_create_from_safetensors(const char* path, int64_t layer,
                                                 const char* prefix, const swiglu_options* options,
                                                 swiglu_ffn** out) {
    const swiglu_block_selector selector{layer < 0 ? -1 : layer, -1, prefix};
    return swiglu_ffn_create_from_checkpoint(path, &selector, options, out);
}

swiglu_status swiglu_ffn_create_from_checkpoint(const char* path,
                                                const swiglu_block_selector* selector,
                                                const swiglu_options* options, swiglu_ffn** out) {
    if (out) *out = nullptr;
    return status_of([&] {
        require(out != nullptr, "swiglu_ffn_create_from_checkpoint: out is NULL");
        require(path != nullptr, "swiglu_ffn_create_from_checkpoint: path is NULL");
        swiglu::WeightSelector s;
        if (selector) {
            require(selector->layer >= -1 && selector->expert >= -1,
                    ("swiglu_ffn_create_from_checkpoint: selector layer " +
                     std::to_string(selector->layer) + ", expert " +
                     std::to_string(selector->expert) + ": each must be >= 0, or -1 for any")
                        .c_str());
            s.layer = selector->layer;
            s.expert = selector->expert;
            if (selector->block) s.prefix = selector->block;
        }
        *out = new swiglu_ffn{swiglu::load_ffn(path, s, options_of(options))};
    });
}

swiglu_status swiglu_ffn_forward(const swiglu_ffn* ffn, const float* x, float* y, int64_t tokens) {
    return status_of([&] {
        require(ffn != nullptr, "swiglu_ffn_forward: ffn is NULL");
        ffn->ffn.forward(x, y, tokens);
    });
}

swiglu_status swiglu_ffn_backward(const swiglu_ffn* ffn, const float* x, const float* dy, float* dx,
                                  int64_t tokens, const swiglu_gradients* grads,
                                  const float* saved) {
    return status_of([&] {
        require(ffn != nullptr, "swiglu_ffn_backward: ffn is NULL");
        swiglu::Gradients g;
        if (grads) g = {grads->gate, grads->up, grads->down, grads->accumulate != 0};
        ffn->ffn.backward(x, dy, dx, tokens, g, saved);
    });
}

swiglu_status swiglu_ffn_forward_for_backward(const swiglu_ffn* ffn, const float* x, float* y,
                                              float* saved, int64_t tokens) {
    return status_of([&] {
        require(ffn != nullptr, "swiglu_ffn_forward_for_backward: ffn is NULL");
        ffn->ffn.forward_for_backward(x, y, saved, tokens);
    });
}

swiglu_status swiglu_ffn_dims(const swiglu_ffn* ffn, int64_t* d, int64_t* f) {
    return status_of([&] {
        require(ffn != nullptr, "swiglu_ffn_dims: ffn is NULL");
        if (d) *d = ffn->ffn.d();
        if (f) *f = ffn->ffn.f();
    });
}

void swiglu_ffn_destroy(swiglu_ffn* ffn) { delete ffn; }

swiglu_status swiglu_route(const float* logits, int64_t tokens, int64_t experts,
                           const swiglu_router_rule* rule, const float* bias, int32_t* ids,
                           float* weights) {
    return status_of([&] {
        require(rule != nullptr,
                "swiglu_route: rule is NULL (start from SWIGLU_ROUTER_RULE_DEFAULT)");
        swiglu::route(logits, tokens, experts, rule_of(*rule), bias, ids, weights);
    });
}

swiglu_status swiglu_experts_create_stacked(const float* gate, const float* up, const float* down,
                                            int64_t experts, int64_t d, int64_t f,
                                            swiglu_layout layout, const swiglu_options* options,
                                            swiglu_experts** out) {
    if (out) *out = nullptr;
    return status_of([&] {
        require(out != nullptr, "swiglu_experts_create_stacked: out is NULL");
        const swiglu::Layout l = layout_of(layout, "swiglu_experts_create_stacked: layout");
        *out = new swiglu_experts{
            swiglu::Experts::stacked(gate, up, down, experts, d, f, l, options_of(options))};
    });
}

swiglu_status swiglu_experts_forward(const swiglu_experts* experts, const float* x, float* y,
                                     int64_t tokens, const int32_t* ids, const float* weights,
                                     int64_t k) {
    return status_of([&] {
        require(experts != nullptr, "swiglu_experts_forward: experts is NULL");
        experts->experts.forward(x, y, tokens, ids, weights, k);
    });
}

swiglu_status swiglu_experts_dims(const swiglu_experts* experts, int64_t* count, int64_t* d,
                                  int64_t* f) {
    return status_of([&] {
        require(experts != nullptr, "swiglu_experts_dims: experts is NULL");
        if (count) *count = experts->experts.experts();
        if (d) *d = experts->experts.d();
        if (f) *f = experts->experts.f();
    });
}

void swiglu_experts_destroy(swiglu_experts* experts) { delete experts; }

swiglu_status swiglu_moe_layer_create_from_checkpoint(const char* path, int64_t layer,
                                                      const swiglu_options* options,
                                                      swiglu_moe_layer** out) {
    if (out) *out = nullptr;
    return status_of([&] {
        require(out != nullptr, "swiglu_moe_layer_create_from_checkpoint: out is NULL");
        require(path != nullptr, "swiglu_moe_layer_create_from_checkpoint: path is NULL");
        require(layer >= 0, ("swiglu_moe_layer_create_from_checkpoint: layer must be >= 0 (got " +
                             std::to_string(layer) + ")")
                                .c_str());
        *out = new swiglu_moe_layer{swiglu::load_moe_layer(path, layer, options_of(options))};
    });
}

swiglu_status swiglu_moe_layer_create(const swiglu_weight* router, const swiglu_router_rule* rule,
                                      const float* bias, const float* gate, const float* up,
                                      const float* down, int64_t experts, int64_t d, int64_t f,
                                      swiglu_layout layout, const swiglu_moe_shared* shared,
                                      const swiglu_options* options, swiglu_moe_layer** out) {
    if (out) *out = nullptr;
    static const char* const who = "swiglu_moe_layer_create";
    return status_of([&] {
        require(out != nullptr, "swiglu_moe_layer_create: out is NULL");
        require(router != nullptr, "swiglu_moe_layer_create: router is NULL");
        require(rule != nullptr,
                "swiglu_moe_layer_create: rule is NULL (start from SWIGLU_ROUTER_RULE_DEFAULT)");
        const swiglu::RouterRule r = rule_of(*rule, who);
        const swiglu::WeightView router_view = view("router", *router, who);
        const swiglu::Options o = options_of(options);
        swiglu::Experts routed = swiglu::Experts::stacked(
            gate, up, down, experts, d, f, layout_of(layout, "swiglu_moe_layer_create: layout"), o);
        std::unique_ptr<swiglu::Ffn> block;
        if (shared)
            block = std::make_unique<swiglu::Ffn>(view("shared->gate", shared->gate, who),
                                                  view("shared->up", shared->up, who),
                                                  view("shared->down", shared->down, who), o);
        *out = new swiglu_moe_layer{swiglu::MoeLayer(router_view, r, std::move(routed), bias,
                                                     std::move(block),
                                                     shared ? shared->expert_gate : nullptr)};
    });
}

swiglu_status swiglu_moe_layer_forward(const swiglu_moe_layer* layer, const float* x, float* y,
                                       int64_t tokens) {
    return status_of([&] {
        require(layer != nullptr, "swiglu_moe_layer_forward: layer is NULL");
        layer->layer.forward(x, y, tokens);
    });
}

swiglu_status swiglu_moe_layer_route(const swiglu_moe_layer* layer, const float* x, int64_t tokens,
                                     int32_t* ids, float* weights) {
    return status_of([&] {
        require(layer != nullptr, "swiglu_moe_layer_route: layer is NULL");
        layer->layer.route(x, tokens, ids, weights);
    });
}

swiglu_status swiglu_moe_layer_dims(const swiglu_moe_layer* layer, int64_t* experts, int64_t* top_k,
                                    int64_t* d, int64_t* f, int* has_shared) {
    return status_of([&] {
        require(layer != nullptr, "swiglu_moe_layer_dims: layer is NULL");
        const swiglu::MoeLayer& l = layer->layer;
        if (experts) *experts = l.routed_experts();
        if (top_k) *top_k = l.rule().top_k;
        if (d) *d = l.d();
        if (f) *f = l.experts().f();
        if (has_shared) *has_shared = l.shared() != nullptr ? 1 : 0;
    });
}

void swiglu_moe_layer_destroy(swiglu_moe_layer* layer) { delete layer; }

const char* swiglu_last_error(void) { return last_error.c_str(); }

const char* swiglu_status_name(swiglu_status status) {
    switch (status) {
        case SWIGLU_OK: return "SWIGLU_OK";
        case SWIGLU_INVALID_ARGUMENT: return "SWIGLU_INVALID_ARGUMENT";
        case SWIGLU_OUT_OF_MEMORY: return "SWIGLU_OUT_OF_MEMORY";
        case SWIGLU_UNSUPPORTED: return "SWIGLU_UNSUPPORTED";
        case SWIGLU_INTERNAL: return "SWIGLU_INTERNAL";
    }
    return "SWIGLU_UNKNOWN_STATUS";
}

const char* swiglu_version(void) { return swiglu::version(); }

}  // extern "C"
