// The C API over the C++ one: every entry point catches everything and turns
// it into a status code plus a thread-local message.
#include <swiglu/swiglu.h>

#include <cctype>
#include <cstring>
#include <iterator>
#include <new>
#include <string>

#include <swiglu/checkpoint.hpp>
#include <swiglu/swiglu.hpp>

#include "common/messages.hpp"

struct swiglu_ffn {
    swiglu::Ffn ffn;
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

swiglu::WeightView view(const char* name, const swiglu_weight& w) {
    // A C caller can store any int in the enum field; reading it as the enum
    // type would be undefined for values outside its range, so read the bits.
    int layout = 0;
    static_assert(sizeof(layout) == sizeof(w.layout), "swiglu_layout is int-sized");
    std::memcpy(&layout, &w.layout, sizeof(layout));
    if (layout != SWIGLU_LAYOUT_OUT_IN && layout != SWIGLU_LAYOUT_IN_OUT)
        invalid(std::string("swiglu_ffn_create: ") + name +
                "->layout must be SWIGLU_LAYOUT_OUT_IN or SWIGLU_LAYOUT_IN_OUT (got " +
                std::to_string(layout) + ")");
    return {w.data, w.rows, w.cols,
            layout == SWIGLU_LAYOUT_OUT_IN ? swiglu::Layout::out_in : swiglu::Layout::in_out};
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
    int dtype = 0;
    static_assert(sizeof(dtype) == sizeof(field), "swiglu_dtype is int-sized");
    std::memcpy(&dtype, &field, sizeof(dtype));
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
