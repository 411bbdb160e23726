#include "reference_backward.hpp"

#include <cmath>

#include "reference.hpp"

namespace swiglu::test {

namespace {
// Where W[in][out] lives in a view's storage.
std::size_t at(const WeightView& w, std::int64_t in, std::int64_t out) {
    return static_cast<std::size_t>(w.layout == Layout::out_in ? out * w.cols + in
                                                               : in * w.cols + out);
}
}  // namespace

ReferenceGradients reference_backward(const float* x, const float* dy, std::int64_t tokens,
                                      const WeightView& gate, const WeightView& up,
                                      const WeightView& down) {
    const std::int64_t d = gate.in_features(), f = gate.out_features();
    const auto df = static_cast<std::size_t>(d * f);
    ReferenceGradients r{std::vector<double>(static_cast<std::size_t>(tokens * d), 0.0),
                         std::vector<double>(df, 0.0), std::vector<double>(df, 0.0),
                         std::vector<double>(df, 0.0)};
    std::vector<double> dgate(f), dup(f);
    for (std::int64_t t = 0; t < tokens; ++t) {
        const float* xt = x + t * d;
        const float* dyt = dy + t * d;
        for (std::int64_t j = 0; j < f; ++j) {
            double g = 0, u = 0, dact = 0;
            for (std::int64_t i = 0; i < d; ++i) {
                g += double(xt[i]) * weight(gate, i, j);
                u += double(xt[i]) * weight(up, i, j);
                dact += double(dyt[i]) * weight(down, j, i);
            }
            const double s = 1.0 / (1.0 + std::exp(-g));
            dgate[j] = dact * u * s * (1.0 + g * (1.0 - s));
            dup[j] = dact * g * s;
            const double act = g * s * u;
            for (std::int64_t o = 0; o < d; ++o) r.down[at(down, j, o)] += act * double(dyt[o]);
            for (std::int64_t i = 0; i < d; ++i) {
                r.gate[at(gate, i, j)] += double(xt[i]) * dgate[j];
                r.up[at(up, i, j)] += double(xt[i]) * dup[j];
            }
        }
        for (std::int64_t i = 0; i < d; ++i) {
            double s = 0;
            for (std::int64_t j = 0; j < f; ++j)
                s += dgate[j] * weight(gate, i, j) + dup[j] * weight(up, i, j);
            r.dx[static_cast<std::size_t>(t * d + i)] = s;
        }
    }
    return r;
}

double backward_tolerance(std::int64_t d, std::int64_t f, std::int64_t tokens) {
    const double u = std::ldexp(1.0, -24);
    return 16 * u * (std::sqrt(double(d)) + std::sqrt(double(2 * f)) + std::sqrt(double(tokens))) +
           1e-6;
}

}  // namespace swiglu::test
