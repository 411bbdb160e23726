// The Python extension `swiglu._swiglu` (pybind11) over the C++ API: an Ffn
// built from numpy arrays or loaded from a checkpoint, a forward that runs
// with the GIL released on the caller's own buffers (no copy), the traced
// intermediates, the mixture-of-experts faces (route, Experts, MoeLayer),
// and swiglu.Error carrying the library's message and status.
// The friendly checks (dtype, shape, contiguity, `out`) live in the Python
// package (swiglu/__init__.py); the ones here are the last line: nothing
// reaches the library that is not float32, C-contiguous and sized to match.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <swiglu/checkpoint.hpp>
#include <swiglu/moe.hpp>
#include <swiglu/moe_checkpoint.hpp>
#include <swiglu/swiglu.hpp>

namespace py = pybind11;

namespace {

using Array = py::array_t<float, py::array::c_style>;
using AnyArray = py::array_t<float, py::array::c_style | py::array::forcecast>;
using IdArray = py::array_t<std::int32_t, py::array::c_style>;

const char* status_name(swiglu::Status s) {
    switch (s) {
        case swiglu::Status::ok: return "ok";
        case swiglu::Status::invalid_argument: return "invalid_argument";
        case swiglu::Status::out_of_memory: return "out_of_memory";
        case swiglu::Status::unsupported: return "unsupported";
        case swiglu::Status::internal: return "internal";
    }
    return "internal";
}

// The checkpoint loader's messages name its selectors as the CLI spells
// them (src/io/block_selection.cpp, moe_resolution.cpp: "choose one with the
// layer selector (--layer N)"); swiglu.load's callers pass layer=, expert=
// and block=, so its errors say those.
std::string in_python_words(std::string message) {
    static const std::pair<const char*, const char*> kWords[] = {
        {"--layer N --expert E", "layer=N, expert=E"},
        {"--layer N", "layer=N"},
        {"--expert E", "expert=E"},
        {"--block PREFIX", "block=PREFIX"},
    };
    for (const auto& [cli, python] : kWords)
        for (std::size_t at = message.find(cli); at != std::string::npos;
             at = message.find(cli, at + std::char_traits<char>::length(python)))
            message.replace(at, std::char_traits<char>::length(cli), python);
    return message;
}

// load(): the library's call, its swiglu::Error reworded for Python.
template <class F>
auto loading(F&& load) -> decltype(load()) {
    try {
        return load();
    } catch (const swiglu::Error& e) {
        throw swiglu::Error(e.status(), in_python_words(e.what()));
    }
}

swiglu::Dtype dtype_of(const std::string& name) {
    swiglu::Dtype d;
    if (swiglu::dtype_from_name(name, &d)) return d;
    throw py::value_error("dtype must be one of " + swiglu::dtype_names() + " (got '" + name +
                          "')");
}

// Options from Python's dtype= and down_dtype=; "stored" (checkpoints
// only) keeps each weight's stored format, dtype f32 for the others.
swiglu::Options options_of(const std::string& dtype, const std::optional<std::string>& down_dtype,
                           int threads, bool checkpoint) {
    swiglu::Options o;
    o.threads = threads;
    if (checkpoint && dtype == "stored")
        o.keep_stored = true;
    else if (dtype == "stored")
        throw py::value_error(
            "dtype 'stored' keeps a checkpoint's formats: it is for swiglu.load, not arrays");
    else
        o.dtype = dtype_of(dtype);
    if (down_dtype) o.down_dtype = dtype_of(*down_dtype);
    return o;
}

swiglu::Layout layout_of(const std::string& name) {
    if (name == "out_in") return swiglu::Layout::out_in;
    if (name == "in_out") return swiglu::Layout::in_out;
    throw py::value_error(
        "layout must be 'out_in' (PyTorch, (out, in)) or 'in_out' ((in, out)), got '" + name + "'");
}

swiglu::WeightView view(const char* name, const AnyArray& w, swiglu::Layout layout) {
    if (w.ndim() != 2)
        throw py::value_error(std::string(name) + " must be 2-D, got " + std::to_string(w.ndim()) +
                              " dimensions");
    return {w.data(), w.shape(0), w.shape(1), layout};
}

// Rows of x (..., d): the library checks d against the block.
std::int64_t rows_of(const swiglu::Ffn& ffn, const Array& x) {
    if (x.ndim() < 1 || x.shape(x.ndim() - 1) != ffn.d())
        throw py::value_error("x must have shape (..., " + std::to_string(ffn.d()) + ")");
    return x.size() / ffn.d();
}

py::dict implementation_of(const swiglu::Implementation& i) {
    py::dict out;
    out["dtype"] = swiglu::dtype_name(i.dtype);
    out["down_dtype"] = swiglu::dtype_name(i.down_dtype);
    out["matmul"] = i.matmul;
    out["activation"] = i.activation;
    out["threads"] = i.threads;
    return out;
}

std::string shape_text(const py::ssize_t* shape, py::ssize_t ndim) {
    std::string out = "(";
    for (py::ssize_t i = 0; i < ndim; ++i)
        out += (i ? ", " : "") + std::to_string(shape[i]) + (ndim == 1 ? "," : "");
    return out + ")";
}

// ---- Mixture of experts -------------------------------------------------

swiglu::RouterRule rule_of(std::int64_t k, const std::string& score, bool normalize,
                           std::int64_t groups, std::int64_t top_groups,
                           const std::string& group_score, double scaling) {
    swiglu::RouterRule r;
    r.top_k = k;
    if (score == "softmax")
        r.score = swiglu::RouterScore::softmax;
    else if (score == "sigmoid")
        r.score = swiglu::RouterScore::sigmoid;
    else
        throw py::value_error("score must be 'softmax' or 'sigmoid', got '" + score + "'");
    r.normalize = normalize;
    r.groups = groups;
    r.top_groups = top_groups;
    if (group_score == "max")
        r.group_score = swiglu::GroupScore::max;
    else if (group_score == "top2_sum")
        r.group_score = swiglu::GroupScore::top2_sum;
    else
        throw py::value_error("group_score must be 'max' or 'top2_sum', got '" + group_score + "'");
    // A double beyond float's range becomes an infinity (converting it would
    // be undefined), which route() then refuses by name.
    constexpr float inf = std::numeric_limits<float>::infinity();
    r.scaling = !std::isfinite(scaling) || std::abs(scaling) <= std::numeric_limits<float>::max()
                    ? static_cast<float>(scaling)
                : scaling > 0 ? inf
                              : -inf;
    return r;
}

struct StackedDims {
    std::int64_t experts, d, f;
};

// (E, d, f) of three stacked arrays, each checked against the layout's shapes:
// out_in gate, up (E, f, d), down (E, d, f); in_out gate, up (E, d, f), down (E, f, d).
StackedDims stacked_dims(const AnyArray& gate, const AnyArray& up, const AnyArray& down,
                         swiglu::Layout layout) {
    const bool out_in = layout == swiglu::Layout::out_in;
    const char* gate_shape = out_in ? "(E, f, d)" : "(E, d, f)";
    const char* down_shape = out_in ? "(E, d, f)" : "(E, f, d)";
    const std::string for_layout =
        std::string(" for layout '") + (out_in ? "out_in" : "in_out") + "'";
    for (auto [name, w, shape] :
         {std::make_tuple("w_gate", &gate, gate_shape), std::make_tuple("w_up", &up, gate_shape),
          std::make_tuple("w_down", &down, down_shape)})
        if (w->ndim() != 3)
            throw py::value_error(std::string(name) + " must be 3-D " + shape + for_layout +
                                  ", got " + std::to_string(w->ndim()) + " dimensions");
    const StackedDims dims{gate.shape(0), out_in ? gate.shape(2) : gate.shape(1),
                           out_in ? gate.shape(1) : gate.shape(2)};
    const py::ssize_t want_gate[3] = {gate.shape(0), gate.shape(1), gate.shape(2)};
    const py::ssize_t want_down[3] = {dims.experts, out_in ? dims.d : dims.f,
                                      out_in ? dims.f : dims.d};
    if (!std::equal(want_gate, want_gate + 3, up.shape()))
        throw py::value_error(std::string("w_up must have w_gate's shape ") + gate_shape + " = " +
                              shape_text(want_gate, 3) + for_layout + ", got " +
                              shape_text(up.shape(), 3));
    if (!std::equal(want_down, want_down + 3, down.shape()))
        throw py::value_error(std::string("w_down must have shape ") + down_shape + " = " +
                              shape_text(want_down, 3) + for_layout + ", got " +
                              shape_text(down.shape(), 3));
    return dims;
}

// Rows of x (..., d) for a MoE call.
std::int64_t moe_rows(std::int64_t d, const Array& x) {
    if (x.ndim() < 1 || x.shape(x.ndim() - 1) != d)
        throw py::value_error("x must have shape (..., " + std::to_string(d) + ")");
    return x.size() / d;
}

void check_out(const Array& x, Array& out) {
    if (out.ndim() != x.ndim() || !std::equal(x.shape(), x.shape() + x.ndim(), out.shape()))
        throw py::value_error("out must have x's shape");
    if (!out.writeable()) throw py::value_error("out is read-only");
}

// (ids, weights) of shape x's leading dimensions + (k,), new.
std::tuple<IdArray, Array> route_outputs(const py::ssize_t* lead, py::ssize_t ndim,
                                         std::int64_t k) {
    std::vector<py::ssize_t> shape(lead, lead + ndim);
    shape.back() = static_cast<py::ssize_t>(k);
    return {IdArray(shape), Array(shape)};
}

// Experts::forward on ids of int32 (read in place) or int64 (narrowed here,
// each checked as the library checks them, so that either dtype gets the
// library's error for an id that is not an expert). GIL released.
void experts_forward(const swiglu::Experts& e, const Array& x, const py::array& ids,
                     const Array& weights, Array& out) {
    const std::int64_t rows = moe_rows(e.d(), x);
    const py::ssize_t nd = x.ndim();
    if (ids.ndim() != nd || !std::equal(x.shape(), x.shape() + nd - 1, ids.shape()))
        throw py::value_error("ids must have shape x.shape[:-1] + (k,)");
    if (weights.ndim() != nd || !std::equal(ids.shape(), ids.shape() + nd, weights.shape()))
        throw py::value_error("weights must have ids' shape");
    if (!(ids.flags() & py::array::c_style)) throw py::value_error("ids must be C-contiguous");
    const bool wide = ids.dtype().is(py::dtype::of<std::int64_t>());
    if (!wide && !ids.dtype().is(py::dtype::of<std::int32_t>()))
        throw py::type_error("ids must be int32 or int64");
    check_out(x, out);
    const std::int64_t k = ids.shape(nd - 1), E = e.experts();
    const float *in = x.data(), *w = weights.data();
    float* y = out.mutable_data();
    const void* raw = ids.data();
    py::gil_scoped_release unlocked;
    if (!wide) return e.forward(in, y, rows, static_cast<const std::int32_t*>(raw), w, k);
    const auto* id64 = static_cast<const std::int64_t*>(raw);
    std::vector<std::int32_t> narrow(static_cast<std::size_t>(rows * k));
    for (std::size_t i = 0; i < narrow.size(); ++i) {
        if (id64[i] < 0 || id64[i] >= E)
            throw swiglu::Error(
                swiglu::Status::invalid_argument,
                "Experts::forward: ids[t = " + std::to_string(i / k) +
                    ", j = " + std::to_string(i % k) + "] = " + std::to_string(id64[i]) +
                    " is not an expert: ids must be in [0, " + std::to_string(E) + ")");
        narrow[i] = static_cast<std::int32_t>(id64[i]);
    }
    e.forward(in, y, rows, narrow.data(), w, k);
}

}  // namespace

PYBIND11_MODULE(_swiglu, m) {
    m.doc() = "swiglu: the SwiGLU feed-forward block of LLaMA-style transformers, on the CPU";

    static py::exception<swiglu::Error> error(m, "Error");
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const swiglu::Error& e) {
            // An instance carrying the status: swiglu.Error(message).status
            py::object instance = py::reinterpret_borrow<py::object>(error)(e.what());
            instance.attr("status") = status_name(e.status());
            PyErr_SetObject(error.ptr(), instance.ptr());
        }
    });

    m.def("version", [] { return std::string(swiglu::version()); });
    m.attr("__version__") = std::string(swiglu::version());
    m.def("cpu_features", &swiglu::cpu_features);
    // Every dtype's name, in the library's order (the format table's).
    m.def("_dtypes", [] {
        std::vector<std::string> names;
        for (swiglu::Dtype d : swiglu::kDtypes) names.emplace_back(swiglu::dtype_name(d));
        return names;
    });

    py::class_<swiglu::Ffn>(m, "_Ffn")
        .def(py::init([](const AnyArray& gate, const AnyArray& up, const AnyArray& down,
                         const std::string& layout, const std::string& dtype, int threads,
                         const std::optional<std::string>& down_dtype) {
                 const swiglu::Layout l = layout_of(layout);
                 return swiglu::Ffn(view("w_gate", gate, l), view("w_up", up, l),
                                    view("w_down", down, l),
                                    options_of(dtype, down_dtype, threads, false));
             }),
             py::arg("w_gate"), py::arg("w_up"), py::arg("w_down"), py::arg("layout"),
             py::arg("dtype"), py::arg("threads"), py::arg("down_dtype") = py::none())
        .def_static(
            "load",
            [](const std::string& path, std::int64_t layer, const std::string& block,
               std::int64_t expert, const std::string& dtype, int threads,
               const std::optional<std::string>& down_dtype) {
                const swiglu::Options options = options_of(dtype, down_dtype, threads, true);
                py::gil_scoped_release unlocked;  // reading and packing take a while
                return loading([&] {
                    return swiglu::load_ffn(path, swiglu::WeightSelector{layer, block, expert},
                                            options);
                });
            },
            py::arg("path"), py::arg("layer"), py::arg("block"), py::arg("expert"),
            py::arg("dtype"), py::arg("threads"), py::arg("down_dtype") = py::none())
        .def_property_readonly("d", &swiglu::Ffn::d)
        .def_property_readonly("f", &swiglu::Ffn::f)
        .def_property_readonly("threads", &swiglu::Ffn::threads)
        .def_property_readonly(
            "implementation",
            [](const swiglu::Ffn& ffn) { return implementation_of(ffn.implementation()); })
        // y = block(x) into `out` (may be x): both float32, C-contiguous,
        // the same shape; checked by the package first.
        .def(
            "forward_into",
            [](const swiglu::Ffn& ffn, const Array& x, Array& out) {
                const std::int64_t rows = rows_of(ffn, x);
                if (out.ndim() != x.ndim() ||
                    !std::equal(x.shape(), x.shape() + x.ndim(), out.shape()))
                    throw py::value_error("out must have x's shape");
                if (!out.writeable()) throw py::value_error("out is read-only");
                const float* in = x.data();
                float* y = out.mutable_data();
                py::gil_scoped_release unlocked;
                ffn.forward(in, y, rows);
            },
            py::arg("x").noconvert(), py::arg("out").noconvert())
        // The same call `calls` times in C++ (GIL released), for measuring
        // what the binding adds per call (bench/python_overhead.py).
        .def(
            "_forward_loop",
            [](const swiglu::Ffn& ffn, const Array& x, Array& out, int calls) {
                const std::int64_t rows = rows_of(ffn, x);
                if (out.size() != x.size()) throw py::value_error("out must have x's shape");
                const float* in = x.data();
                float* y = out.mutable_data();
                py::gil_scoped_release unlocked;
                for (int i = 0; i < calls; ++i) ffn.forward(in, y, rows);
            },
            py::arg("x").noconvert(), py::arg("out").noconvert(), py::arg("calls"))
        // The backward's entry points, on the caller's buffers (checked by
        // the package first; the library checks sizes and overlaps again).
        .def(
            "forward_for_backward_into",
            [](const swiglu::Ffn& ffn, const Array& x, Array& y, Array& saved) {
                const std::int64_t rows = rows_of(ffn, x);
                if (y.size() != x.size()) throw py::value_error("y must have x's shape");
                if (saved.size() != ffn.saved_floats(rows))
                    throw py::value_error("saved must hold 2 * tokens * f floats");
                const float* in = x.data();
                float* out = y.mutable_data();
                float* keep = saved.mutable_data();
                py::gil_scoped_release unlocked;
                ffn.forward_for_backward(in, out, keep, rows);
            },
            py::arg("x").noconvert(), py::arg("y").noconvert(), py::arg("saved").noconvert())
        .def(
            "backward_into",
            [](const swiglu::Ffn& ffn, const Array& x, const Array& dy, Array& dx,
               std::optional<Array> gate, std::optional<Array> up, std::optional<Array> down,
               bool accumulate, std::optional<Array> saved) {
                const std::int64_t rows = rows_of(ffn, x);
                if (dy.size() != x.size() || dx.size() != x.size())
                    throw py::value_error("dy and dx must have x's shape");
                const std::int64_t df = ffn.d() * ffn.f();
                auto grad = [&](std::optional<Array>& g, const char* name) -> float* {
                    if (!g) return nullptr;
                    if (g->size() != df)
                        throw py::value_error(std::string(name) + " must hold d * f floats");
                    return g->mutable_data();
                };
                const swiglu::Gradients grads{grad(gate, "gate"), grad(up, "up"),
                                              grad(down, "down"), accumulate};
                if (saved && saved->size() != ffn.saved_floats(rows))
                    throw py::value_error("saved must hold 2 * tokens * f floats");
                const float* kept = saved ? saved->data() : nullptr;
                const float *in = x.data(), *d_out = dy.data();
                float* d_in = dx.mutable_data();
                py::gil_scoped_release unlocked;
                ffn.backward(in, d_out, d_in, rows, grads, kept);
            },
            py::arg("x").noconvert(), py::arg("dy").noconvert(), py::arg("dx").noconvert(),
            py::arg("gate").noconvert(), py::arg("up").noconvert(), py::arg("down").noconvert(),
            py::arg("accumulate"), py::arg("saved").noconvert())
        .def_property_readonly("layouts",
                               [](const swiglu::Ffn& ffn) {
                                   auto name = [&](swiglu::Ffn::Weight w) {
                                       return ffn.layout(w) == swiglu::Layout::out_in ? "out_in"
                                                                                      : "in_out";
                                   };
                                   return py::make_tuple(name(swiglu::Ffn::Weight::gate),
                                                         name(swiglu::Ffn::Weight::up),
                                                         name(swiglu::Ffn::Weight::down));
                               })
        .def(
            "trace",
            [](const swiglu::Ffn& ffn, const Array& x) {
                const std::int64_t rows = rows_of(ffn, x);
                std::vector<float> y(static_cast<std::size_t>(x.size()));
                swiglu::Trace t;
                {
                    py::gil_scoped_release unlocked;
                    ffn.forward_traced(x.data(), y.data(), rows, t);
                }
                std::vector<py::ssize_t> shape(x.shape(), x.shape() + x.ndim());
                auto as_array = [&](const std::vector<float>& v, std::int64_t width) {
                    shape.back() = width;
                    Array a(shape);
                    std::copy(v.begin(), v.end(), a.mutable_data());
                    return a;
                };
                py::dict out;
                out["ffn.gate"] = as_array(t.gate, ffn.f());
                out["ffn.up"] = as_array(t.up, ffn.f());
                out["ffn.act"] = as_array(t.act, ffn.f());
                out["ffn.down"] = as_array(t.down, ffn.d());
                return out;
            },
            py::arg("x").noconvert());

    // ---- Mixture of experts: checked by the package first, as the Ffn is.

    m.def(
        "_route",
        [](const Array& logits, const std::optional<Array>& bias, std::int64_t k,
           const std::string& score, bool normalize, std::int64_t groups, std::int64_t top_groups,
           const std::string& group_score, double scaling) {
            if (logits.ndim() < 1) throw py::value_error("logits must have shape (..., E)");
            const std::int64_t E = logits.shape(logits.ndim() - 1);
            const swiglu::RouterRule rule =
                rule_of(k, score, normalize, groups, top_groups, group_score, scaling);
            // The rule against E first (route() checks it for no tokens too),
            // so that a bad k is its error, not one of allocating the outputs.
            swiglu::route(nullptr, 0, E, rule, nullptr, nullptr, nullptr);
            if (bias && (bias->ndim() != 1 || bias->shape(0) != E))
                throw py::value_error("bias must have shape (" + std::to_string(E) + ",)");
            auto [ids, weights] = route_outputs(logits.shape(), logits.ndim(), k);
            const std::int64_t tokens = logits.size() / E;
            const float *in = logits.data(), *b = bias ? bias->data() : nullptr;
            std::int32_t* i = ids.mutable_data();
            float* w = weights.mutable_data();
            {
                py::gil_scoped_release unlocked;
                swiglu::route(in, tokens, E, rule, b, i, w);
            }
            return py::make_tuple(ids, weights);
        },
        py::arg("logits").noconvert(), py::arg("bias").noconvert(), py::arg("k"), py::arg("score"),
        py::arg("normalize"), py::arg("groups"), py::arg("top_groups"), py::arg("group_score"),
        py::arg("scaling"));

    py::class_<swiglu::Experts>(m, "_Experts")
        .def(py::init([](const AnyArray& gate, const AnyArray& up, const AnyArray& down,
                         const std::string& layout, const std::string& dtype, int threads,
                         const std::optional<std::string>& down_dtype) {
                 const swiglu::Layout l = layout_of(layout);
                 const StackedDims s = stacked_dims(gate, up, down, l);
                 const swiglu::Options options = options_of(dtype, down_dtype, threads, false);
                 py::gil_scoped_release unlocked;  // packing E experts takes a while
                 return swiglu::Experts::stacked(gate.data(), up.data(), down.data(), s.experts,
                                                 s.d, s.f, l, options);
             }),
             py::arg("w_gate"), py::arg("w_up"), py::arg("w_down"), py::arg("layout"),
             py::arg("dtype"), py::arg("threads"), py::arg("down_dtype") = py::none())
        .def_property_readonly("experts", &swiglu::Experts::experts)
        .def_property_readonly("d", &swiglu::Experts::d)
        .def_property_readonly("f", &swiglu::Experts::f)
        .def_property_readonly("threads", &swiglu::Experts::threads)
        .def_property_readonly(
            "implementation",
            [](const swiglu::Experts& e) { return implementation_of(e.implementation()); })
        // y = experts(x, ids, weights) into `out` (may be x).
        .def("forward_into", &experts_forward, py::arg("x").noconvert(), py::arg("ids").noconvert(),
             py::arg("weights").noconvert(), py::arg("out").noconvert());

    py::class_<swiglu::MoeLayer>(m, "_MoeLayer")
        // A checkpoint's MoE layer N (swiglu/moe_checkpoint.hpp), and whether
        // layer N has experts at all (swiglu.load picks the layer or the block).
        .def_static(
            "load",
            [](const std::string& path, std::int64_t layer, const std::string& dtype, int threads,
               const std::optional<std::string>& down_dtype) {
                const swiglu::Options options = options_of(dtype, down_dtype, threads, true);
                py::gil_scoped_release unlocked;  // reading and packing take a while
                return loading([&] { return swiglu::load_moe_layer(path, layer, options); });
            },
            py::arg("path"), py::arg("layer"), py::arg("dtype"), py::arg("threads"),
            py::arg("down_dtype") = py::none())
        .def_static(
            "is_moe_layer",
            [](const std::string& path, std::int64_t layer) {
                return loading([&] { return swiglu::is_moe_layer(path, layer); });
            },
            py::arg("path"), py::arg("layer"))
        .def(py::init([](const AnyArray& router, const AnyArray& gate, const AnyArray& up,
                         const AnyArray& down, const std::string& layout, const std::string& dtype,
                         int threads, const std::optional<std::string>& down_dtype, std::int64_t k,
                         const std::string& score, bool normalize, std::int64_t groups,
                         std::int64_t top_groups, const std::string& group_score, double scaling,
                         const std::optional<AnyArray>& bias,
                         const std::optional<std::tuple<AnyArray, AnyArray, AnyArray>>& shared,
                         const std::optional<AnyArray>& shared_gate) {
                 const swiglu::Layout l = layout_of(layout);
                 const StackedDims s = stacked_dims(gate, up, down, l);
                 const swiglu::Options options = options_of(dtype, down_dtype, threads, false);
                 const swiglu::RouterRule rule =
                     rule_of(k, score, normalize, groups, top_groups, group_score, scaling);
                 const swiglu::WeightView r = view("router", router, l);
                 // The layer copies E bias floats and d gate floats from
                 // bare pointers: their sizes are checked here.
                 if (bias && bias->size() != s.experts)
                     throw py::value_error("bias must hold E = " + std::to_string(s.experts) +
                                           " numbers, got " + std::to_string(bias->size()));
                 if (shared_gate && shared_gate->size() != s.d)
                     throw py::value_error("shared_gate must hold d = " + std::to_string(s.d) +
                                           " numbers, got " + std::to_string(shared_gate->size()));
                 std::optional<swiglu::WeightView> sg, su, sd;
                 if (shared) {
                     sg = view("shared w_gate", std::get<0>(*shared), l);
                     su = view("shared w_up", std::get<1>(*shared), l);
                     sd = view("shared w_down", std::get<2>(*shared), l);
                 }
                 py::gil_scoped_release unlocked;  // packing takes a while
                 std::unique_ptr<swiglu::Ffn> block;
                 if (shared) block = std::make_unique<swiglu::Ffn>(*sg, *su, *sd, options);
                 return swiglu::MoeLayer(
                     r, rule,
                     swiglu::Experts::stacked(gate.data(), up.data(), down.data(), s.experts, s.d,
                                              s.f, l, options),
                     bias ? bias->data() : nullptr, std::move(block),
                     shared_gate ? shared_gate->data() : nullptr);
             }),
             py::arg("router"), py::arg("w_gate"), py::arg("w_up"), py::arg("w_down"),
             py::arg("layout"), py::arg("dtype"), py::arg("threads"), py::arg("down_dtype"),
             py::arg("k"), py::arg("score"), py::arg("normalize"), py::arg("groups"),
             py::arg("top_groups"), py::arg("group_score"), py::arg("scaling"), py::arg("bias"),
             py::arg("shared"), py::arg("shared_gate"))
        .def_property_readonly("d", &swiglu::MoeLayer::d)
        .def_property_readonly("k", [](const swiglu::MoeLayer& l) { return l.rule().top_k; })
        .def_property_readonly("has_shared",
                               [](const swiglu::MoeLayer& l) { return l.shared() != nullptr; })
        // The layer's own experts, not a copy: the reference keeps the layer alive.
        .def_property_readonly("experts", &swiglu::MoeLayer::experts,
                               py::return_value_policy::reference_internal)
        .def(
            "route",
            [](const swiglu::MoeLayer& layer, const Array& x) {
                const std::int64_t rows = moe_rows(layer.d(), x);
                auto [ids, weights] = route_outputs(x.shape(), x.ndim(), layer.rule().top_k);
                const float* in = x.data();
                std::int32_t* i = ids.mutable_data();
                float* w = weights.mutable_data();
                {
                    py::gil_scoped_release unlocked;
                    layer.route(in, rows, i, w);
                }
                return py::make_tuple(ids, weights);
            },
            py::arg("x").noconvert())
        .def(
            "forward_into",
            [](const swiglu::MoeLayer& layer, const Array& x, Array& out) {
                const std::int64_t rows = moe_rows(layer.d(), x);
                check_out(x, out);
                const float* in = x.data();
                float* y = out.mutable_data();
                py::gil_scoped_release unlocked;
                layer.forward(in, y, rows);
            },
            py::arg("x").noconvert(), py::arg("out").noconvert());
}
