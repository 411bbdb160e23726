// The Python extension `swiglu._swiglu` (pybind11) over the C++ API: an Ffn
// built from numpy arrays or loaded from a checkpoint, a forward that runs
// with the GIL released on the caller's own buffers (no copy), the traced
// intermediates, and swiglu.Error carrying the library's message and status.
// The friendly checks (dtype, shape, contiguity, `out`) live in the Python
// package (swiglu/__init__.py); the ones here are the last line: nothing
// reaches the library that is not float32, C-contiguous and sized to match.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <swiglu/checkpoint.hpp>
#include <swiglu/swiglu.hpp>

namespace py = pybind11;

namespace {

using Array = py::array_t<float, py::array::c_style>;
using AnyArray = py::array_t<float, py::array::c_style | py::array::forcecast>;

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
                return swiglu::load_ffn(path, swiglu::WeightSelector{layer, block, expert},
                                        options);
            },
            py::arg("path"), py::arg("layer"), py::arg("block"), py::arg("expert"),
            py::arg("dtype"), py::arg("threads"), py::arg("down_dtype") = py::none())
        .def_property_readonly("d", &swiglu::Ffn::d)
        .def_property_readonly("f", &swiglu::Ffn::f)
        .def_property_readonly("threads", &swiglu::Ffn::threads)
        .def_property_readonly("implementation",
                               [](const swiglu::Ffn& ffn) {
                                   const swiglu::Implementation i = ffn.implementation();
                                   py::dict out;
                                   out["dtype"] = swiglu::dtype_name(i.dtype);
                                   out["down_dtype"] = swiglu::dtype_name(i.down_dtype);
                                   out["matmul"] = i.matmul;
                                   out["activation"] = i.activation;
                                   out["threads"] = i.threads;
                                   return out;
                               })
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
}
