// A thin layer over oneDNN: one engine, matmul primitives created once with
// prepacked weights and a user scratchpad, executed without building any
// oneDNN object on the hot path.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <string>

namespace swiglu::detail {

// The process-wide CPU engine.
const dnnl::engine& cpu_engine();

// oneDNN runs single-threaded on this thread from now on: for threads that
// only ever run oneDNN inside our own pool (its workers), see OmpSerialScope.
void serialize_onednn_on_this_thread();

// While alive, oneDNN runs single-threaded on this thread. Debian's oneDNN
// parallelises with OpenMP and fixes its thread count when a primitive is
// created; our own pool owns the cores, so every primitive is created and
// executed with one OpenMP thread (never both pools at once).
class OmpSerialScope {
public:
    OmpSerialScope();
    ~OmpSerialScope();
    OmpSerialScope(const OmpSerialScope&) = delete;
    OmpSerialScope& operator=(const OmpSerialScope&) = delete;

private:
    int saved_;
};

// The data types of one matmul: source, weights, destination.
struct MatmulTypes {
    dnnl::memory::data_type src = dnnl::memory::data_type::f32;
    dnnl::memory::data_type weights = dnnl::memory::data_type::f32;
    dnnl::memory::data_type dst = dnnl::memory::data_type::f32;
};

// (rows x k) @ (k x n) -> (rows x n), all row-major and dense. (A
// strided destination would let a tile land straight in y, but oneDNN 2.6's
// brgemm then declines and gemm:jit, which repacks weights per call, runs.)
struct MatmulKernel {
    dnnl::matmul primitive;
    dnnl::memory::desc src;
    dnnl::memory::desc weights;  // packed layout
    dnnl::memory::desc dst;
    dnnl::memory::desc scratchpad;
    std::size_t scratchpad_bytes = 0;
    std::string implementation;  // e.g. "brg:avx512_core"

    explicit operator bool() const { return static_cast<bool>(primitive); }
};

// What oneDNN chose, by kind. oneDNN 2.6 says which implementation a
// primitive runs only through its name ("ref:any", "brg:avx512_core_vnni",
// "gemm:jit"), so these two read it; nothing else in the library does.
// A reference kernel: portable C++, far slower than any JIT kernel.
bool is_reference_kernel(const MatmulKernel& kernel);
// A brgemm kernel: the JIT kernels that take prepacked weights (AVX-512).
bool is_brgemm_kernel(const MatmulKernel& kernel);

// Creates the primitive. With `packed` null, oneDNN picks the weight layout
// (format_tag::any); otherwise the kernel must use that layout, so one packed
// copy of the weights serves every row height. Throws swiglu::Error.
MatmulKernel make_matmul(std::int64_t rows, std::int64_t k, std::int64_t n,
                         const dnnl::memory::desc* packed, const MatmulTypes& types = {});

// Copies data laid out as `from` at `src` into `to` (any layouts, e.g. a
// strided view into a packed one; f32 -> bf16 rounds to nearest even).
void reorder(const void* src, const dnnl::memory::desc& from, const dnnl::memory& to);

// Per-thread execution state for one kernel: memory objects whose data
// handles are swapped per call (no allocation), and the thread's stream.
struct MatmulBinding {
    dnnl::memory src, dst, scratchpad;
    void bind(const MatmulKernel& kernel);
    explicit operator bool() const { return static_cast<bool>(src); }
};

// Runs `kernel` on this thread. `scratchpad` holds kernel.scratchpad_bytes.
void execute(const MatmulKernel& kernel, MatmulBinding& binding, const dnnl::stream& stream,
             const dnnl::memory& weights, const void* src, void* dst, void* scratchpad);

// Throws swiglu::Error for a dnnl::error, keeping oneDNN's message.
[[noreturn]] void rethrow_dnnl(const dnnl::error& e, const char* what);

}  // namespace swiglu::detail
