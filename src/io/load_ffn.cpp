// load_ffn, the one function of io/ that builds an Ffn. It lives apart from
// the loader (io/checkpoint.cpp) so that the readers link without core/, as
// the fuzzers (fuzz/CMakeLists.txt) build them.
#include <swiglu/checkpoint.hpp>

namespace swiglu {

Ffn load_ffn(const std::string& path, const WeightSelector& selector, const Options& options) {
    const LoadedWeights w = load_weights(path, selector);
    return Ffn(w.gate_view(), w.up_view(), w.down_view(), options);
}

}  // namespace swiglu
