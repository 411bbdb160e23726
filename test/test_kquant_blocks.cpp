// GGUF's K-quant super-blocks Q4_K, Q5_K, Q6_K (kernels/kquant_blocks.hpp,
// rows of the format table) and files of them:
//  - super-blocks written byte by byte from the layout (the 6-bit scales and
//    mins of sub-blocks 4-7 split over three bytes, Q5_K's fifth bits, Q6_K's
//    2-bit pairs and signed sub-scales) decode to the values worked out by
//    hand;
//  - our quantisers give ggml's reference blocks bit for bit on fixed inputs
//    and those decode to ggml's values (support/kquant_vectors.hpp);
//  - random rows come back within each format's rounding bound; a padded
//    last super-block, NaN and inf, zeros;
//  - a GGUF file in Q4_K_M's mix (gate, up Q4_K; down Q6_K) loads exactly and
//    runs in every dtype as the block made from its decoded weights does.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <swiglu/checkpoint.hpp>

#include "checkpoint_blocks.hpp"
#include "formats/format_table.hpp"
#include "gguf_writer.hpp"
#include "io/checkpoint_loader.hpp"
#include "kernels/kquant_blocks.hpp"
#include "kquant_vectors.hpp"

using namespace swiglu::detail;
using swiglu::Dtype;

namespace {

const FormatTraits& k_format(int i) { return traits(Format(int(Format::q4_k) + i)); }

std::vector<unsigned char> from_hex(const char* hex) {
    std::vector<unsigned char> out;
    for (std::size_t i = 0; hex[i] && hex[i + 1]; i += 2)
        out.push_back(static_cast<unsigned char>(std::stoi(std::string(hex + i, 2), nullptr, 16)));
    return out;
}

float from_bits(std::uint32_t bits) {
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
}

std::vector<float> decode(const FormatTraits& t, const std::vector<unsigned char>& bytes,
                          std::size_t n) {
    std::vector<float> out(n);
    t.decode(bytes.data(), n, out.data());
    return out;
}

// x quantised in format t: the row's super-blocks, the last one padded.
std::vector<unsigned char> quantize(const FormatTraits& t, const std::vector<float>& x) {
    std::vector<unsigned char> out(row_bytes(t, std::int64_t(x.size())));
    std::vector<BlockQ6K> aligned(super_blocks(x.size()) * 2);  // room for any of the three
    t.quantize(x.data(), x.size(), aligned.data());
    std::memcpy(out.data(), aligned.data(), out.size());
    return out;
}

// The head shared by the hand-made Q4_K and Q5_K blocks: d = 1, dmin = 0.5;
// sub-blocks' (sc, m): (1, 0) (2, 3) (63, 63) (0, 5) (17, 18) (33, 40)
// (48, 1) (63, 62). Sub-blocks 4-7 keep their low 4 bits in bytes 8-11 (sc
// low nibble, m high) and their top 2 bits atop bytes 0-3 (sc) and 4-7 (m).
const unsigned char kHead[16] = {0x00, 0x3C, 0x00, 0x38,                          // d, dmin
                                 0x41, 0x82, 0xFF, 0xC0, 0x40, 0x83, 0x3F, 0xC5,  // 0-7
                                 0x21, 0x81, 0x10, 0xEF};                         // 8-11

}  // namespace

TEST_SUITE("kquant") {

TEST_CASE("Q4_K and Q5_K: the 6-bit scales and mins unpack from their bytes") {
    const std::uint8_t sc[8] = {1, 2, 63, 0, 17, 33, 48, 63}, m[8] = {0, 3, 63, 5, 18, 40, 1, 62};
    for (int j = 0; j < 8; ++j) {
        std::uint8_t s = 0, mm = 0;
        unpack_scale_min(kHead + 4, j, s, mm);
        CAPTURE(j);
        CHECK(s == sc[j]);
        CHECK(mm == m[j]);
    }
}

TEST_CASE("Q4_K: a super-block built by hand decodes to the values worked out by hand") {
    // qs[k] = k: value l of sub-block j is the low (j even) or high nibble of
    // byte 32 (j / 2) + l; value = (1 * sc) * q - (0.5 * m).
    std::vector<unsigned char> b(kHead, kHead + 16);
    for (int k = 0; k < 128; ++k) b.push_back(static_cast<unsigned char>(k));
    REQUIRE(b.size() == sizeof(BlockQ4K));
    const std::vector<float> y = decode(traits(Format::q4_k), b, 256);
    CHECK(y[0] == 0.0f);      // j 0: byte 0 low 0: 1 * 0 - 0
    CHECK(y[17] == 1.0f);     // j 0: byte 17 = 0x11, low 1
    CHECK(y[47] == -1.5f);    // j 1: byte 15 high 0: 2 * 0 - 1.5
    CHECK(y[63] == 0.5f);     // j 1: byte 31 = 0x1F, high 1: 2 - 1.5
    CHECK(y[84] == 220.5f);   // j 2: byte 52 = 0x34, low 4: 252 - 31.5
    CHECK(y[127] == -2.5f);   // j 3: byte 63 high 3: 0 * 3 - 2.5
    CHECK(y[138] == 161.0f);  // j 4: byte 74 = 0x4A, low 10: 170 - 9
    CHECK(y[165] == 112.0f);  // j 5: byte 69 = 0x45, high 4: 132 - 20
    CHECK(y[223] == 719.5f);  // j 6: byte 127 = 0x7F, low 15: 720 - 0.5
    CHECK(y[224] == 347.0f);  // j 7: byte 96 = 0x60, high 6: 378 - 31
    CHECK(y[255] == 410.0f);  // j 7: byte 127 high 7: 441 - 31
}

TEST_CASE("Q5_K: the fifth bit of value l of sub-block j is bit j of qh[l]") {
    // The Q4_K block above with qh[5] = 0b10100101: +16 for value 5 of
    // sub-blocks 0, 2, 5 and 7; every other qh byte 0.
    std::vector<unsigned char> b(kHead, kHead + 16);
    for (int k = 0; k < 32; ++k) b.push_back(k == 5 ? 0xA5 : 0x00);
    for (int k = 0; k < 128; ++k) b.push_back(static_cast<unsigned char>(k));
    REQUIRE(b.size() == sizeof(BlockQ5K));
    const std::vector<float> y = decode(traits(Format::q5_k), b, 256);
    CHECK(y[5] == 21.0f);      // j 0: 5 + 16
    CHECK(y[37] == -1.5f);     // j 1: bit 1 clear, byte 5 high 0: 0 - 1.5
    CHECK(y[69] == 1291.5f);   // j 2: byte 37 = 0x25 low 5 + 16: 63 * 21 - 31.5
    CHECK(y[165] == 640.0f);   // j 5: byte 69 high 4 + 16: 33 * 20 - 20
    CHECK(y[197] == 239.5f);   // j 6: bit 6 clear, byte 101 = 0x65 low 5: 240 - 0.5
    CHECK(y[229] == 1355.0f);  // j 7: byte 101 high 6 + 16: 63 * 22 - 31
    CHECK(y[17] == 1.0f);      // untouched by qh: as in Q4_K
}

TEST_CASE("Q6_K: low nibbles, 2-bit pairs and s8 sub-scales decode to the hand-worked values") {
    // ql[k] = k; qh[3] = 0b11100100 (pairs 0, 1, 2, 3), qh[35] = 0xFF, the
    // rest 0; sub-scales -128, -7 .. 6 (k - 8 for k = 1..14), 127; d = 0.25.
    // In each half of 128 values, value 32 g + l takes the low (g < 2) or
    // high nibble of ql[32 (g & 1) + l] and bits 2g, 2g + 1 of qh[l].
    std::vector<unsigned char> b;
    for (int k = 0; k < 128; ++k) b.push_back(static_cast<unsigned char>(k));
    for (int k = 0; k < 64; ++k) b.push_back(k == 3 ? 0xE4 : k == 35 ? 0xFF : 0x00);
    for (int k = 0; k < 16; ++k)
        b.push_back(static_cast<unsigned char>(k == 0 ? 0x80 : k == 15 ? 0x7F : (k - 8) & 0xFF));
    b.push_back(0x00);
    b.push_back(0x34);  // d = 0.25
    REQUIRE(b.size() == sizeof(BlockQ6K));
    const std::vector<float> y = decode(traits(Format::q6_k), b, 256);
    CHECK(y[3] == 928.0f);       // ql[3] low 3, pair 0: q 3 - 32; 0.25 * -128 * -29
    CHECK(y[35] == 19.5f);       // ql[35] low 3, pair 1: 19 - 32; 0.25 * -6 * -13
    CHECK(y[67] == 0.0f);        // ql[3] high 0, pair 2: 32 - 32
    CHECK(std::signbit(y[67]));  // (0.25 * -4) * 0 = -0
    CHECK(y[99] == -9.0f);       // ql[35] high 2, pair 3: 50 - 32; 0.25 * -2 * 18
    CHECK(y[150] == -6.5f);      // second half: ql[86] low 6, qh[54] 0: 0.25 * 1 * -26
    CHECK(y[227] == 33.0f);      // ql[99] high 6, qh[35] pair 3: 54 - 32; 0.25 * 6 * 22
    CHECK(y[255] == -793.75f);   // ql[127] high 7, qh[63] 0: 0.25 * 127 * -25
}

TEST_CASE("the quantisers give ggml's reference blocks, which decode to ggml's values") {
    for (const auto& v : swiglu::test::kquant::kVectors) {
        CAPTURE(v.format);
        const FormatTraits& t = *format_by_name(v.format);
        std::vector<float> x(512);
        std::uint32_t n = 0;
        v.input(x.data(), n);
        x.resize(n);
        const std::vector<unsigned char> expected = from_hex(v.blocks);
        REQUIRE(expected.size() == row_bytes(t, n));
        CHECK(quantize(t, x) == expected);
        const std::vector<float> y = decode(t, expected, n);
        for (const auto& d : v.decoded) {
            if (d.index == 0 && d.bits == 0) break;
            CAPTURE(d.index);
            CHECK(y[d.index] == from_bits(d.bits));
        }
    }
}

// Rounding bounds, per sub-block of the padded row, from its range:
//  Q4_K, Q5_K: q in 0..nmax (15, 31) spans [min(x, 0), max x], so the step
//    is (max - min) / nmax and a value's rounding error is uniform within
//    half a step: RMS step / sqrt(12);
//  Q6_K: q - 32 in -32..31 spans +-max|x| (of 16 values): step max|x| / 31
//    at most (ggml tries scales up to (32 - 0.9) / max).
// The fits minimise the (weighted) squared error, which the 6-bit (Q6_K:
// 8-bit) sub-scales give a little back (the q are rounded again against the
// stored scales); a row's RMS error must stay within 1.05 times the RMS of
// those bounds (measured: 0.83-0.93 times; of a normal row's RMS, Q4_K
// 0.067, Q5_K 0.034, Q6_K 0.018).
TEST_CASE("random rows come back within the format's rounding bound") {
    const int sub[3] = {32, 32, 16}, nmax[3] = {15, 31, 31};
    std::mt19937 rng(5);
    for (int f = 0; f < 3; ++f) {
        const FormatTraits& t = k_format(f);
        for (bool normal : {true, false})
            for (std::size_t n : {256u, 512u, 768u, 300u}) {
                CAPTURE(t.name);
                CAPTURE(normal);
                CAPTURE(n);
                std::normal_distribution<float> gauss(0.0f, 1.0f);
                std::uniform_real_distribution<float> flat(-3.0f, 1.0f);
                std::vector<float> x(super_blocks(n) * kSuperBlock, 0.0f);  // padded with zeros
                for (std::size_t i = 0; i < n; ++i) x[i] = normal ? gauss(rng) : flat(rng);
                const std::vector<float> y =
                    decode(t, quantize(t, {x.begin(), x.begin() + long(n)}), x.size());
                double bound2 = 0, error2 = 0;
                for (std::size_t s = 0; s < x.size(); s += std::size_t(sub[f])) {
                    double lo = 0, hi = 0, amax = 0;
                    for (std::size_t i = s; i < s + std::size_t(sub[f]); ++i) {
                        lo = std::min(lo, double(x[i]));
                        hi = std::max(hi, double(x[i]));
                        amax = std::max(amax, std::fabs(double(x[i])));
                        error2 += (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
                    }
                    const double step = f < 2 ? (hi - lo) / nmax[f] : amax / nmax[f];
                    bound2 += step * step / 12 * sub[f];
                }
                const double rms = std::sqrt(error2 / double(x.size()));
                const double bound = std::sqrt(bound2 / double(x.size()));
                CHECK(rms <= 1.05 * bound);
            }
    }
}

TEST_CASE("a partial last super-block is padded with zeros; NaN and inf make theirs NaN") {
    std::mt19937 rng(9);
    std::normal_distribution<float> gauss(0.0f, 1.0f);
    std::vector<float> x(512, 0.0f);
    for (std::size_t i = 0; i < 300; ++i) x[i] = gauss(rng);
    for (int f = 0; f < 3; ++f) {
        const FormatTraits& t = k_format(f);
        CAPTURE(t.name);
        CHECK(quantize(t, {x.begin(), x.begin() + 300}) == quantize(t, x));
        for (float bad : {NAN, INFINITY, -INFINITY}) {
            std::vector<float> z = x;
            z[400] = bad;
            const std::vector<float> y = decode(t, quantize(t, z), 512);
            const std::vector<float> first =
                decode(t, quantize(t, {x.begin(), x.begin() + 256}), 256);
            CHECK(std::memcmp(y.data(), first.data(), 256 * 4) == 0);
            for (std::size_t i = 256; i < 512; ++i) REQUIRE(std::isnan(y[i]));
        }
        const std::vector<unsigned char> zeros = quantize(t, std::vector<float>(256, 0.0f));
        for (float v : decode(t, zeros, 256)) REQUIRE(v == 0.0f);
    }
}

TEST_CASE("a Q4_K_M-style GGUF file loads exactly and runs in every dtype") {
    using namespace swiglu;
    const std::int64_t d = 256, f = 512;  // whole super-blocks
    // Layer 0 as Q4_K_M's mix most often has it, layer 1 another mix.
    const Format mix[2][3] = {{Format::q4_k, Format::q4_k, Format::q6_k},
                              {Format::q5_k, Format::q4_k, Format::q4_k}};
    std::vector<test::RandomBlock> blocks;
    std::vector<test::GgufTensorSpec> tensors;
    for (int n = 0; n < 2; ++n) {
        blocks.emplace_back(d, f, Layout::out_in, unsigned(70 + n));
        const std::string p = "blk." + std::to_string(n) + ".";
        const test::RandomBlock& b = blocks.back();
        const auto type = [&](int w) { return std::uint32_t(traits(mix[n][w]).gguf_type); };
        tensors.push_back({p + "ffn_gate.weight", type(0), {d, f}, b.gate, ""});
        tensors.push_back({p + "ffn_up.weight", type(1), {d, f}, b.up, ""});
        tensors.push_back({p + "ffn_down.weight", type(2), {f, d}, b.down, ""});
    }
    const std::string path = test::temp_dir() + "/q4_k_m.gguf";
    test::write_file(path, test::gguf_bytes(tensors));

    const std::vector<BlockInfo> found = list_blocks(path);
    REQUIRE(found.size() == 2);
    CHECK(found[0].source_dtype == "mixed (gate Q4_K, up Q4_K, down Q6_K)");
    CHECK(found[1].source_dtype == "mixed (gate Q5_K, up Q4_K, down Q4_K)");
    CHECK(found[0].gate_format == "Q4_K");
    CHECK(found[0].up_format == "Q4_K");
    CHECK(found[0].down_format == "Q6_K");
    // gate, up: f = 512 rows of one super-block; down: d = 256 rows of two.
    CHECK(found[0].import_note ==
          "--dtype stored runs the file's 1536 blocks as stored: gate/up Q4_K, down Q6_K; "
          "other --dtype values start from their exact values");
    CHECK(found[1].import_note ==
          "--dtype stored runs all three as --dtype (f32 by default): gate Q5_K and up Q4_K "
          "differ, and gate and up are packed in one format");

    // keep_stored: layer 0 as stored (Q4_K gate/up, Q6_K down, the file's
    // blocks packed unchanged: the same bits as naming those dtypes); layer
    // 1's gate and up differ, so all three run in options.dtype.
    Options stored;
    stored.threads = 1;
    stored.keep_stored = true;
    const Options run0 = stored_options(found[0], stored), run1 = stored_options(found[1], stored);
    CHECK(run0.dtype == Dtype::q4_k);
    CHECK(run0.down_dtype == Dtype::q6_k);
    CHECK_FALSE(run0.keep_stored);
    CHECK(run1.dtype == Dtype::f32);
    CHECK_FALSE(run1.down_dtype);
    CHECK(block_values(found[0], stored) == 256);
    CHECK(block_values(found[1], stored) == 256);  // stored K-quants, run in f32
    {
        const std::vector<float> x3 = test::random_input(3, d, 5);
        const Ffn kept = load_ffn(path, WeightSelector{0, "", -1}, stored);
        CHECK(kept.implementation().dtype == Dtype::q4_k);
        CHECK(kept.implementation().down_dtype == Dtype::q6_k);
        Options named = stored;
        named.keep_stored = false;
        named.dtype = Dtype::q4_k;
        named.down_dtype = Dtype::q6_k;
        std::vector<float> a(x3.size()), b(x3.size());
        kept.forward(x3.data(), a.data(), 3);
        load_ffn(path, WeightSelector{0, "", -1}, named).forward(x3.data(), b.data(), 3);
        CHECK(a == b);
        const Ffn fallback = load_ffn(path, WeightSelector{1, "", -1}, stored);
        CHECK(fallback.implementation().dtype == Dtype::f32);
        CHECK(fallback.implementation().down_dtype == Dtype::f32);
    }
    const std::vector<float> x = test::random_input(3, d, 4);
    for (int n = 0; n < 2; ++n) {
        CAPTURE(n);
        const WeightSelector selector{n, "", -1};
        const LoadedWeights w = load_weights(path, selector);
        // The weights as stored: the GGUF writer's blocks through our decoder.
        const std::vector<float>* values[3] = {
            &blocks[std::size_t(n)].gate, &blocks[std::size_t(n)].up, &blocks[std::size_t(n)].down};
        const std::vector<float>* loaded[3] = {&w.gate, &w.up, &w.down};
        for (int k = 0; k < 3; ++k) {
            const FormatTraits& t = traits(mix[n][k]);
            const std::string bytes =
                test::ggml_bytes(std::uint32_t(t.gguf_type), *values[k], k == 2 ? f : d);
            CHECK(*loaded[k] == decode(t, {bytes.begin(), bytes.end()}, values[k]->size()));
        }
        for (Dtype target : kDtypes) {
            CAPTURE(dtype_name(target));
            std::vector<float> direct(x.size()), copied(x.size());
            load_ffn(path, selector, Options{1, target}).forward(x.data(), direct.data(), 3);
            Ffn(w.gate_view(), w.up_view(), w.down_view(), Options{1, target})
                .forward(x.data(), copied.data(), 3);
            // A weight stored in the target's own format packs its blocks
            // unchanged; the copy quantises their decoded values again,
            // which ggml's quantisers need not give back (Q6_K's does not
            // always): the same values up to a step of a few weights.
            bool stored_as_target = false;
            for (int k = 0; k < 3; ++k)
                stored_as_target = stored_as_target || traits(mix[n][k]).dtype == target;
            if (stored_as_target)
                CHECK(test::relative_error(direct, {copied.begin(), copied.end()}) <= 2e-2);
            else
                CHECK(direct == copied);
        }
        test::check_forward(w, blocks[std::size_t(n)], path, selector);
    }
}

TEST_CASE("keep_stored: each weight as stored where a block runs it, else the options' dtypes") {
    using swiglu::Options;
    const auto F = [](Format f) -> const FormatTraits& { return traits(f); };
    struct Case {
        Format gate, up, down;
        Dtype dtype;
        std::optional<Dtype> down_dtype;
        Dtype want;
        std::optional<Dtype> want_down;
    };
    const Case cases[] = {
        // Element formats that run are kept too.
        {Format::f32, Format::f32, Format::f32, Dtype::q8_0, {}, Dtype::f32, {}},
        {Format::bf16, Format::bf16, Format::bf16, Dtype::f32, {}, Dtype::bf16, {}},
        // F16 runs in no block: dtype (down: down_dtype where set).
        {Format::f16, Format::f16, Format::f16, Dtype::bf16, {}, Dtype::bf16, {}},
        {Format::f16, Format::f16, Format::q6_k, Dtype::q8_0, {}, Dtype::q8_0, Dtype::q6_k},
        {Format::q4_k, Format::q4_k, Format::f16, Dtype::q4_0, Dtype::q8_0, Dtype::q4_k,
         Dtype::q8_0},
        // A pair no block runs (f32 beside a block format): all in options'.
        {Format::f16, Format::f16, Format::q6_k, Dtype::f32, {}, Dtype::f32, {}},
        {Format::q4_k, Format::q4_k, Format::f16, Dtype::f32, {}, Dtype::f32, {}},
        {Format::bf16, Format::bf16, Format::q8_0, Dtype::f32, {}, Dtype::f32, {}},
        // gate and up differ: all in options'.
        {Format::q4_k, Format::q5_k, Format::q6_k, Dtype::q8_0, {}, Dtype::q8_0, {}},
        // Q4_K_M's mixes.
        {Format::q4_k, Format::q4_k, Format::q6_k, Dtype::f32, {}, Dtype::q4_k, Dtype::q6_k},
        {Format::q4_k, Format::q4_k, Format::q4_k, Dtype::f32, {}, Dtype::q4_k, {}},
    };
    for (const Case& c : cases) {
        CAPTURE(F(c.gate).name);
        CAPTURE(F(c.up).name);
        CAPTURE(F(c.down).name);
        Options o;
        o.dtype = c.dtype;
        o.down_dtype = c.down_dtype;
        o.keep_stored = true;
        const Options r = resolve_stored(F(c.gate), F(c.up), F(c.down), o);
        CHECK(r.dtype == c.want);
        CHECK(r.down_dtype.value_or(r.dtype) == c.want_down.value_or(c.want));
        CHECK_FALSE(r.keep_stored);
        // Without keep_stored the options stand as given.
        o.keep_stored = false;
        const Options same = resolve_stored(F(c.gate), F(c.up), F(c.down), o);
        CHECK(same.dtype == c.dtype);
        CHECK(same.down_dtype == c.down_dtype);
    }
}
}
