#include "checkpoint_blocks.hpp"

namespace swiglu::test {

const Scheme kHfLlama{"hf-llama",       "model.layers.0.mlp.", "gate_proj.weight",
                      "up_proj.weight", "down_proj.weight",    Layout::out_in};
const Scheme kPhi3{"phi3-merged", "model.layers.0.mlp.", "gate_up_proj.weight",
                   nullptr,       "down_proj.weight",    Layout::out_in};
const Scheme kBare{"bare",        "", "gate_proj.weight", "up_proj.weight", "down_proj.weight",
                   Layout::out_in};
// The CyberSLM seed's SwiGLUFeedForward saved by torch (nn.Linear: .weight).
const Scheme kCyberslm{"cyberslm",    "", "gate_proj.weight", "val_proj.weight", "out_proj.weight",
                       Layout::out_in};
const Scheme kGlassllm{"glassllm", "", "W1", "W3", "W2", Layout::in_out};
// cyberslm's alias: the same names without .weight.
const Scheme kCyberslmBare{"cyberslm", "", "gate_proj", "val_proj", "out_proj", Layout::out_in};
// Meta's and Mistral's original checkpoints: w1 gate, w3 up, w2 down.
const Scheme kMeta{"meta",        "layers.0.feed_forward.", "w1.weight", "w3.weight", "w2.weight",
                   Layout::out_in};

const std::vector<Scheme> kSchemes{kHfLlama,  kPhi3,         kBare, kCyberslm,
                                   kGlassllm, kCyberslmBare, kMeta};

std::string layer_prefix(int layer) { return "model.layers." + std::to_string(layer) + ".mlp."; }

namespace {

std::vector<float> concat(std::vector<float> a, const std::vector<float>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

}  // namespace

std::vector<TensorSpec> block_tensors(const Scheme& s, const RandomBlock& b,
                                      const std::string& dtype, const char* prefix) {
    const std::string p = prefix ? prefix : s.prefix;
    const std::int64_t d = b.d, f = b.f;
    const bool out_in = s.layout == Layout::out_in;
    const std::vector<std::int64_t> in_shape =
        out_in ? std::vector<std::int64_t>{f, d} : std::vector<std::int64_t>{d, f};
    const std::vector<std::int64_t> down_shape =
        out_in ? std::vector<std::int64_t>{d, f} : std::vector<std::int64_t>{f, d};
    std::vector<TensorSpec> out;
    if (s.up) {
        out.push_back({p + s.gate, dtype, in_shape, b.gate});
        out.push_back({p + s.up, dtype, in_shape, b.up});
    } else {
        out.push_back({p + s.gate, dtype, {2 * f, d}, concat(b.gate, b.up)});
    }
    out.push_back({p + s.down, dtype, down_shape, b.down});
    return out;
}

void append(std::vector<TensorSpec>& to, const std::vector<TensorSpec>& more) {
    to.insert(to.end(), more.begin(), more.end());
}

std::string write_checkpoint(const std::vector<TensorSpec>& tensors, const std::string& metadata) {
    const std::string path = temp_dir() + "/model.safetensors";
    write_file(path, safetensors_bytes(tensors, metadata));
    return path;
}

std::string load_error(const std::string& path, const WeightSelector& selector, Status status) {
    return error_message([&] { load_weights(path, selector); }, status);
}

void check_forward(const LoadedWeights& w, const RandomBlock& expected, const std::string& path,
                   const WeightSelector& selector) {
    const Ffn ffn = load_ffn(path, selector, Options{1});
    CHECK(ffn.d() == expected.d);
    CHECK(ffn.f() == expected.f);
    const std::int64_t tokens = 3;
    const std::vector<float> x = random_input(tokens, expected.d, 11);
    std::vector<float> y(x.size());
    ffn.forward(x.data(), y.data(), tokens);
    const std::vector<double> ref =
        reference_ffn(x.data(), tokens, w.gate_view(), w.up_view(), w.down_view());
    CHECK(relative_error(y, ref) <= f32_tolerance(expected.d, expected.f));
}

}  // namespace swiglu::test
