// The weight-gradient kernels (kernels/gradient_gemm.hpp):
//  - packing places every column of a block range where the layout says,
//    padding the last strip or panel with zeros, and nothing else;
//  - the scalar reference against fp64 dot products, written and added;
//  - every ISA's kernel against the scalar reference, bit for bit, over many
//    shapes (1, 7, 13, 33, 256 token rows; 1..19 and 341 dW rows: every
//    strip height, several strips; 1..131 columns: 1 to 9 panels, which
//    AVX-512 reads 4 at a time, then 3, 2 or 1), never writing outside the
//    tile;
//  - NaN and inf in an operand propagate to their own outputs only.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/gradient_gemm.hpp"
#include "reference.hpp"

using namespace swiglu::detail;

namespace {

// S (k x rows) and B (k x cols) with row strides wider than they are, and
// both packed.
struct Operands {
    std::int64_t k, rows, cols, lds, ldb;
    std::vector<float> s, b, strips, panels;

    Operands(std::int64_t k_, std::int64_t rows_, std::int64_t cols_, unsigned seed)
        : k(k_),
          rows(rows_),
          cols(cols_),
          lds(rows_ + 5),
          ldb(cols_ + 3),
          s(swiglu::test::uniform(std::size_t(k_ * lds), 2.0f, seed)),
          b(swiglu::test::uniform(std::size_t(k_ * ldb), 1.0f, seed + 1)),
          strips(std::size_t(strip_count(rows_) * kGradientStrip * k_), -9.0f),
          panels(std::size_t(panel_count(cols_) * kPanelColumns * k_), -9.0f) {
        pack_column_blocks(s.data(), lds, k, rows, kGradientStrip, 0, strip_count(rows),
                           strips.data(), k);
        pack_column_blocks(b.data(), ldb, k, cols, kPanelColumns, 0, panel_count(cols),
                           panels.data(), k);
    }
};

// dW through `gemm`, in a wider buffer that starts as `start`: a kernel
// writing past the tile shows.
std::vector<float> run(GradientGemm gemm, const Operands& o, bool add, float start) {
    const std::int64_t ldw = o.cols + 3;
    std::vector<float> w(std::size_t(o.rows * ldw), start);
    gemm(o.strips.data(), o.panels.data(), o.k, o.rows, o.cols, w.data(), ldw, add);
    for (std::int64_t r = 0; r < o.rows; ++r)
        for (std::int64_t c = o.cols; c < ldw; ++c) CHECK(w[std::size_t(r * ldw + c)] == start);
    return w;
}

const std::int64_t kTokens[] = {1, 7, 13, 33, 256, 512};  // up to a span
const std::int64_t kCols[] = {1, 15, 16, 17, 33, 64, 65, 131};

}  // namespace

TEST_SUITE("gradient_gemm") {

TEST_CASE("packing places every column of the range, zero padding, nothing else") {
    // n = 48: whole strips and panels only; a width other than the
    // kernels' (5) takes the generic copy.
    const std::int64_t k = 5, ld = 49;
    const auto m = swiglu::test::uniform(std::size_t(k * ld), 1.0f, 3);
    for (std::int64_t n : {37, 48})
        for (std::int64_t width : {kGradientStrip, kPanelColumns, std::int64_t(5)}) {
            CAPTURE(n);
            CAPTURE(width);
            const std::int64_t blocks = (n + width - 1) / width;
            std::vector<float> packed(std::size_t(blocks * k * width), -9.0f);
            pack_column_blocks(m.data(), ld, k, n, width, 1, blocks, packed.data(), k);
            for (std::int64_t b = 0; b < blocks; ++b)
                for (std::int64_t t = 0; t < k; ++t)
                    for (std::int64_t j = 0; j < width; ++j) {
                        const float v = packed[std::size_t((b * k + t) * width + j)];
                        const std::int64_t c = b * width + j;
                        if (b == 0)
                            CHECK(v == -9.0f);  // outside the range: untouched
                        else if (c < n)
                            CHECK(v == m[std::size_t(t * ld + c)]);
                        else
                            CHECK(v == 0.0f);
                    }
        }
}

TEST_CASE("token rows packed in ranges into longer blocks equal one packing of them all") {
    // As the backward packs a span: each chunk's rows at their offset.
    const std::int64_t k = 11, n = 37, ld = 40, split = 4;
    const auto m = swiglu::test::uniform(std::size_t(k * ld), 1.0f, 5);
    for (std::int64_t width : {kGradientStrip, kPanelColumns}) {
        CAPTURE(width);
        const std::int64_t blocks = (n + width - 1) / width;
        std::vector<float> whole(std::size_t(blocks * k * width), -9.0f), pieces(whole);
        pack_column_blocks(m.data(), ld, k, n, width, 0, blocks, whole.data(), k);
        pack_column_blocks(m.data(), ld, split, n, width, 0, blocks, pieces.data(), k);
        pack_column_blocks(m.data() + split * ld, ld, k - split, n, width, 0, blocks,
                           pieces.data() + split * width, k);
        CHECK(pieces == whole);
    }
}

TEST_CASE("the scalar kernel matches fp64 dot products, written and added") {
    const GradientGemm scalar = gradient_gemm(Isa::scalar);
    for (std::int64_t k : kTokens)
        for (std::int64_t cols : {1, 17, 131}) {
            CAPTURE(k);
            CAPTURE(cols);
            const Operands o(k, 13, cols, unsigned(k * 7 + cols));
            for (bool add : {false, true}) {
                CAPTURE(add);
                const float start = 0.75f;
                const auto w = run(scalar, o, add, start);
                for (std::int64_t r = 0; r < o.rows; ++r)
                    for (std::int64_t c = 0; c < cols; ++c) {
                        double exact = 0, magnitude = 0;
                        for (std::int64_t t = 0; t < k; ++t) {
                            const double p = double(o.s[std::size_t(t * o.lds + r)]) *
                                             double(o.b[std::size_t(t * o.ldb + c)]);
                            exact += p;
                            magnitude += std::fabs(p);
                        }
                        // k fmas in f32, each rounding by at most 2^-24 of the
                        // running sum (at most sum |products|); adding to
                        // `start` rounds once more, by 2^-24 of the result.
                        double bound = double(k) * 0x1p-24 * magnitude + 1e-30;
                        if (add) {
                            exact += start;
                            bound += 0x1p-24 * (magnitude + start);
                        }
                        CHECK(std::fabs(double(w[std::size_t(r * (cols + 3) + c)]) - exact) <=
                              bound);
                    }
            }
        }
}

TEST_CASE("every ISA's kernel gives the scalar reference's bits") {
    const GradientGemm scalar = gradient_gemm(Isa::scalar);
    for (const IsaKernels<GradientGemm>& entry : gradient_dispatch().runnable()) {
        const Isa isa = entry.isa;
        const GradientGemm gemm = entry.table;
        if (isa == Isa::scalar) continue;
        CAPTURE(isa_name(isa));
        for (std::int64_t k : kTokens)
            for (std::int64_t cols : kCols)
                for (std::int64_t rows = 1; rows <= 341; rows += rows < 19 ? 1 : 322) {
                    CAPTURE(k);
                    CAPTURE(cols);
                    CAPTURE(rows);
                    const Operands o(k, rows, cols, unsigned(k + 3 * rows + 11 * cols));
                    for (bool add : {false, true}) {
                        CAPTURE(add);
                        CHECK(run(gemm, o, add, 0.5f) == run(scalar, o, add, 0.5f));
                    }
                }
    }
}

TEST_CASE("NaN and inf in an operand stay in their own outputs") {
    for (const IsaKernels<GradientGemm>& entry : gradient_dispatch().runnable()) {
        const Isa isa = entry.isa;
        const GradientGemm gemm = entry.table;
        CAPTURE(isa_name(isa));
        Operands o(9, 8, 20, 4);
        o.s[std::size_t(2 * o.lds + 5)] = NAN;        // dW row 5
        o.b[std::size_t(6 * o.ldb + 17)] = INFINITY;  // dW column 17
        pack_column_blocks(o.s.data(), o.lds, o.k, o.rows, kGradientStrip, 0, strip_count(o.rows),
                           o.strips.data(), o.k);
        pack_column_blocks(o.b.data(), o.ldb, o.k, o.cols, kPanelColumns, 0, panel_count(o.cols),
                           o.panels.data(), o.k);
        const auto w = run(gemm, o, false, 0.0f);
        for (std::int64_t r = 0; r < o.rows; ++r)
            for (std::int64_t c = 0; c < o.cols; ++c) {
                const float v = w[std::size_t(r * (o.cols + 3) + c)];
                if (r == 5 || c == 17)
                    CHECK(!std::isfinite(v));
                else
                    CHECK(std::isfinite(v));
            }
    }
}

}  // TEST_SUITE
