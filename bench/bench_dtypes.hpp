// The benchmark's dtype list (the public Dtypes and the q4_k_m mix), the
// bytes each streams and the token counts each sweeps. Apart from
// shapes.hpp because it reads the library's format table (an internal
// header): swiglu_bench and the ggml peer link swiglu_internal, the MPI
// benchmark only the public library.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "formats/format_table.hpp"
#include "shapes.hpp"
#include "swiglu/swiglu.hpp"

namespace swiglu_bench {

// Bytes of one weight as GGUF stores it, from the library's format table:
// 4 (f32), 2 (bf16), 1 (int8; the per-channel scales are negligible),
// 34 / 32 (q8_0), 18 / 32 (q4_0), 144 / 256 (q4_k), 176 / 256 (q5_k),
// 210 / 256 (q6_k). Our packed records run a little larger (K-quants: per
// 8 rows x 256, 1184, 1440 and 1680 bytes against 8 x 144, 176, 210), but
// the file's bytes are what a model costs and what ggml streams, so GB/s
// and the roofline compare both on the same count.
inline double bytes_per_weight(swiglu::Dtype dtype) {
    return swiglu::detail::bytes_per_value(swiglu::detail::traits(dtype));
}

// GGUF's block formats (q8_0, q4_0 and the K-quants): their baseline is the
// f32 one on their rounded weights (baseline.hpp), their compute peak the
// int8 one (s8 dot products).
inline bool is_grouped(swiglu::Dtype dtype) { return swiglu::is_block_dtype(dtype); }

// GGUF's K-quants (super-blocks of 256).
inline bool is_k_quant(swiglu::Dtype dtype) {
    return dtype == swiglu::Dtype::q4_k || dtype == swiglu::Dtype::q5_k ||
           dtype == swiglu::Dtype::q6_k;
}

// One entry of the benchmark's dtype list: a block in one public Dtype, or a
// mix of two block formats named as llama.cpp names its files (q4_k_m:
// gate and up in q4_k, down in q6_k, as a Q4_K_M file holds a dense FFN),
// run through Options::down_dtype. The mix is a name of the benchmark's
// rows, not a Dtype of the library.
struct BenchDtype {
    const char* name;
    swiglu::Dtype dtype;  // gate's and up's; picks the compute peak and the tolerance
    swiglu::Dtype down;   // down's

    static BenchDtype of(swiglu::Dtype d) { return {swiglu::dtype_name(d), d, d}; }
    bool mixed() const { return dtype != down; }
    bool grouped() const { return is_grouped(dtype); }
    bool k_quant() const { return is_k_quant(dtype); }
};
inline bool operator==(const BenchDtype& a, const BenchDtype& b) {
    return a.dtype == b.dtype && a.down == b.down;
}
inline bool operator!=(const BenchDtype& a, const BenchDtype& b) { return !(a == b); }
inline bool operator<(const BenchDtype& a, const BenchDtype& b) {
    return a.dtype != b.dtype ? int(a.dtype) < int(b.dtype) : int(a.down) < int(b.down);
}

// Weight bytes one call streams: gate and up (d f each) in the entry's
// dtype, down (d f) in its down.
inline double weight_bytes(const Shape& s, const BenchDtype& bd) {
    return double(s.d) * double(s.f) *
           (2.0 * bytes_per_weight(bd.dtype) + bytes_per_weight(bd.down));
}

// The benchmark's dtype list: every public Dtype in kDtypes' order, then the
// named mixes.
inline const std::vector<BenchDtype>& all_dtypes() {
    static const std::vector<BenchDtype> dtypes = [] {
        std::vector<BenchDtype> v;
        for (swiglu::Dtype d : swiglu::kDtypes) v.push_back(BenchDtype::of(d));
        v.push_back({"q4_k_m", swiglu::Dtype::q4_k, swiglu::Dtype::q6_k});
        return v;
    }();
    return dtypes;
}

// The entry of that list named `name` ("q4_k_m"), or nullptr.
inline const BenchDtype* find_dtype(const std::string& name) {
    for (const BenchDtype& bd : all_dtypes())
        if (name == bd.name) return &bd;
    return nullptr;
}

// The token counts a dtype's rows sweep. The K-quants take five: decode,
// a small batch, the ridge (16) and two prefills place them beside q4_0,
// and four entries at q4_0's eight counts would add 32 rows per shape and
// thread count to a full run.
inline const std::vector<std::int64_t>& tokens_for(const BenchDtype& bd) {
    static const std::vector<std::int64_t> k_tokens = {1, 4, 16, 128, 512};
    return bd.k_quant() ? k_tokens : all_tokens();
}

}  // namespace swiglu_bench
