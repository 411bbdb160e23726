#include "onednn/matmul.hpp"

#include <omp.h>

#include <swiglu/swiglu.hpp>

namespace swiglu::detail {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

const dnnl::engine& cpu_engine() {
    static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    return engine;
}

void serialize_onednn_on_this_thread() { omp_set_num_threads(1); }

bool is_reference_kernel(const MatmulKernel& kernel) {
    return kernel.implementation.find("ref") != std::string::npos;
}

bool is_brgemm_kernel(const MatmulKernel& kernel) {
    return kernel.implementation.rfind("brg:", 0) == 0;
}

OmpSerialScope::OmpSerialScope() : saved_(omp_get_max_threads()) {
    if (saved_ != 1) omp_set_num_threads(1);
}

OmpSerialScope::~OmpSerialScope() {
    if (saved_ != 1) omp_set_num_threads(saved_);
}

void rethrow_dnnl(const dnnl::error& e, const char* what) {
    const Status status = e.status == dnnl_out_of_memory   ? Status::out_of_memory
                          : e.status == dnnl_unimplemented ? Status::unsupported
                                                           : Status::internal;
    throw Error(status, std::string(what) + ": oneDNN: " + e.what());
}

namespace {
// A single-threaded primitive with a user scratchpad (see OmpSerialScope).
MatmulKernel create(const dnnl::memory::desc& src, const dnnl::memory::desc& weights,
                    const dnnl::memory::desc& dst, dnnl::primitive_attr attr) {
    try {
        OmpSerialScope serial;
        MatmulKernel kernel;
        attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
        const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, weights, dst), attr,
                                              cpu_engine());
        kernel.primitive = dnnl::matmul(pd);
        kernel.src = pd.src_desc();
        kernel.weights = pd.weights_desc();
        kernel.dst = pd.dst_desc();
        kernel.scratchpad = pd.scratchpad_desc();
        kernel.scratchpad_bytes = kernel.scratchpad.get_size();
        kernel.implementation = pd.impl_info_str();
        return kernel;
    } catch (const dnnl::error& e) {
        rethrow_dnnl(e, "creating a matmul primitive");
    }
}
}  // namespace

MatmulKernel make_matmul(std::int64_t rows, std::int64_t k, std::int64_t n,
                         const dnnl::memory::desc* packed, const MatmulTypes& types) {
    return create(dnnl::memory::desc({rows, k}, types.src, tag::ab),
                  packed ? *packed : dnnl::memory::desc({k, n}, types.weights, tag::any),
                  dnnl::memory::desc({rows, n}, types.dst, tag::ab), {});
}

void reorder(const void* src, const dnnl::memory::desc& from, const dnnl::memory& to) {
    try {
        OmpSerialScope serial;
        dnnl::memory source(from, cpu_engine(), const_cast<void*>(src));
        dnnl::stream stream(cpu_engine());
        dnnl::memory target = to;  // a handle: execute() wants it non-const
        dnnl::reorder(source, target).execute(stream, source, target);
        stream.wait();
    } catch (const dnnl::error& e) {
        rethrow_dnnl(e, "packing weights");
    }
}

void MatmulBinding::bind(const MatmulKernel& kernel) {
    src = dnnl::memory(kernel.src, cpu_engine(), DNNL_MEMORY_NONE);
    dst = dnnl::memory(kernel.dst, cpu_engine(), DNNL_MEMORY_NONE);
    scratchpad = dnnl::memory(kernel.scratchpad, cpu_engine(), DNNL_MEMORY_NONE);
}

void execute(const MatmulKernel& kernel, MatmulBinding& binding, const dnnl::stream& stream,
             const dnnl::memory& weights, const void* src, void* dst, void* scratchpad) {
    // The C API takes the arguments as an array on our stack; the C++
    // execute() would build a std::unordered_map per call.
    binding.src.set_data_handle(const_cast<void*>(src));
    binding.dst.set_data_handle(dst);
    binding.scratchpad.set_data_handle(scratchpad);
    const dnnl_exec_arg_t args[] = {
        {DNNL_ARG_SRC, binding.src.get()},
        {DNNL_ARG_WEIGHTS, weights.get()},
        {DNNL_ARG_DST, binding.dst.get()},
        {DNNL_ARG_SCRATCHPAD, binding.scratchpad.get()},
    };
    const dnnl_status_t status =
        dnnl_primitive_execute(kernel.primitive.get(), stream.get(), 4, args);
    if (status != dnnl_success)
        throw Error(Status::internal, "oneDNN matmul execution failed (status " +
                                          std::to_string(static_cast<int>(status)) + ")");
}

}  // namespace swiglu::detail
