// The panel kernels (kernels/panel_gemm.hpp), f32 and bf16 weights:
//  - packing (bf16: rounded to nearest even) places every column where the
//    layout says, padding the last panel with zeros;
//  - the scalar reference against fp64 dot products of the stored values;
//  - every ISA's kernels against the scalar reference, bit for bit, over
//    many shapes (1, 7, 13, 33, 341 inputs; 1..131 columns: up to 9 panels,
//    which few rows read 2 or 4 at a time, the last ones alone; 1..17 and
//    33 rows: every pass height each ISA has, and more than one pass);
//  - calls over consecutive ranges of the inputs (PanelGemmRange) give one
//    call's bits, on every ISA;
//  - NaN and inf in x or in a weight propagate to their own outputs only.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/half.hpp"
#include "kernels/convert.hpp"
#include "kernels/panel_gemm.hpp"
#include "reference.hpp"

using namespace swiglu::detail;

namespace {

const PanelType kTypes[] = {PanelType::f32, PanelType::bf16};
const char* name(PanelType t) { return t == PanelType::f32 ? "f32" : "bf16"; }

// A (k x n) weight tile: its f32 values, the values stored (bf16: rounded)
// and the packed tile.
struct Tile {
    std::int64_t k, n;
    std::vector<float> plain, rounded;
    std::vector<unsigned char> packed;

    Tile(PanelType type, std::int64_t k_, std::int64_t n_, unsigned seed)
        : k(k_),
          n(n_),
          plain(swiglu::test::uniform(std::size_t(k_ * n_), 1.0f, seed)),
          rounded(plain),
          packed(panel_tile_bytes(type, k_, n_)) {
        if (type == PanelType::bf16) round_to_bf16(plain.data(), rounded.data(), plain.size());
        pack_panels(type, plain.data(), k, n, packed.data());
    }
    // The stored value of element (i, c) of a panel at column c.
    float stored(PanelType type, std::int64_t i, std::int64_t c) const {
        const std::size_t at =
            std::size_t(((c / kPanelColumns) * k + i) * kPanelColumns + c % kPanelColumns);
        if (type == PanelType::f32) {
            float v;
            std::memcpy(&v, packed.data() + at * 4, 4);
            return v;
        }
        std::uint16_t h;
        std::memcpy(&h, packed.data() + at * 2, 2);
        return bf16_to_f32(h);
    }
};

std::vector<float> gemm(const PanelTypeKernels& kern, const Tile& t, const std::vector<float>& x,
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

// Checks that the kernels of every SIMD ISA this CPU runs give the scalar
// kernels' bits on tiles of k x n and `rows` rows of x.
void check_against_scalar(std::int64_t k, std::int64_t n, std::int64_t rows) {
    CAPTURE(k);
    CAPTURE(n);
    CAPTURE(rows);
    for (PanelType type : kTypes) {
        const Tile t(type, k, n, unsigned(k + 7 * n));
        const auto x = swiglu::test::uniform(std::size_t(rows * k), 3.0f, unsigned(rows + k));
        const std::vector<float> want = gemm(panel_kernels(Isa::scalar)[type], t, x, rows);
        for (const IsaKernels<PanelKernels>& entry : panel_dispatch().runnable()) {
            const Isa isa = entry.isa;
            const PanelTypeKernels kern = entry.table[type];
            if (isa == Isa::scalar) continue;
            CAPTURE(name(type));
            CAPTURE(isa_name(isa));
            CHECK(gemm(kern, t, x, rows) == want);
        }
    }
}

}  // namespace

TEST_SUITE("panel_gemm") {

TEST_CASE("packing places every column, bf16 rounded, zero padding") {
    for (PanelType type : kTypes) {
        CAPTURE(name(type));
        const Tile t(type, 13, 37, 1);
        for (std::int64_t i = 0; i < t.k; ++i)
            for (std::int64_t c = 0; c < panel_count(t.n) * kPanelColumns; ++c) {
                const float v = t.stored(type, i, c);
                if (c < t.n)
                    CHECK(v == t.rounded[std::size_t(i * t.n + c)]);
                else
                    CHECK(v == 0.0f);
            }
    }
}

TEST_CASE("the scalar kernels match fp64 dot products of the stored values") {
    for (PanelType type : kTypes)
        for (std::int64_t k : kInputs)
            for (std::int64_t n : kColumns) {
                CAPTURE(name(type));
                CAPTURE(k);
                CAPTURE(n);
                const PanelTypeKernels scalar = panel_kernels(Isa::scalar)[type];
                const Tile t(type, k, n, unsigned(k * 31 + n));
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
    for (std::int64_t k : kInputs)
        for (std::int64_t n : kColumns)
            for (std::int64_t rows = 1; rows <= 33; rows += rows < 17 ? 1 : 16)
                check_against_scalar(k, n, rows);
}

// Heights and tile sizes where a kernel changes how it passes over the rows
// (panel_gemm_avx512.cpp: 48 rows and up, and 16 and up in a tile of 512
// KiB or more, take 6 rows over 4 panels and prefetch x), each side of the
// switch, with every remainder after the passes of 6 (1 or 2 left: the
// last 7 or 8 rows as two passes, row_passes.hpp).
TEST_CASE("tall row tiles and streamed tiles: every ISA gives the scalar reference's bits") {
    struct Shape {
        std::int64_t k, n;
        std::vector<std::int64_t> rows;
    };
    const Shape shapes[] = {
        {341, 131, {47, 48, 49, 50, 51, 52, 53, 64, 71}},
        {4099, 67, {5, 15, 16, 17, 19, 20, 23, 32, 47}},  // f32 and bf16: over 512 KiB
        {2053, 67, {16, 17}},                             // f32 over 512 KiB, bf16 under
    };
    for (const Shape& s : shapes)
        for (std::int64_t rows : s.rows) check_against_scalar(s.k, s.n, rows);
}

// The backward's dx runs its inputs in slices of whole blocks
// (core/backward.hpp): each slice after the first adds to what the ones
// before wrote, and together they must give one call's bits.
TEST_CASE("calls over consecutive input ranges give one call's bits, on every ISA") {
    struct Shape {
        std::int64_t k, n, rows;
        std::vector<std::int64_t> cuts;  // multiples of kPanelBlock inside (0, k)
    };
    const Shape shapes[] = {
        {129, 17, 3, {128}},
        {341, 67, 17, {128, 256}},
        {4099, 67, 64, {1024, 3968, 4096}},  // 6 x 4 passes, streamed, a 3-input last slice
        {2053, 131, 5, {2048}},
    };
    for (const Shape& s : shapes)
        for (PanelType type : kTypes)
            for (const IsaKernels<PanelKernels>& entry : panel_dispatch().runnable()) {
                const Isa isa = entry.isa;
                const PanelTypeKernels kern = entry.table[type];
                CAPTURE(s.k);
                CAPTURE(s.rows);
                CAPTURE(name(type));
                CAPTURE(isa_name(isa));
                const Tile t(type, s.k, s.n, unsigned(s.k + s.n));
                const auto x =
                    swiglu::test::uniform(std::size_t(s.rows * s.k), 3.0f, unsigned(s.rows));
                const std::vector<float> want = gemm(kern, t, x, s.rows);
                std::vector<float> got(want.size(), -7.0f);
                std::int64_t begin = 0;
                for (std::size_t c = 0; c <= s.cuts.size(); ++c) {
                    const std::int64_t end = c < s.cuts.size() ? s.cuts[c] : s.k;
                    kern.range(t.packed.data(), s.k, begin, end, s.n, x.data(), s.k, s.rows,
                               got.data(), s.n);
                    begin = end;
                }
                CHECK(got == want);
            }
}

TEST_CASE("NaN and inf in x or in a weight stay in their own outputs") {
    for (PanelType type : kTypes)
        for (const IsaKernels<PanelKernels>& entry : panel_dispatch().runnable()) {
            const Isa isa = entry.isa;
            const PanelTypeKernels kern = entry.table[type];
            CAPTURE(name(type));
            CAPTURE(isa_name(isa));
            const std::int64_t k = 13, n = 20, rows = 3;
            std::vector<float> w = swiglu::test::uniform(std::size_t(k * n), 1.0f, 5);
            w[std::size_t(4 * n + 17)] = NAN;  // column 17
            std::vector<unsigned char> packed(panel_tile_bytes(type, k, n));
            pack_panels(type, w.data(), k, n, packed.data());
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
