#include "weights.hpp"

#include <cmath>
#include <cstddef>

namespace swiglu_bench {
namespace {

// splitmix64: a counter-based generator, so every value is a pure function of
// (seed, index) and the weights are the same everywhere.
inline std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// Uniform in [-scale, scale).
void fill_uniform(float* p, std::size_t n, std::uint64_t seed, float scale) {
    const std::uint64_t base = splitmix64(seed);
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t r = splitmix64(base + i) >> 40;  // 24 bits
        p[i] = (float(r) * (1.0f / 8388608.0f) - 1.0f) * scale;
    }
}

}  // namespace

std::unique_ptr<ShapeWeights> make_weights(const Shape& shape) {
    auto w = std::make_unique<ShapeWeights>();
    w->shape = shape;
    const std::size_t n = std::size_t(shape.d) * std::size_t(shape.f);
    w->gate.reset(new float[n]);
    w->up.reset(new float[n]);
    w->down.reset(new float[n]);
    const std::uint64_t seed = std::uint64_t(shape.d) * 1000003u + std::uint64_t(shape.f);
    fill_uniform(w->gate.get(), n, seed * 3 + 0, 1.0f / std::sqrt(float(shape.d)));
    fill_uniform(w->up.get(), n, seed * 3 + 1, 1.0f / std::sqrt(float(shape.d)));
    fill_uniform(w->down.get(), n, seed * 3 + 2, 1.0f / std::sqrt(float(shape.f)));
    return w;
}

std::vector<float> make_input(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
    std::vector<float> x(std::size_t(rows) * std::size_t(cols));
    fill_uniform(x.data(), x.size(), seed ^ 0x5eed5eedull, 1.0f);
    return x;
}

}  // namespace swiglu_bench
