// Slices of a block (load_ffn_slice, what a tensor-parallel rank runs):
// slices that partition f sum to the block's y in every layout and format;
// a slice reads only its bytes of the weights (the rest is unreadable
// memory here); a window of a row of GGUF blocks decodes like the row; bad
// ranges are refused.
#include <doctest/doctest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include <swiglu/checkpoint.hpp>

#include "checkpoint_blocks.hpp"
#include "core/ffn_access.hpp"
#include "core/weight_source.hpp"
#include "gguf_writer.hpp"

using namespace swiglu;
using namespace swiglu::test;

namespace {

// y of the slices [0, b1), [b1, b2), ..., [bn, f) of `path`'s block, summed
// in double.
std::vector<double> sum_of_slices(const std::string& path, const std::vector<std::int64_t>& cuts,
                                  std::int64_t f, const std::vector<float>& x, std::int64_t tokens,
                                  Dtype dtype) {
    std::vector<double> sum(x.size(), 0.0);
    std::int64_t begin = 0;
    std::vector<std::int64_t> ends = cuts;
    ends.push_back(f);
    for (const std::int64_t end : ends) {
        const Ffn part = load_ffn_slice(path, {begin, end}, {}, Options{1, dtype});
        CHECK(part.f() == end - begin);
        std::vector<float> y(x.size());
        part.forward(x.data(), y.data(), tokens);
        for (std::size_t i = 0; i < y.size(); ++i) sum[i] += y[i];
        begin = end;
    }
    return sum;
}

std::vector<float> whole_block(const std::string& path, const std::vector<float>& x,
                               std::int64_t tokens, Dtype dtype) {
    std::vector<float> y(x.size());
    load_ffn(path, {}, Options{1, dtype}).forward(x.data(), y.data(), tokens);
    return y;
}

// Memory of `bytes` (whole pages) that reads as zeros, with pages made
// unreadable by protect(): a read of them is a crash, not a wrong value.
struct Guarded {
    std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    std::size_t bytes;
    unsigned char* data;
    explicit Guarded(std::size_t n) : bytes(n) {
        data = static_cast<unsigned char*>(
            ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        REQUIRE(data != MAP_FAILED);
    }
    ~Guarded() { ::munmap(data, bytes); }
    float* floats() { return reinterpret_cast<float*>(data); }
    void protect(std::size_t offset, std::size_t n) {
        REQUIRE(offset % page == 0);
        REQUIRE(n % page == 0);
        REQUIRE(::mprotect(data + offset, n, PROT_NONE) == 0);
    }
};

}  // namespace

TEST_SUITE("slice") {

TEST_CASE("slices that partition f sum to the block's y: every layout and format") {
    const std::int64_t d = 13, tokens = 3;
    const std::vector<float> x = random_input(tokens, d, 3);
    for (const Scheme* s : {&kHfLlama, &kPhi3, &kGlassllm})
        for (const std::int64_t f : {7, 341}) {
            CAPTURE(s->name);
            CAPTURE(f);
            const RandomBlock b(d, f, s->layout, unsigned(f));
            const std::string path = write_checkpoint(block_tensors(*s, b, "BF16"));
            const std::vector<std::int64_t> cuts = f == 7 ? std::vector<std::int64_t>{1, 2, 6}
                                                          : std::vector<std::int64_t>{64, 100, 320};
            const std::vector<float> y = whole_block(path, x, tokens, Dtype::f32);
            CHECK(relative_error(y, sum_of_slices(path, cuts, f, x, tokens, Dtype::f32)) <=
                  f32_tolerance(d, f));
        }
    // GGUF Q8_0: slices on blocks of 32 pack the stored blocks (q8_0 runs
    // them as stored), off them the decoded values (f32).
    const std::int64_t f = 128;
    const RandomBlock b(32, f, Layout::out_in, 9);
    const std::string path = temp_dir() + "/model.gguf";
    write_file(path, gguf_bytes({{"blk.0.ffn_gate.weight", 8, {32, f}, b.gate, ""},
                                 {"blk.0.ffn_up.weight", 8, {32, f}, b.up, ""},
                                 {"blk.0.ffn_down.weight", 8, {f, 32}, b.down, ""}}));
    const std::vector<float> x32 = random_input(tokens, 32, 4);
    CHECK(relative_error(whole_block(path, x32, tokens, Dtype::q8_0),
                         sum_of_slices(path, {32, 96}, f, x32, tokens, Dtype::q8_0)) <=
          f32_tolerance(32, f));
    CHECK(relative_error(whole_block(path, x32, tokens, Dtype::f32),
                         sum_of_slices(path, {5, 40, 77}, f, x32, tokens, Dtype::f32)) <=
          f32_tolerance(32, f));
}

TEST_CASE("describe_block reads the header; bad slices are refused") {
    const RandomBlock b(8, 20, Layout::out_in, 2);
    const std::string path = write_checkpoint(block_tensors(kHfLlama, b, "F32"));
    const BlockInfo info = describe_block(path);
    CHECK(info.d == 8);
    CHECK(info.f == 20);
    CHECK(info.scheme == "hf-llama");
    CHECK(info.problem.empty());
    for (const HiddenColumns c :
         {HiddenColumns{0, 0}, HiddenColumns{-1, 4}, HiddenColumns{5, 3}, HiddenColumns{0, 21}})
        CHECK(contains(error_message([&] { load_ffn_slice(path, c); }),
                       "must hold at least one of the block's f = 20"));
    CHECK(contains(error_message([&] { describe_block(path, {3, "", -1}); }), path));
}

TEST_CASE("a slice reads only its columns: the others' bytes are unreadable here") {
    // f = 2048 f32 values: a row of f is two pages, and the slice [1024,
    // 2048) holds the second page of each; rows of d are pages apart.
    const std::int64_t d = 8, f = 2048, half = 1024;
    const std::size_t row = f * sizeof(float);
    for (const Layout layout : {Layout::in_out, Layout::out_in}) {
        CAPTURE(static_cast<int>(layout));
        const RandomBlock b(d, f, layout, 6);
        Guarded gate(d * row), up(d * row), down(d * row);
        std::memcpy(gate.data, b.gate.data(), d * row);
        std::memcpy(up.data, b.up.data(), d * row);
        std::memcpy(down.data, b.down.data(), d * row);
        detail::WeightSource g, u, dn;
        for (detail::WeightSource* s : {&g, &u, &dn}) s->layout = layout;
        // Where f is the stored row (in_out gate/up, out_in down): a window
        // of each row, the first page of every row unreadable; where f is
        // the rows: rows [half, f), the first half of the tensor unreadable.
        auto window = [&](Guarded& m, detail::WeightSource& s) {
            for (std::int64_t r = 0; r < d; ++r) m.protect(r * row, row / 2);
            s.data = m.data;
            s.rows = d;
            s.row_values = f;
            s.first_col = half;
            s.cols = f - half;
        };
        auto rows = [&](Guarded& m, detail::WeightSource& s) {
            m.protect(0, d * row / 2);
            s.data = m.data + d * row / 2;
            s.rows = f - half;
            s.cols = d;
        };
        if (layout == Layout::in_out) {
            window(gate, g);
            window(up, u);
            rows(down, dn);
        } else {
            rows(gate, g);
            rows(up, u);
            window(down, dn);
        }
        const Ffn part = detail::FfnAccess::make(g, u, dn, Options{1});
        // The slice's weights, copied out of the full block, as views.
        std::vector<float> sg, su, sd;
        for (std::int64_t i = 0; i < d; ++i)
            for (std::int64_t j = half; j < f; ++j) {
                sg.push_back(float(weight(b.gate_view(), i, j)));
                su.push_back(float(weight(b.up_view(), i, j)));
            }
        for (std::int64_t j = half; j < f; ++j)
            for (std::int64_t i = 0; i < d; ++i) sd.push_back(float(weight(b.down_view(), j, i)));
        const std::vector<float> x = random_input(4, d, 7);
        std::vector<float> y(x.size());
        part.forward(x.data(), y.data(), 4);
        CHECK(relative_error(y, reference_ffn(x.data(), 4, WeightView::in_out(sg.data(), d, half),
                                              WeightView::in_out(su.data(), d, half),
                                              WeightView::in_out(sd.data(), half, d))) <=
              f32_tolerance(d, half));
    }
}

TEST_CASE("a window of a row of Q8_0 / Q4_0 blocks decodes like the whole row") {
    const std::int64_t n = 96;
    const std::vector<float> values = uniform(2 * n, 1.0f, 8);
    for (const std::uint32_t type : {8u, 2u}) {
        const std::string bytes = ggml_bytes(type, values, n);
        detail::WeightSource whole;
        whole.type = type == 8 ? detail::Format::q8_0 : detail::Format::q4_0;
        whole.data = bytes.data();
        whole.rows = 2;
        whole.cols = n;
        whole.layout = Layout::in_out;
        std::vector<float> all(2 * n);
        detail::read_columns(whole, 0, n, all.data(), n, 0);
        for (const std::int64_t first : {0, 5, 32, 40})
            for (const std::int64_t width : {1, 27, 50}) {
                detail::WeightSource w = whole;
                w.row_values = n;
                w.first_col = first;
                w.cols = width;
                // Columns [3, 3 + width - 3) of the window, both rows.
                const std::int64_t c0 = 3 % width, count = width - c0;
                std::vector<float> got(2 * count);
                detail::read_columns(w, c0, count, got.data(), count, 0);
                for (std::int64_t r = 0; r < 2; ++r)
                    for (std::int64_t j = 0; j < count; ++j)
                        CHECK(got[r * count + j] == all[r * n + first + c0 + j]);
            }
    }
}

}  // TEST_SUITE
