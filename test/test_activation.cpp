// Tests of the fused SiLU(gate) * up kernels: every ISA this CPU runs, and
// the dispatched silu_mul, against a double-precision reference.
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <algorithm>

#include "kernels/f32_silu_mul.hpp"
#include "kernels/kernel_table.hpp"

namespace {

using swiglu::detail::Isa;
using SiluMulFn = decltype(swiglu::detail::KernelTable::silu_mul);

struct Kernel {
    std::string name;
    SiluMulFn fn;
};

// Every kernel that can run here, plus the dispatched entry point.
std::vector<Kernel> kernels_to_test() {
    std::vector<Kernel> ks;
    for (const auto& entry : swiglu::detail::kernel_dispatch().runnable())
        ks.push_back({swiglu::detail::isa_name(entry.isa), entry.table.silu_mul});
    ks.push_back({"silu_mul", &swiglu::detail::silu_mul});
    return ks;
}

// SiLU(z) * up in double. z / (1 + exp(-z)) has the PyTorch special values
// too: -inf / inf = NaN, +inf / 1 = +inf, and double's range keeps
// exp(-z) finite for every float z that matters.
double reference(float z, float up) {
    const double zd = z;
    return zd / (1.0 + std::exp(-zd)) * static_cast<double>(up);
}

// Error bound. Relative: ~1 ulp from exp, 0.5 ulp from the division and
// 0.5 ulp from each of the two multiplies: <= ~2.5 ulp of a float, and a
// float ulp is at most 2^-23 = 1.19e-7 relative, so 2.5 ulp <= 3e-7.
// Absolute, for the subnormal range only: a subnormal is rounded to a
// multiple of 2^-149, i.e. off by up to 2^-150 whatever its size. That
// happens at most twice: to SiLU(z) itself (|z| < 2^-125), an error that the
// multiply by up scales by |up|, and to the final product. So
// 2^-150 * (1 + |up|): 7e-36 for the largest |up| tested (1e10), far below
// the relative term for any normal result of SiLU(z) * up.
constexpr double kRel = 3e-7;
double abs_slack(float up) { return 0x1p-150 * (1.0 + std::fabs(static_cast<double>(up))); }

// The relative error (beyond the absolute slack) when within the bound, -1
// when not.
double error_or_fail(float got, double ref, float up) {
    if (std::isnan(ref)) return std::isnan(got) ? 0.0 : -1.0;
    if (std::isinf(ref)) return got == ref ? 0.0 : -1.0;
    const double mag = std::fabs(ref);
    if (std::isinf(got)) {
        // Overflow is right only if ref is at the float overflow threshold.
        const bool same_sign = (got > 0) == (ref > 0);
        return same_sign && mag * (1.0 + kRel) >= static_cast<double>(FLT_MAX) ? 0.0 : -1.0;
    }
    if (std::isnan(got)) return -1.0;
    const double diff = std::fabs(static_cast<double>(got) - ref);
    const double beyond_slack = diff - abs_slack(up);
    if (beyond_slack > kRel * mag) return -1.0;
    return beyond_slack > 0 ? beyond_slack / mag : 0.0;
}

struct Report {
    std::size_t failures = 0;
    double max_rel = 0.0;
    std::string first_failure;
};

Report compare(const std::vector<float>& gate, const std::vector<float>& up,
               const std::vector<float>& got) {
    Report r;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const double ref = reference(gate[i], up[i]);
        const double err = error_or_fail(got[i], ref, up[i]);
        if (err < 0) {
            if (r.failures++ == 0) {
                char msg[160];
                std::snprintf(msg, sizeof msg, "gate=%.9g up=%.9g got=%.9g ref=%.17g", gate[i],
                              up[i], got[i], ref);
                r.first_failure = msg;
            }
        } else if (err > r.max_rel) {
            r.max_rel = err;
        }
    }
    return r;
}

std::vector<float> run(const Kernel& k, const std::vector<float>& gate,
                       const std::vector<float>& up) {
    std::vector<float> out(gate.size(), -7.0f);
    k.fn(gate.data(), up.data(), out.data(), gate.size());
    return out;
}

// The sweep inputs: a dense grid over [-100, 100] plus special values, each
// paired with every up value.
void sweep_inputs(std::vector<float>& gate, std::vector<float>& up) {
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> zs;
    for (int i = -102400; i <= 102400; ++i) zs.push_back(static_cast<float>(i) * 0x1p-10f);
    const float specials[] = {
        0.0f, -0.0f, 1e-30f, -1e-30f, 1e-38f, -1e-38f,  // tiny, and around FLT_MIN
        1e-40f, -1e-40f, 1e-45f, -1e-45f,               // subnormal
        1.0f, -1.0f, 20.0f, -20.0f, 88.7f, -88.7f, 89.0f, -89.0f, 1000.0f, -1000.0f, FLT_MAX,
        -FLT_MAX, inf, -inf, std::nanf(""),
        // Either side of the far-negative shift S = 60.625, and past S + 87.3.
        60.625f, -60.625f, std::nextafter(-60.625f, 0.0f), std::nextafter(-60.625f, -100.0f),
        -147.0f, -150.0f, -200.0f,
        // With xsimd 8.1's exp (1.52 ulp) these were off by up to 3.2e-7 for
        // the up values 1.92016602 and 0.170694828 below.
        -5.88405418f, -5.88709688f, -6.58168268f};
    zs.insert(zs.end(), std::begin(specials), std::end(specials));
    for (float u : {1.0f, -3.5f, 0.0f, 1e10f, 1.92016602f, 0.170694828f}) {
        for (float z : zs) {
            gate.push_back(z);
            up.push_back(u);
        }
    }
}

}  // namespace

TEST_SUITE("activation") {

TEST_CASE("the shift constant is exp(-S) rounded to float") {
    using swiglu::detail::kSiluShift;
    using swiglu::detail::kSiluShiftScale;
    CHECK(static_cast<float>(std::exp(-static_cast<double>(kSiluShift))) == kSiluShiftScale);
}

TEST_CASE("dispatch picks the best available ISA and names it") {
    CHECK(swiglu::detail::isa_available(Isa::scalar));
#if defined(__x86_64__)
    CHECK(swiglu::detail::isa_available(Isa::sse2));
#endif
    std::string best = "scalar";
    for (Isa isa : swiglu::detail::kIsas)
        if (swiglu::detail::kernel_table(isa).silu_mul && swiglu::detail::isa_available(isa))
            best = swiglu::detail::isa_name(isa);
    CHECK(std::string(swiglu::detail::kernels_isa_name()) == best);
    // (doctest can't print a function pointer, so compare outside CHECK.)
    const bool scalar_is_scalar =
        swiglu::detail::kernel_table(Isa::scalar).silu_mul == &swiglu::detail::f32_silu_mul_scalar;
    CHECK(scalar_is_scalar);
    MESSAGE("silu_mul runs " << std::string(swiglu::detail::kernels_isa_name()));
}

TEST_CASE("known values") {
    const std::vector<float> gate = {-1.0f, 0.0f, 1.0f};
    const std::vector<float> up = {2.0f, 3.0f, 4.0f};
    for (const Kernel& k : kernels_to_test()) {
        CAPTURE(k.name);
        const std::vector<float> out = run(k, gate, up);
        CHECK(std::fabs(out[0] - -0.537883) <= 1e-6);
        CHECK(out[1] == 0.0f);
        CHECK(std::fabs(out[2] - 2.924234) <= 1e-6);
        CHECK(std::fabs(out[0] + out[1] + out[2] - 2.386351) <= 1e-6);
    }
}

TEST_CASE("accuracy sweep against the double reference") {
    std::vector<float> gate, up;
    sweep_inputs(gate, up);
    for (const Kernel& k : kernels_to_test()) {
        CAPTURE(k.name);
        const Report r = compare(gate, up, run(k, gate, up));
        INFO("first failure: " << r.first_failure);
        CHECK(r.failures == 0);
        CHECK(r.max_rel <= kRel);
        MESSAGE(k.name << ": max relative error " << r.max_rel << " (" << r.max_rel / 0x1p-23
                       << " x 2^-23)");
    }
}

TEST_CASE("special values") {
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> gate = {inf, inf, inf, -inf, -inf, nan, nan, -0.0f, -0.0f, 0.0f};
    const std::vector<float> up = {2.0f, -3.5f, 0.0f, 1.0f, 0.0f, 1.0f, 0.0f, 1.0f, -1.0f, 1.0f};
    for (const Kernel& k : kernels_to_test()) {
        CAPTURE(k.name);
        const std::vector<float> out = run(k, gate, up);
        CHECK(out[0] == inf);
        CHECK(out[1] == -inf);
        CHECK(std::isnan(out[2]));  // inf * 0
        CHECK(std::isnan(out[3]));  // silu(-inf) = -inf * 0
        CHECK(std::isnan(out[4]));
        CHECK(std::isnan(out[5]));
        CHECK(std::isnan(out[6]));
        CHECK(out[7] == 0.0f);
        CHECK(std::signbit(out[7]));  // silu(-0) = -0
        CHECK(out[8] == 0.0f);
        CHECK(!std::signbit(out[8]));
        CHECK(out[9] == 0.0f);
        CHECK(!std::signbit(out[9]));
    }
}

TEST_CASE("every length, aliasing and misalignment; nothing past n is touched") {
    constexpr std::size_t kGuard = 16;  // one AVX-512 vector of guard on each side
    const float kSentinel = 12345.678f;
    enum class Mode { out_of_place, out_is_gate, out_is_up };
    for (const Kernel& k : kernels_to_test()) {
        CAPTURE(k.name);
        for (std::size_t n : {0, 1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 341, 1000}) {
            CAPTURE(n);
            // Inputs spread over [-12, 12] and a few up values of both signs.
            std::vector<float> g(n), u(n);
            for (std::size_t i = 0; i < n; ++i) {
                g[i] = -12.0f + 24.0f * static_cast<float>((i * 37) % 101) / 100.0f;
                u[i] = static_cast<float>(static_cast<int>(i % 7) - 3) * 0.75f;
            }
            std::vector<float>
                first;  // out-of-place, aligned result: the others must match bit for bit
            for (std::size_t offset : {0, 1}) {
                CAPTURE(offset);
                for (Mode mode : {Mode::out_of_place, Mode::out_is_gate, Mode::out_is_up}) {
                    CAPTURE(static_cast<int>(mode));
                    const std::size_t len = n + 2 * kGuard + 1;
                    std::vector<float> gb(len, kSentinel), ub(len, kSentinel), ob(len, kSentinel);
                    float* gp =
                        gb.data() + kGuard + offset;  // + 1 float: not 16/32/64-byte aligned
                    float* up = ub.data() + kGuard + offset;
                    std::copy(g.begin(), g.end(), gp);  // not memcpy: g.data() is null for n = 0
                    std::copy(u.begin(), u.end(), up);
                    float* op = mode == Mode::out_is_gate ? gp
                                : mode == Mode::out_is_up ? up
                                                          : ob.data() + kGuard + offset;
                    k.fn(gp, up, op, n);
                    std::vector<float> out(op, op + n);
                    const Report r = compare(g, u, out);
                    INFO("first failure: " << r.first_failure);
                    CHECK(r.failures == 0);
                    if (offset == 0 && mode == Mode::out_of_place) first = out;
                    CHECK(std::equal(
                        out.begin(), out.end(), first.begin(), first.end(),
                        [](float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }));
                    // Guards: nothing before or after [0, n) of any buffer changed.
                    std::size_t touched = 0;
                    for (const std::vector<float>* b : {&gb, &ub, &ob}) {
                        const float* base = b->data() + kGuard + offset;
                        for (const float* p = b->data(); p < base; ++p) touched += *p != kSentinel;
                        for (const float* p = base + n; p < b->data() + len; ++p)
                            touched += *p != kSentinel;
                    }
                    CHECK(touched == 0);
                    if (mode == Mode::out_is_up) CHECK(std::equal(g.begin(), g.end(), gp));
                    if (mode == Mode::out_is_gate) CHECK(std::equal(u.begin(), u.end(), up));
                }
            }
        }
    }
}

TEST_CASE("an ISA gives the same bits at every position, alone and on every call") {
    // Lanes are independent and the tail goes through the same vector code, so
    // an element's result can't depend on where it sits or how long the call is.
    std::vector<float> gate, up;
    sweep_inputs(gate, up);
    for (const Kernel& k : kernels_to_test()) {
        CAPTURE(k.name);
        const std::vector<float> once = run(k, gate, up);
        const std::vector<float> twice = run(k, gate, up);
        CHECK(std::memcmp(once.data(), twice.data(), once.size() * sizeof(float)) == 0);
        std::size_t mismatches = 0;
        for (std::size_t start : {1, 3, 5}) {
            std::vector<float> out(gate.size() - start);
            k.fn(gate.data() + start, up.data() + start, out.data(), out.size());
            mismatches +=
                std::memcmp(out.data(), once.data() + start, out.size() * sizeof(float)) != 0;
        }
        CHECK(mismatches == 0);
        // Alone (a vector of its own, zero-padded) vs among neighbours: kernels
        // take a shorter path for vectors without a lane beyond |z| > S, and an
        // element must get the same bits whichever path its vector took.
        std::size_t alone_mismatches = 0;
        for (std::size_t i = 0; i < gate.size(); i += 7) {
            float out = 0.0f;
            k.fn(&gate[i], &up[i], &out, 1);
            alone_mismatches += std::memcmp(&out, &once[i], sizeof(float)) != 0;
        }
        CHECK(alone_mismatches == 0);
    }
}

}  // TEST_SUITE("activation")
