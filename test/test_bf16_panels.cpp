// The bf16 panel kernels (kernels/bf16_panels.hpp):
//  - packing rounds to bf16 (nearest even) and places every column where
//    the layout says, padding the last panel with zeros;
//  - the scalar reference against fp64 dot products of the bf16 values;
//  - every ISA's kernels against the scalar reference, bit for bit, over
//    many shapes (1, 7, 13, 33, 341 inputs; 1..131 columns; 1..13 rows);
//  - unpacking gives the bf16 values exactly, on every ISA;
//  - NaN and inf in x or in a weight propagate to their own outputs only.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/half.hpp"
#include "kernels/bf16_panels.hpp"
#include "kernels/convert.hpp"
#include "reference.hpp"

using namespace swiglu::detail;

namespace {

// A (k x n) weight tile: its f32 values, their bf16 roundings and the packed tile.
struct Tile {
    std::int64_t k, n;
    std::vector<float> plain, rounded;
    std::vector<std::uint16_t> packed;

    Tile(std::int64_t k_, std::int64_t n_, unsigned seed)
        : k(k_),
          n(n_),
          plain(swiglu::test::uniform(std::size_t(k_ * n_), 1.0f, seed)),
          rounded(plain.size()),
          packed(bf16_panel_tile_bytes(k_, n_) / sizeof(std::uint16_t)) {
        round_to_bf16(plain.data(), rounded.data(), plain.size());
        pack_bf16_panels(plain.data(), k, n, packed.data());
    }
};

std::vector<float> gemm(const Bf16PanelKernels& kern, const Tile& t, const std::vector<float>& x,
                        std::int64_t rows) {
    // Outputs in a wider buffer: a kernel writing past n columns shows.
    const std::int64_t ldy = t.n + 3;
    std::vector<float> y(std::size_t(rows * ldy), -7.0f);
    kern.gemm(t.packed.data(), t.k, t.n, x.data(), t.k, rows, y.data(), ldy);
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = t.n; c < ldy; ++c) CHECK(y[std::size_t(r * ldy + c)] == -7.0f);
    std::vector<float> out(std::size_t(rows * t.n));
    for (std::int64_t r = 0; r < rows; ++r)
        std::memcpy(out.data() + r * t.n, y.data() + r * ldy, std::size_t(t.n) * sizeof(float));
    return out;
}

const std::int64_t kInputs[] = {1, 7, 13, 33, 341};
const std::int64_t kColumns[] = {1, 15, 16, 17, 33, 131};

}  // namespace

TEST_SUITE("bf16_panels") {

TEST_CASE("packing rounds to bf16 and places every column, zero padding") {
    const Tile t(13, 37, 1);
    for (std::int64_t i = 0; i < t.k; ++i)
        for (std::int64_t c = 0; c < bf16_panels(t.n) * kPanelColumns; ++c) {
            const std::uint16_t v = t.packed[std::size_t(
                ((c / kPanelColumns) * t.k + i) * kPanelColumns + c % kPanelColumns)];
            if (c < t.n)
                CHECK(bf16_to_f32(v) == t.rounded[std::size_t(i * t.n + c)]);
            else
                CHECK(v == 0);
        }
}

TEST_CASE("the scalar kernels match fp64 dot products of the bf16 values") {
    const Bf16PanelKernels scalar = bf16_panel_kernels(Isa::scalar);
    for (std::int64_t k : kInputs)
        for (std::int64_t n : kColumns) {
            CAPTURE(k);
            CAPTURE(n);
            const Tile t(k, n, unsigned(k * 31 + n));
            const std::int64_t rows = 3;
            const auto x = swiglu::test::uniform(std::size_t(rows * k), 2.0f, unsigned(k + n));
            const auto y = gemm(scalar, t, x, rows);
            for (std::int64_t r = 0; r < rows; ++r)
                for (std::int64_t c = 0; c < n; ++c) {
                    double exact = 0, magnitude = 0;
                    for (std::int64_t i = 0; i < k; ++i) {
                        const double p = double(x[std::size_t(r * k + i)]) *
                                         double(t.rounded[std::size_t(i * n + c)]);
                        exact += p;
                        magnitude += std::fabs(p);
                    }
                    // k fmas in f32: each rounds once, by at most 2^-24 of
                    // the running sum, itself at most sum |products|.
                    CHECK(std::fabs(double(y[std::size_t(r * n + c)]) - exact) <=
                          double(k) * 0x1p-24 * magnitude + 1e-30);
                }
        }
}

TEST_CASE("every ISA's kernels give the scalar reference's bits") {
    const Bf16PanelKernels scalar = bf16_panel_kernels(Isa::scalar);
    for (Isa isa : kIsas) {
        const Bf16PanelKernels kern = bf16_panel_kernels(isa);
        if (!kern || !isa_available(isa) || isa == Isa::scalar) continue;
        CAPTURE(isa_name(isa));
        for (std::int64_t k : kInputs)
            for (std::int64_t n : kColumns)
                for (std::int64_t rows : {1, 2, 5, 6, 7, 12, 13}) {
                    CAPTURE(k);
                    CAPTURE(n);
                    CAPTURE(rows);
                    const Tile t(k, n, unsigned(k + 7 * n));
                    const auto x =
                        swiglu::test::uniform(std::size_t(rows * k), 3.0f, unsigned(rows + k));
                    CHECK(gemm(kern, t, x, rows) == gemm(scalar, t, x, rows));
                }
    }
}

TEST_CASE("unpacking a tile gives its bf16 values, on every ISA") {
    for (Isa isa : kIsas) {
        const Bf16PanelKernels kern = bf16_panel_kernels(isa);
        if (!kern || !isa_available(isa)) continue;
        CAPTURE(isa_name(isa));
        for (std::int64_t n : kColumns) {
            const Tile t(33, n, unsigned(n));
            std::vector<float> out(std::size_t(t.k * t.n), -1.0f);
            kern.unpack(t.packed.data(), t.k, t.n, out.data());
            CHECK(out == t.rounded);
        }
    }
}

TEST_CASE("NaN and inf in x or in a weight stay in their own outputs") {
    for (Isa isa : kIsas) {
        const Bf16PanelKernels kern = bf16_panel_kernels(isa);
        if (!kern || !isa_available(isa)) continue;
        CAPTURE(isa_name(isa));
        const std::int64_t k = 13, n = 20, rows = 3;
        std::vector<float> w = swiglu::test::uniform(std::size_t(k * n), 1.0f, 5);
        w[std::size_t(4 * n + 17)] = NAN;  // column 17
        std::vector<std::uint16_t> packed(bf16_panel_tile_bytes(k, n) / 2);
        pack_bf16_panels(w.data(), k, n, packed.data());
        std::vector<float> x = swiglu::test::uniform(std::size_t(rows * k), 1.0f, 6);
        x[std::size_t(1 * k + 2)] = INFINITY;  // row 1
        std::vector<float> y(std::size_t(rows * n));
        kern.gemm(packed.data(), k, n, x.data(), k, rows, y.data(), n);
        for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t c = 0; c < n; ++c) {
                const float v = y[std::size_t(r * n + c)];
                if (c == 17 || r == 1)
                    CHECK(!std::isfinite(v));
                else
                    CHECK(std::isfinite(v));
            }
    }
}

}  // TEST_SUITE
