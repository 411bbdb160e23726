// What this CPU lets oneDNN run, judged by oneDNN itself (so it follows
// ONEDNN_MAX_CPU_ISA), not by the library under test: a library that wrongly
// refused int8 on a VNNI machine would still fail the tests.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

namespace swiglu::test {

// int8 runs only on oneDNN's VNNI brgemm kernels (AVX512-VNNI and later);
// elsewhere Ffn refuses Dtype::int8 with Status::unsupported (docs/formats.md).
inline bool int8_supported() {
    switch (dnnl::get_effective_cpu_isa()) {
        case dnnl::cpu_isa::avx512_core_vnni:
        case dnnl::cpu_isa::avx512_core_bf16:
        case dnnl::cpu_isa::avx512_core_amx: return true;
        default: return false;
    }
}

// oneDNN packs bf16 tiles for its brgemm (BA16a64b2a, the layout the bf16
// mode's one-row kernel reads) where the CPU has AVX512-BF16.
inline bool bf16_brgemm_supported() {
    switch (dnnl::get_effective_cpu_isa()) {
        case dnnl::cpu_isa::avx512_core_bf16:
        case dnnl::cpu_isa::avx512_core_amx: return true;
        default: return false;
    }
}

}  // namespace swiglu::test
