// swiglu: the SwiGLU feed-forward block of transformer LLMs on CPUs.
//
//   gate = x @ W_gate, up = x @ W_up          (d -> f)
//   act  = SiLU(gate) * up,  SiLU(z) = z * sigmoid(z)
//   y    = act @ W_down                       (f -> d)
//
// An Ffn is built once from three weight views (it packs and copies them; the
// caller's buffers are not kept) and then runs forward() any number of times,
// from any number of threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

// The library is built with hidden visibility; this marks what it exports.
#define SWIGLU_API __attribute__((visibility("default")))

namespace swiglu {

// What went wrong, for callers (and the C API) that branch on it.
enum class Status : int {
    ok = 0,
    invalid_argument = 1,  // bad shape, null pointer, overflowing size, bad option
    out_of_memory = 2,     // a buffer could not be allocated
    unsupported = 3,       // valid request this build or CPU cannot serve
    internal = 4,          // a bug or a failure inside a dependency
};

// Every error the library reports is a swiglu::Error; what() names the
// argument and the expected value.
class SWIGLU_API Error : public std::runtime_error {
public:
    Error(Status status, const std::string& message)
        : std::runtime_error(message), status_(status) {}
    Status status() const noexcept { return status_; }

private:
    Status status_;
};

// How a weight matrix is stored, row-major.
//   out_in: (out_features, in_features), as PyTorch nn.Linear and Hugging Face
//           checkpoints store it; the block computes x @ W^T.
//   in_out: (in_features, out_features); the block computes x @ W.
enum class Layout { out_in, in_out };

// A read-only view of one f32 weight matrix: `rows` x `cols`, row-major, dense.
struct WeightView {
    const float* data = nullptr;
    std::int64_t rows = 0;
    std::int64_t cols = 0;
    Layout layout = Layout::out_in;

    std::int64_t in_features() const { return layout == Layout::out_in ? cols : rows; }
    std::int64_t out_features() const { return layout == Layout::out_in ? rows : cols; }

    // (out, in): PyTorch / Hugging Face.
    static WeightView out_in(const float* data, std::int64_t out, std::int64_t in) {
        return {data, out, in, Layout::out_in};
    }
    // (in, out): X @ W style.
    static WeightView in_out(const float* data, std::int64_t in, std::int64_t out) {
        return {data, in, out, Layout::in_out};
    }
};

// The precision of the packed weights and the matmuls. Input, output and
// accumulation stay f32 whatever the choice.
//   f32:  exact f32 weights.
//   bf16: weights and matmul inputs rounded to bf16 (half the bytes of f32),
//         f32 accumulation; SiLU(gate)*up computed in f32. Native on CPUs with
//         avx512_bf16; elsewhere see Implementation::matmul.
//   int8: weights quantized to s8 with one scale per output channel
//         (symmetric), activations to s8 per token at run time (x, and act
//         between the phases), s32 accumulation, f32 out. A quarter of the
//         bytes of f32; relative error ~1e-2 of max|y| (see docs/formats.md).
//   q8_0: GGUF's Q8_0, as llama.cpp stores and quantises it: blocks of 32
//         weights along the input dimension, 32 s8 and one f16 scale each
//         (8.5 bits per weight). Few-token calls quantise x and act per block
//         of 32 (s8, f32 scale) and run our own kernels; tall ones unpack
//         weight tiles to f32 for oneDNN. See docs/formats.md for the error of each.
//   q4_0: GGUF's Q4_0: blocks of 32 4-bit q, value (q - 8) * scale (4.5 bits
//         per weight); run as q8_0.
//   q4_k, q5_k, q6_k: GGUF's K-quants (what Q4_K_M, Q5_K_M and Q6_K files
//         hold): super-blocks of 256 weights with 6-bit (Q4_K, Q5_K) or
//         8-bit (Q6_K) sub-block scales; 4.5, 5.5 and 6.5625 bits per weight.
//         x and act are quantised per block of 256 to s8 with an f32 scale
//         (llama.cpp's Q8_K) and every call runs our own kernels.
// An input width d or f that is not a multiple of the block (32, or 256 for
// the K-quants) ends each row's last block in zeros (never another format).
enum class Dtype { f32, bf16, int8, q8_0, q4_0, q4_k, q5_k, q6_k };
// Every Dtype, in that order: what tests, benchmarks and the CLI iterate.
inline constexpr Dtype kDtypes[] = {Dtype::f32,  Dtype::bf16, Dtype::int8, Dtype::q8_0,
                                    Dtype::q4_0, Dtype::q4_k, Dtype::q5_k, Dtype::q6_k};
// Whether a Dtype is one of GGUF's block formats (q8_0, q4_0 and the
// K-quants): the formats whose gate|up and down may differ in one block.
SWIGLU_API bool is_block_dtype(Dtype dtype) noexcept;

// "f32", "bf16", "int8", "q8_0", "q4_0", "q4_k", "q5_k", "q6_k"
SWIGLU_API const char* dtype_name(Dtype dtype) noexcept;
// The Dtype whose dtype_name is `name`, in any case ("Q4_0" too); false,
// and *out untouched, when none is (or `out` is null).
SWIGLU_API bool dtype_from_name(std::string_view name, Dtype* out) noexcept;
// Every Dtype's name, as prose for messages and help (not for parsing):
// "f32, bf16, int8, q8_0, q4_0, q4_k, q5_k or q6_k".
SWIGLU_API std::string dtype_names();

// Where q8_0 / q4_0 run full-height (64-row) row tiles: automatic: through
// oneDNN on weight tiles unpacked to bf16 where it has an AMX kernel, on our
// grouped kernels elsewhere; never: on the grouped kernels always; f32, bf16:
// through oneDNN on tiles unpacked to that type, whatever its kernel (for
// tests and measurements).
enum class GroupedPrefill { automatic, never, f32, bf16 };

// Which kernels a block may be built on, chosen once when it is built and
// fixed for its life. The defaults are the library's own choice on every
// CPU; the other values exist to test and measure the alternatives (the
// benchmark's --panels, --grouped-prefill and --s8-rows), and never change
// what a block computes beyond the kernels' documented bounds.
struct BuildPolicy {
    // Whether f32 and bf16 may run on our panel kernels where they serve
    // better than oneDNN's (AVX2 or better); false keeps oneDNN's f32
    // kernels, and bf16's emulated mode where oneDNN has no bf16 matmul.
    bool panels = true;
    GroupedPrefill grouped_prefill = GroupedPrefill::automatic;
    // The tallest int8 row tiles that run on our s8 kernel where it exists
    // (AVX512-VNNI): -1 for the library's choice (32 rows), 0 for none
    // (oneDNN's kernels only), up to 64 (every tile).
    std::int64_t int8_own_rows = -1;
    // The tallest bf16 row tiles (valid rows) that run on our one-row
    // kernel where it exists (AVX-512, on oneDNN's packed tiles): -1 for the
    // library's choice (1 row, a decode's token), 0 for none (oneDNN's
    // kernels only, whose bits for a token do not depend on how many tokens
    // share its call), or 1.
    std::int64_t bf16_own_rows = -1;
};

struct Options {
    // Threads that forward() may use, the calling thread included.
    // 0 = every core this process may run on (its CPU affinity). Blocks with
    // the same count share one pool of workers (a model's layers).
    int threads = 0;
    // The format of the weights (of gate and up only, where down_dtype is set).
    Dtype dtype = Dtype::f32;
    // The kernels it may take (defaults: the library's choice).
    BuildPolicy build = {};
    // down's own format, where it differs from gate's and up's: a Q4_K_M
    // file's blocks hold gate and up in q4_k and down in q6_k. Both must then
    // be block formats (is_block_dtype); gate and up always share one (they
    // are packed side by side).
    std::optional<Dtype> down_dtype = std::nullopt;
    // For the loaders (load_ffn, load_ffn_slice; swiglu/checkpoint.hpp):
    // each weight in the format its file stores it where a block runs in
    // that format (F32, BF16, GGUF's Q8_0, Q4_0, Q4_K, Q5_K, Q6_K), packed
    // from the stored blocks unchanged; dtype for the rest (F16) and for all
    // three where the stored formats cannot share a block (gate and up
    // differ; f32 beside a block format). The Ffn constructor ignores it.
    bool keep_stored = false;
};

// What runs underneath, for logs, `swiglu info` and tests.
struct Implementation {
    Dtype dtype = Dtype::f32;       // gate's and up's
    Dtype down_dtype = Dtype::f32;  // down's (the same unless Options::down_dtype)
    std::string matmul;             // oneDNN's implementation ("brg:avx512_core") or our
                                    // own kernels' ("f32 panels:avx2_fma", "q4_0:avx2_fma")
    std::string
        activation;  // ISA of the element-wise kernels: "avx512", "avx2_fma", "sse2" or "scalar"
    int threads = 1;
};

// The weight gradients Ffn::backward writes: each d * f floats, laid out as
// that weight was given to the Ffn (its WeightView's layout, or the
// checkpoint's), so it applies to the weight as it is. Null: not computed.
struct Gradients {
    float* gate = nullptr;
    float* up = nullptr;
    float* down = nullptr;
    // Add into the buffers (gradient accumulation over micro-batches)
    // instead of overwriting them.
    bool accumulate = false;
};

// The library's version, "major.minor.patch".
SWIGLU_API const char* version() noexcept;
// The CPU's SIMD features that matter here, e.g. "avx512f avx512_bf16 avx2 fma".
SWIGLU_API std::string cpu_features();

// f = int(8 d / 3), the LLaMA-style hidden width before rounding to a multiple.
SWIGLU_API std::int64_t llama_hidden(std::int64_t d);
// Parameters of one block: 3 d f.
SWIGLU_API std::int64_t parameter_count(std::int64_t d, std::int64_t f);

// The intermediates of one forward call, for debugging: gate, up and act are
// (tokens, f), down is (tokens, d) (equal to y), all row-major.
struct Trace {
    std::vector<float> gate, up, act, down;
};

namespace detail {
class FfnImpl;
struct FfnAccess;  // the checkpoint loader's way in (core/ffn_access.hpp)
}

class SWIGLU_API Ffn {
public:
    // gate and up map d -> f, down maps f -> d; shapes must agree.
    // Throws swiglu::Error (invalid_argument, out_of_memory, unsupported).
    Ffn(const WeightView& gate, const WeightView& up, const WeightView& down,
        const Options& options = {});
    ~Ffn();
    Ffn(Ffn&&) noexcept;
    Ffn& operator=(Ffn&&) noexcept;
    Ffn(const Ffn&) = delete;
    Ffn& operator=(const Ffn&) = delete;

    std::int64_t d() const;
    std::int64_t f() const;
    int threads() const;
    Implementation implementation() const;

    // y = block(x) for `tokens` rows: x and y are row-major (tokens, d) f32.
    // y may be x itself (in place); any other overlap is rejected. tokens = 0
    // does nothing (x, y may then be null). Safe to call from several threads
    // at once; a call that finds the shared pool busy (another call, to this
    // block or another) runs on its own thread.
    void forward(const float* x, float* y, std::int64_t tokens) const;
    // The same for (batch, seq, d) tensors.
    void forward(const float* x, float* y, std::int64_t batch, std::int64_t seq) const;
    // forward() that also fills `trace` (resized here). The plain forward()
    // pays nothing for this: tracing is a separate entry point.
    void forward_traced(const float* x, float* y, std::int64_t tokens, Trace& trace) const;

    // How each weight was given (WeightView's layout, or the checkpoint's):
    // the layout of its gradient in backward().
    enum class Weight { gate, up, down };
    Layout layout(Weight weight) const;

    // ---- the backward pass (f32 blocks; docs/backward.md) -------------
    // For dy = dL/dy (tokens, d): dx = dL/dx (tokens, d), and with `grads`
    // the weight gradients dL/dW_gate, dL/dW_up, dL/dW_down. The backward
    // needs gate and up of the forward: from `saved` (forward_for_backward
    // on the same x), or, with saved null, recomputed (a forward over each
    // chunk: 4 tokens d f more flops than the 12 tokens d f of the
    // backward). dx may be x or dy itself; every other overlap among x, dy,
    // dx, saved and the gradients is rejected. Error(unsupported) for a
    // dtype other than f32. Bit-identical for any thread count; safe from
    // several threads at once, like forward().
    void backward(const float* x, const float* dy, float* dx, std::int64_t tokens,
                  const Gradients& grads = {}, const float* saved = nullptr) const;
    // forward() that also keeps what backward() needs: gate then up, (tokens,
    // f) each, into `saved` (saved_floats(tokens) floats).
    void forward_for_backward(const float* x, float* y, float* saved, std::int64_t tokens) const;
    std::int64_t saved_floats(std::int64_t tokens) const;
    // Prepares the backward now: the weights transposed and packed for it (as
    // much memory again as f32 weights) and its kernels. The first backward()
    // does it otherwise. Error(unsupported) for a dtype other than f32.
    void enable_backward() const;

private:
    friend struct detail::FfnAccess;
    explicit Ffn(std::unique_ptr<detail::FfnImpl> impl);
    std::unique_ptr<detail::FfnImpl> impl_;
};

}  // namespace swiglu
