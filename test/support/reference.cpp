#include "reference.hpp"

#include <algorithm>
#include <cmath>
#include <random>

namespace swiglu::test {

double silu(double z) { return z / (1.0 + std::exp(-z)); }

double weight(const WeightView& w, std::int64_t in, std::int64_t out) {
    return w.layout == Layout::out_in ? w.data[out * w.cols + in] : w.data[in * w.cols + out];
}

std::vector<double> reference_ffn(const float* x, std::int64_t tokens, const WeightView& gate,
                                  const WeightView& up, const WeightView& down) {
    const std::int64_t d = gate.in_features(), f = gate.out_features();
    std::vector<double> y(static_cast<std::size_t>(tokens * d), 0.0), act(f);
    for (std::int64_t t = 0; t < tokens; ++t) {
        const float* xt = x + t * d;
        for (std::int64_t j = 0; j < f; ++j) {
            double g = 0, u = 0;
            for (std::int64_t i = 0; i < d; ++i) {
                g += double(xt[i]) * weight(gate, i, j);
                u += double(xt[i]) * weight(up, i, j);
            }
            act[j] = silu(g) * u;
        }
        for (std::int64_t o = 0; o < d; ++o) {
            double s = 0;
            for (std::int64_t j = 0; j < f; ++j) s += act[j] * weight(down, j, o);
            y[t * d + o] = s;
        }
    }
    return y;
}

std::vector<float> uniform(std::size_t n, float scale, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-scale, scale);
    std::vector<float> v(n);
    for (float& e : v) e = dist(rng);
    return v;
}

RandomBlock::RandomBlock(std::int64_t d_, std::int64_t f_, Layout layout_, unsigned seed)
    : d(d_),
      f(f_),
      gate(uniform(d_ * f_, 1.0f / std::sqrt(float(d_)), seed)),
      up(uniform(d_ * f_, 1.0f / std::sqrt(float(d_)), seed + 1)),
      down(uniform(d_ * f_, 1.0f / std::sqrt(float(f_)), seed + 2)),
      layout(layout_) {}

WeightView RandomBlock::gate_view() const {
    return layout == Layout::out_in ? WeightView::out_in(gate.data(), f, d)
                                    : WeightView::in_out(gate.data(), d, f);
}
WeightView RandomBlock::up_view() const {
    return layout == Layout::out_in ? WeightView::out_in(up.data(), f, d)
                                    : WeightView::in_out(up.data(), d, f);
}
WeightView RandomBlock::down_view() const {
    return layout == Layout::out_in ? WeightView::out_in(down.data(), d, f)
                                    : WeightView::in_out(down.data(), f, d);
}

std::vector<float> random_input(std::int64_t tokens, std::int64_t d, unsigned seed) {
    return uniform(static_cast<std::size_t>(tokens * d), 1.0f, seed);
}

double f32_tolerance(std::int64_t d, std::int64_t f) {
    const double u = std::ldexp(1.0, -24);
    return 16 * u * (std::sqrt(double(d)) + std::sqrt(double(f))) + 1e-6;
}

double relative_error(const std::vector<float>& got, const std::vector<double>& ref) {
    double err = 0, scale = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        err = std::max(err, std::abs(double(got[i]) - ref[i]));
        scale = std::max(scale, std::abs(ref[i]));
    }
    return scale > 0 ? err / scale : err;
}

}  // namespace swiglu::test
