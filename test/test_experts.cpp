// swiglu::Experts: against a float64 reference over shapes, expert counts,
// k, token counts and both ways to give the weights; block formats against
// each chosen expert run as its own Ffn; bit-identical for any thread count,
// in place and from two threads at once; routing corners; and validation
// that writes nothing.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <swiglu/moe.hpp>

#include "error_checks.hpp"
#include "reference.hpp"

using namespace swiglu;
using swiglu::test::expect_error;

namespace {

std::vector<float> transpose(const float* w, std::int64_t rows, std::int64_t cols) {
    std::vector<float> t(static_cast<std::size_t>(rows * cols));
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c) t[c * rows + r] = w[r * cols + c];
    return t;
}

// E experts' weights, stacked, both as PyTorch stores them (out_in) and
// transposed (in_out): the same matrices either way, so one fp64
// reference serves every way of handing them over.
struct Bank {
    Bank(std::int64_t E_, std::int64_t d_, std::int64_t f_, unsigned seed)
        : E(E_),
          d(d_),
          f(f_),
          gate(test::uniform(E * f * d, 1.0f / std::sqrt(float(d)), seed)),
          up(test::uniform(E * f * d, 1.0f / std::sqrt(float(d)), seed + 1)),
          down(test::uniform(E * d * f, 1.0f / std::sqrt(float(f)), seed + 2)) {
        const std::int64_t n = d * f;
        for (std::int64_t e = 0; e < E; ++e) {
            for (auto [from, to, rows, cols] :
                 {std::make_tuple(&gate, &gate_t, f, d), std::make_tuple(&up, &up_t, f, d),
                  std::make_tuple(&down, &down_t, d, f)}) {
                const auto t = transpose(from->data() + e * n, rows, cols);
                to->insert(to->end(), t.begin(), t.end());
            }
        }
    }
    std::int64_t E, d, f;
    std::vector<float> gate, up, down;        // (E, f, d), (E, f, d), (E, d, f)
    std::vector<float> gate_t, up_t, down_t;  // (E, d, f), (E, d, f), (E, f, d)

    ExpertWeights weights(std::int64_t e, Layout layout) const {
        const std::int64_t at = e * d * f;
        if (layout == Layout::out_in)
            return {WeightView::out_in(gate.data() + at, f, d),
                    WeightView::out_in(up.data() + at, f, d),
                    WeightView::out_in(down.data() + at, d, f)};
        return {WeightView::in_out(gate_t.data() + at, d, f),
                WeightView::in_out(up_t.data() + at, d, f),
                WeightView::in_out(down_t.data() + at, f, d)};
    }
    // Expert e's layout alternates: the vector constructor takes each
    // expert as it comes.
    std::vector<ExpertWeights> mixed() const {
        std::vector<ExpertWeights> v;
        for (std::int64_t e = 0; e < E; ++e)
            v.push_back(weights(e, e % 2 ? Layout::in_out : Layout::out_in));
        return v;
    }
    Experts stacked(Layout layout, const Options& options) const {
        const bool oi = layout == Layout::out_in;
        return Experts::stacked(oi ? gate.data() : gate_t.data(), oi ? up.data() : up_t.data(),
                                oi ? down.data() : down_t.data(), E, d, f, layout, options);
    }
    Ffn expert(std::int64_t e, const Options& options) const {
        const ExpertWeights w = weights(e, Layout::out_in);
        return Ffn(w.gate, w.up, w.down, options);
    }
    // Every expert's fp64 output for each of the `tokens` rows of x.
    std::vector<std::vector<double>> reference(const std::vector<float>& x,
                                               std::int64_t tokens) const {
        std::vector<std::vector<double>> out;
        for (std::int64_t e = 0; e < E; ++e) {
            const ExpertWeights w = weights(e, Layout::out_in);
            out.push_back(test::reference_ffn(x.data(), tokens, w.gate, w.up, w.down));
        }
        return out;
    }
};

// A router's output: `tokens` x k ids in [0, E) (repeats allowed) and
// weights in (-1.5, 1.5).
struct Routes {
    Routes(std::int64_t tokens, std::int64_t k_, std::int64_t E, unsigned seed) : k(k_) {
        const auto u = test::uniform(static_cast<std::size_t>(tokens * k), 1.0f, seed);
        for (float v : u)
            ids.push_back(
                std::min<std::int32_t>(std::int32_t((v + 1) / 2 * float(E)), std::int32_t(E - 1)));
        weights = test::uniform(ids.size(), 1.5f, seed + 1);
    }
    std::int64_t k;
    std::vector<std::int32_t> ids;
    std::vector<float> weights;
};

std::vector<float> run(const Experts& experts, const std::vector<float>& x, std::int64_t tokens,
                       const Routes& r) {
    std::vector<float> y(static_cast<std::size_t>(tokens * experts.d()), NAN);
    experts.forward(x.data(), y.data(), tokens, r.ids.data(), r.weights.data(), r.k);
    return y;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The worst error of y against sum_j w * ref_{id}(x), over each token's
// bound. Each expert's term is an f32 block within test::f32_tolerance(d, f)
// of max|ref_e| (its own scale, as test_block measures it), so token t's
// k terms are off by at most tol * sum_j |w_tj| R_{id_tj}, R_e = max|ref_e|;
// the combine's 2k - 1 roundings (a product and a sum per term, each within
// u = 2^-24 of a partial sum no larger than sum_j |w_tj| R_{id_tj}) add
// 2k u of the same. Returns max over tokens of error / bound: <= 1 passes.
double worst_ratio(const std::vector<float>& y, const std::vector<std::vector<double>>& refs,
                   std::int64_t tokens, std::int64_t d, std::int64_t f, const Routes& r) {
    std::vector<double> scale(refs.size(), 0.0);
    for (std::size_t e = 0; e < refs.size(); ++e)
        for (std::int64_t i = 0; i < tokens * d; ++i)
            scale[e] = std::max(scale[e], std::abs(refs[e][i]));
    const double u = std::ldexp(1.0, -24);
    const double per = test::f32_tolerance(d, f) + 2 * double(r.k) * u;
    double worst = 0;
    for (std::int64_t t = 0; t < tokens; ++t) {
        double bound = 0;
        for (std::int64_t j = 0; j < r.k; ++j)
            bound += std::abs(double(r.weights[t * r.k + j])) * scale[r.ids[t * r.k + j]];
        bound *= per;
        for (std::int64_t c = 0; c < d; ++c) {
            double ref = 0;
            for (std::int64_t j = 0; j < r.k; ++j)
                ref += double(r.weights[t * r.k + j]) * refs[r.ids[t * r.k + j]][t * d + c];
            const double err = std::abs(double(y[t * d + c]) - ref);
            worst = std::max(worst, bound > 0 ? err / bound : (err > 0 ? 1e30 : 0.0));
        }
    }
    return worst;
}

// What Experts must give bit for bit: each (t, j)'s expert run alone on
// x[t] as its own Ffn, combined in j order as experts_forward.cpp states:
// y = w0 r0, then y = y + wj rj, every product and sum rounded to f32
// (this file is built without contraction, test/CMakeLists.txt).
std::vector<float> one_by_one(const std::vector<Ffn>& ffns, const std::vector<float>& x,
                              std::int64_t tokens, std::int64_t d, const Routes& r) {
    std::vector<float> y(static_cast<std::size_t>(tokens * d)), row(static_cast<std::size_t>(d));
    for (std::int64_t t = 0; t < tokens; ++t) {
        float* yt = y.data() + t * d;
        for (std::int64_t j = 0; j < r.k; ++j) {
            ffns[static_cast<std::size_t>(r.ids[t * r.k + j])].forward(x.data() + t * d, row.data(),
                                                                       1);
            const float w = r.weights[t * r.k + j];
            for (std::int64_t c = 0; c < d; ++c) yt[c] = j == 0 ? w * row[c] : yt[c] + w * row[c];
        }
    }
    return y;
}

}  // namespace

TEST_SUITE("experts") {

TEST_CASE("f32 experts match the fp64 reference over shapes, E, k, tokens and layouts") {
    struct Shape {
        std::int64_t d, f;
    };
    const std::int64_t max_tokens = 17;
    int runs = 0;
    double worst = 0;
    for (Shape s : {Shape{13, 7}, Shape{64, 96}, Shape{128, 341}})
        for (std::int64_t E : {1, 3, 8}) {
            const Bank bank(E, s.d, s.f, static_cast<unsigned>(s.d + 10 * E));
            const auto x = test::random_input(max_tokens, s.d, static_cast<unsigned>(E));
            // Every expert on every token once; each run below reads the
            // terms its routes pick (its tokens: a prefix of x).
            const auto refs = bank.reference(x, max_tokens);
            for (int way = 0; way < 3; ++way) {
                const Experts experts = way == 0   ? bank.stacked(Layout::out_in, Options{2})
                                        : way == 1 ? bank.stacked(Layout::in_out, Options{2})
                                                   : Experts(bank.mixed(), Options{2});
                CHECK(experts.experts() == E);
                CHECK(experts.d() == s.d);
                CHECK(experts.f() == s.f);
                for (std::int64_t k :
                     {std::int64_t{1}, std::int64_t{2}, std::min<std::int64_t>(E, 4)})
                    for (std::int64_t tokens : {1, 2, 7, 17}) {
                        CAPTURE(s.d);
                        CAPTURE(s.f);
                        CAPTURE(E);
                        CAPTURE(way);
                        CAPTURE(k);
                        CAPTURE(tokens);
                        const Routes r(tokens, k, E, static_cast<unsigned>(tokens + 100 * k));
                        std::vector<std::vector<double>> prefix;
                        for (const auto& ref : refs)
                            prefix.emplace_back(ref.begin(), ref.begin() + tokens * s.d);
                        const double ratio =
                            worst_ratio(run(experts, x, tokens, r), prefix, tokens, s.d, s.f, r);
                        CHECK(ratio <= 1.0);
                        worst = std::max(worst, ratio);
                        ++runs;
                    }
            }
        }
    MESSAGE("worst error / bound over ", runs, " runs: ", worst);
}

TEST_CASE("q4_0 and q4_k experts: bit for bit each chosen expert run alone as its own Ffn") {
    // Their blocks quantise x and act per row (per block of 32 or 256 of
    // it), and our grouped kernels, which run every tile under 64 rows (and
    // every K-quant tile), sum each row in one order whatever the rows
    // beside it (kernels/grouped_gemm.hpp, kquant_gemm.hpp). So a row's
    // output depends on that row alone: batching a token with the others
    // that chose its expert changes no bit, and what is left is the
    // combine, whose order one_by_one spells. Each expert here sees at most
    // tokens * k = 36 rows.
    const std::int64_t d = 256, f = 512, E = 4, tokens = 9;
    const Bank bank(E, d, f, 5);
    const auto x = test::random_input(tokens, d, 6);
    for (Dtype dtype : {Dtype::q4_0, Dtype::q4_k}) {
        CAPTURE(dtype_name(dtype));
        Options options{2, dtype};
        const Experts experts = bank.stacked(Layout::out_in, options);
        CHECK(experts.implementation().dtype == dtype);
        std::vector<Ffn> alone;
        for (std::int64_t e = 0; e < E; ++e) alone.push_back(bank.expert(e, options));
        for (std::int64_t k : {1, 2, 4}) {
            CAPTURE(k);
            const Routes r(tokens, k, E, static_cast<unsigned>(k));
            CHECK(same_bits(run(experts, x, tokens, r), one_by_one(alone, x, tokens, d, r)));
        }
    }
}

TEST_CASE("bit-identical for 1, 2 and 3 threads") {
    const Bank bank(6, 128, 341, 9);
    const std::int64_t tokens = 17;
    const auto x = test::random_input(tokens, 128, 10);
    const Routes r(tokens, 3, 6, 11);
    for (Dtype dtype : {Dtype::f32, Dtype::q4_0}) {
        CAPTURE(dtype_name(dtype));
        const auto expected = run(bank.stacked(Layout::out_in, Options{1, dtype}), x, tokens, r);
        for (int threads : {2, 3}) {
            CAPTURE(threads);
            const Experts experts = bank.stacked(Layout::out_in, Options{threads, dtype});
            CHECK(experts.threads() == threads);
            CHECK(experts.implementation().threads == threads);
            CHECK(same_bits(run(experts, x, tokens, r), expected));
        }
    }
}

TEST_CASE("built from Ffn blocks: the bits of the same experts from views; mismatches refused") {
    const Bank bank(5, 64, 96, 15);
    const std::int64_t tokens = 9;
    const auto x = test::random_input(tokens, 64, 16);
    const Routes r(tokens, 2, 5, 17);
    for (Dtype dtype : {Dtype::f32, Dtype::q4_0}) {
        CAPTURE(dtype_name(dtype));
        const Options o{2, dtype};
        std::vector<Ffn> blocks;
        for (std::int64_t e = 0; e < bank.E; ++e) blocks.push_back(bank.expert(e, o));
        const Experts from_blocks(std::move(blocks));
        CHECK(from_blocks.experts() == bank.E);
        CHECK(same_bits(run(from_blocks, x, tokens, r),
                        run(bank.stacked(Layout::out_in, o), x, tokens, r)));
    }
    const auto refused = [](std::vector<Ffn> blocks) {
        try {
            Experts e(std::move(blocks));
        } catch (const Error& e) {
            return e.status() == Status::invalid_argument;
        }
        return false;
    };
    CHECK(refused({}));
    const Bank other(1, 64, 80, 18);
    std::vector<Ffn> shapes;
    shapes.push_back(bank.expert(0, Options{2}));
    shapes.push_back(other.expert(0, Options{2}));
    CHECK(refused(std::move(shapes)));
    std::vector<Ffn> counts;
    counts.push_back(bank.expert(0, Options{2}));
    counts.push_back(bank.expert(1, Options{1}));
    CHECK(refused(std::move(counts)));
}

TEST_CASE("in place: y may be x") {
    const Bank bank(4, 64, 96, 12);
    const Experts experts = bank.stacked(Layout::out_in, Options{2});
    for (std::int64_t tokens : {1, 7, 17}) {
        CAPTURE(tokens);
        const Routes r(tokens, 2, 4, 13);
        auto x = test::random_input(tokens, 64, 14);
        const auto expected = run(experts, x, tokens, r);
        experts.forward(x.data(), x.data(), tokens, r.ids.data(), r.weights.data(), r.k);
        CHECK(same_bits(x, expected));
    }
}

TEST_CASE("routing corners: one expert for all, idle experts, repeated ids, k = E") {
    const std::int64_t E = 5, d = 64, f = 96, tokens = 7;
    const Bank bank(E, d, f, 15);
    const Experts experts = bank.stacked(Layout::out_in, Options{2});
    std::vector<Ffn> alone;
    for (std::int64_t e = 0; e < E; ++e) alone.push_back(bank.expert(e, Options{2}));
    const auto x = test::random_input(tokens, d, 16);
    const auto refs = bank.reference(x, tokens);
    const bool panels = experts.implementation().matmul.find("panels") != std::string::npos;
    auto check = [&](const Routes& r) {
        const auto y = run(experts, x, tokens, r);
        CHECK(worst_ratio(y, refs, tokens, d, f, r) <= 1.0);
        // The panel kernels (f32 on AVX2 and later) fix each row's sums
        // whatever rows share its tile (kernels/panel_gemm.hpp), so here f32
        // too gives a row's bits whatever rows share its call; oneDNN's
        // kernels promise no such thing.
        if (panels) CHECK(same_bits(y, one_by_one(alone, x, tokens, d, r)));
    };
    SUBCASE("every token to expert 3 alone; the others idle") {
        Routes r(tokens, 1, E, 1);
        std::fill(r.ids.begin(), r.ids.end(), 3);
        check(r);
        // Expert 3 alone, weight 1: exactly its Ffn's output for the batch.
        std::fill(r.weights.begin(), r.weights.end(), 1.0f);
        std::vector<float> y3(x.size());
        alone[3].forward(x.data(), y3.data(), tokens);
        CHECK(same_bits(run(experts, x, tokens, r), y3));
    }
    SUBCASE("every token to experts 1 and 4; 0, 2 and 3 idle") {
        Routes r(tokens, 2, E, 2);
        for (std::int64_t t = 0; t < tokens; ++t) {
            r.ids[t * 2] = t % 2 ? 4 : 1;
            r.ids[t * 2 + 1] = t % 2 ? 1 : 4;
        }
        check(r);
    }
    SUBCASE("the same expert twice in one token: two terms") {
        Routes r(tokens, 3, E, 3);
        for (std::int64_t t = 0; t < tokens; ++t) r.ids[t * 3] = r.ids[t * 3 + 2] = 2;
        check(r);
        // 0.25 and 0.25 on one expert is 0.5 on it: powers of two, so each
        // product and the sum are exact.
        Routes twice(tokens, 2, E, 4), once(tokens, 1, E, 4);
        for (std::int64_t t = 0; t < tokens; ++t) {
            twice.ids[t * 2] = twice.ids[t * 2 + 1] = once.ids[t] = 0;
            twice.weights[t * 2] = twice.weights[t * 2 + 1] = 0.25f;
            once.weights[t] = 0.5f;
        }
        CHECK(same_bits(run(experts, x, tokens, twice), run(experts, x, tokens, once)));
    }
    SUBCASE("k = E: every expert on every token, in a different order per token") {
        Routes r(tokens, E, E, 5);
        for (std::int64_t t = 0; t < tokens; ++t)
            for (std::int64_t j = 0; j < E; ++j) r.ids[t * E + j] = std::int32_t((j + t) % E);
        check(r);
    }
    SUBCASE("tokens = 0 does nothing, whatever the pointers") {
        CHECK_NOTHROW(experts.forward(nullptr, nullptr, 0, nullptr, nullptr, 0));
    }
}

TEST_CASE("forward refuses bad arguments and writes nothing") {
    const std::int64_t E = 3, d = 13, f = 7, tokens = 4, k = 2;
    const Bank bank(E, d, f, 17);
    const Experts experts = bank.stacked(Layout::out_in, Options{2});
    const auto x = test::random_input(tokens, d, 18);
    const Routes good(tokens, k, E, 19);
    const auto bad = Status::invalid_argument;
    const float sentinel = -12345.5f;

    // Runs forward with `r` into a y of sentinels, expecting the error and y untouched.
    auto refused = [&](const Routes& r, const std::string& needle) {
        std::vector<float> y(x.size(), sentinel);
        const auto before = y;
        expect_error(
            [&] { experts.forward(x.data(), y.data(), tokens, r.ids.data(), r.weights.data(), k); },
            bad, needle);
        CHECK(same_bits(y, before));
    };
    {
        Routes r = good;
        r.ids[1 * k + 1] = std::int32_t(E);
        refused(r, "ids[t = 1, j = 1] = 3 is not an expert: ids must be in [0, 3)");
    }
    {
        Routes r = good;
        r.ids[3 * k + 0] = -1;
        refused(r, "ids[t = 3, j = 0] = -1");
    }
    {
        Routes r = good;
        r.weights[2 * k + 1] = NAN;
        refused(r, "weights[t = 2, j = 1] = nan must be finite");
    }
    {
        Routes r = good;
        r.weights[0] = -std::numeric_limits<float>::infinity();
        refused(r, "weights[t = 0, j = 0] = -inf must be finite");
    }

    std::vector<float> y(x.size(), sentinel);
    const auto before = y;
    const std::int32_t* ids = good.ids.data();
    const float* w = good.weights.data();
    expect_error([&] { experts.forward(x.data(), y.data(), tokens, ids, w, 0); }, bad,
                 "k must be >= 1 (got 0)");
    expect_error([&] { experts.forward(x.data(), y.data(), -1, ids, w, k); }, bad,
                 "tokens must be >= 0 (got -1)");
    expect_error([&] { experts.forward(nullptr, y.data(), tokens, ids, w, k); }, bad, "x is null");
    expect_error([&] { experts.forward(x.data(), nullptr, tokens, ids, w, k); }, bad, "y is null");
    expect_error([&] { experts.forward(x.data(), y.data(), tokens, nullptr, w, k); }, bad,
                 "ids is null");
    expect_error([&] { experts.forward(x.data(), y.data(), tokens, ids, nullptr, k); }, bad,
                 "weights is null");
    const std::int64_t huge = std::numeric_limits<std::int64_t>::max() / 2;
    expect_error([&] { experts.forward(x.data(), y.data(), huge, ids, w, k); }, bad, "overflows");
    expect_error([&] { experts.forward(x.data(), y.data(), 1, ids, w, huge); }, bad, "overflows");
    CHECK(same_bits(y, before));

    // y one float past x: overlapping, not the same buffer.
    std::vector<float> both(x.size() + 1, sentinel);
    std::copy(x.begin(), x.end(), both.begin());
    const auto both_before = both;
    expect_error([&] { experts.forward(both.data(), both.data() + 1, tokens, ids, w, k); }, bad,
                 "x and y overlap");
    CHECK(same_bits(both, both_before));
    // y over the weights it is still to read.
    std::vector<float> routed(x.size(), sentinel);
    std::copy(good.weights.begin(), good.weights.end(), routed.begin());
    const auto routed_before = routed;
    expect_error([&] { experts.forward(x.data(), routed.data(), tokens, ids, routed.data(), k); },
                 bad, "y overlaps weights");
    CHECK(same_bits(routed, routed_before));
}

TEST_CASE("construction refuses no experts, bad experts and experts of different shapes") {
    const auto bad = Status::invalid_argument;
    const Bank bank(3, 13, 7, 20);
    const Bank other(1, 13, 9, 21);

    expect_error([&] { (void)Experts(std::vector<ExpertWeights>{}); }, bad,
                 "Experts: experts is empty");
    auto v = bank.mixed();
    v[2] = other.weights(0, Layout::out_in);
    expect_error([&] { (void)Experts(v); }, bad,
                 {"Experts: expert 2 is (d = 13, f = 9)", "expert 0 is (d = 13, f = 7)"});
    v = bank.mixed();
    v[1].gate.data = nullptr;
    expect_error([&] { (void)Experts(v); }, bad, "Experts: expert 1: gate: data is null");
    v = bank.mixed();
    v[2].down = WeightView::out_in(bank.down.data(), 7, 7);
    expect_error([&] { (void)Experts(v); }, bad, "Experts: expert 2: down is (7, 7)");
    expect_error([&] { (void)Experts(bank.mixed(), Options{-1}); }, bad,
                 "Experts: expert 0: options.threads");

    const float* g = bank.gate.data();
    const float* u = bank.up.data();
    const float* dn = bank.down.data();
    expect_error([&] { (void)Experts::stacked(g, u, dn, 0, 13, 7, Layout::out_in); }, bad,
                 "Experts::stacked: experts must be >= 1 (got 0)");
    expect_error([&] { (void)Experts::stacked(g, u, dn, 3, 0, 7, Layout::out_in); }, bad,
                 "d and f must be >= 1 (got d = 0, f = 7)");
    expect_error([&] { (void)Experts::stacked(g, u, nullptr, 3, 13, 7, Layout::out_in); }, bad,
                 "down is null");
    expect_error([&] { (void)Experts::stacked(g, u, dn, 3, 13, 7, static_cast<Layout>(5)); }, bad,
                 "layout must be");
    const std::int64_t big = std::int64_t{1} << 31;
    expect_error([&] { (void)Experts::stacked(g, u, dn, 3, big, big, Layout::out_in); }, bad,
                 "overflows");
}

TEST_CASE("accessors, moves, and use after a move") {
    const Bank bank(3, 13, 7, 22);
    Experts a = bank.stacked(Layout::in_out, Options{2, Dtype::q8_0});
    const Ffn one = bank.expert(0, Options{2, Dtype::q8_0});
    CHECK(a.implementation().dtype == Dtype::q8_0);
    CHECK(a.implementation().matmul == one.implementation().matmul);
    CHECK(a.threads() == 2);

    const auto x = test::random_input(3, 13, 23);
    const Routes r(3, 2, 3, 24);
    const auto expected = run(a, x, 3, r);
    Experts b = std::move(a);
    CHECK(same_bits(run(b, x, 3, r), expected));
    expect_error([&] { (void)a.d(); }, Status::invalid_argument,
                 "Experts: used after being moved from");
    expect_error([&] { (void)run(a, x, 3, r); }, Status::invalid_argument,
                 "Experts: used after being moved from");
    a = std::move(b);
    CHECK(a.experts() == 3);
    CHECK(same_bits(run(a, x, 3, r), expected));
}

TEST_CASE("two threads calling forward at once give the bits of one call") {
    const Bank bank(8, 128, 341, 25);
    const Experts experts = bank.stacked(Layout::out_in, Options{2});
    struct Job {
        std::int64_t tokens;
        std::vector<float> x;
        Routes r;
        std::vector<float> expected;
    };
    std::vector<Job> jobs;
    for (std::int64_t tokens : {3, 17}) {
        Job job{tokens,
                test::random_input(tokens, 128, unsigned(tokens)),
                Routes(tokens, 2, 8, unsigned(tokens + 1)),
                {}};
        job.expected = run(experts, job.x, tokens, job.r);
        jobs.push_back(std::move(job));
    }
    int mismatches[2] = {0, 0};
    auto hammer = [&](int c) {
        for (int i = 0; i < 20; ++i) {
            const Job& job = jobs[static_cast<std::size_t>((c + i) % 2)];
            if (!same_bits(run(experts, job.x, job.tokens, job.r), job.expected)) ++mismatches[c];
        }
    };
    std::thread other(hammer, 1);
    hammer(0);
    other.join();
    CHECK(mismatches[0] == 0);
    CHECK(mismatches[1] == 0);
}

}  // TEST_SUITE
