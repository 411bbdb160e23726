// The C API: every function, every error path, sizes, thread counts and
// overflows at their boundaries; no exception escapes, and a refused call
// leaves y and the handle as they were. (Its thread safety, error messages
// included, is in test_concurrency.cpp.)
#include <doctest/doctest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <swiglu/swiglu.h>
#include <swiglu/checkpoint.hpp>
#include <swiglu/moe.hpp>
#include <swiglu/moe_checkpoint.hpp>
#include <swiglu/swiglu.hpp>

#include "capabilities.hpp"
#include "error_checks.hpp"
#include "gguf_writer.hpp"
#include "moe_files.hpp"
#include "reference.hpp"
#include "safetensors_writer.hpp"

using swiglu::test::RandomBlock;

using swiglu::test::c_weight;
using swiglu::test::error_mentions;

namespace {

// Zeroed first, as C callers must: the fields after dtype keep their old
// behaviour at zero.
swiglu_options c_options(int threads, swiglu_dtype dtype = SWIGLU_DTYPE_F32) {
    swiglu_options o;
    std::memset(&o, 0, sizeof o);
    o.threads = threads;
    o.dtype = dtype;
    return o;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// E experts of (d, f) stacked as PyTorch keeps them (out_in: gate, up
// (E, f, d), down (E, d, f)) and transposed (in_out), plus a router's
// choices for `tokens` tokens: ids in [0, E) (repeats allowed) and weights.
struct MoeCase {
    MoeCase(std::int64_t E_, std::int64_t d_, std::int64_t f_, std::int64_t tokens_,
            std::int64_t k_, unsigned seed)
        : E(E_),
          d(d_),
          f(f_),
          tokens(tokens_),
          k(k_),
          gate(swiglu::test::uniform(std::size_t(E * f * d), 0.5f, seed)),
          up(swiglu::test::uniform(std::size_t(E * f * d), 0.5f, seed + 1)),
          down(swiglu::test::uniform(std::size_t(E * d * f), 0.5f, seed + 2)),
          x(swiglu::test::random_input(tokens, d, seed + 3)),
          weights(swiglu::test::uniform(std::size_t(tokens * k), 1.5f, seed + 4)) {
        for (auto [from, to, rows, cols] :
             {std::make_tuple(&gate, &gate_t, f, d), std::make_tuple(&up, &up_t, f, d),
              std::make_tuple(&down, &down_t, d, f)})
            for (std::int64_t e = 0; e < E; ++e)
                for (std::int64_t c = 0; c < cols; ++c)
                    for (std::int64_t r = 0; r < rows; ++r)
                        to->push_back((*from)[std::size_t(e * rows * cols + r * cols + c)]);
        for (std::int64_t i = 0; i < tokens * k; ++i)
            ids.push_back(std::int32_t((i * 7 + i / k) % E));
    }
    const float* g(swiglu_layout l) const {
        return (l == SWIGLU_LAYOUT_OUT_IN ? gate : gate_t).data();
    }
    const float* u(swiglu_layout l) const { return (l == SWIGLU_LAYOUT_OUT_IN ? up : up_t).data(); }
    const float* dn(swiglu_layout l) const {
        return (l == SWIGLU_LAYOUT_OUT_IN ? down : down_t).data();
    }

    std::int64_t E, d, f, tokens, k;
    std::vector<float> gate, up, down, gate_t, up_t, down_t, x, weights;
    std::vector<std::int32_t> ids;
};

}  // namespace

TEST_SUITE("c_api") {

TEST_CASE("create, query, forward, destroy") {
    RandomBlock b(13, 29, swiglu::Layout::out_in, 4);
    const swiglu_weight g = c_weight(b.gate_view()), u = c_weight(b.up_view()),
                        dn = c_weight(b.down_view());
    swiglu_ffn* ffn = nullptr;
    const swiglu_options two_threads = c_options(2, SWIGLU_DTYPE_F32);
    REQUIRE(swiglu_ffn_create(&g, &u, &dn, &two_threads, &ffn) == SWIGLU_OK);
    REQUIRE(ffn != nullptr);
    CHECK(std::string(swiglu_last_error()).empty());

    int64_t d = 0, f = 0;
    CHECK(swiglu_ffn_dims(ffn, &d, &f) == SWIGLU_OK);
    CHECK(d == 13);
    CHECK(f == 29);
    CHECK(swiglu_ffn_dims(ffn, nullptr, nullptr) == SWIGLU_OK);

    const auto x = swiglu::test::random_input(5, 13, 1);
    std::vector<float> y(x.size());
    CHECK(swiglu_ffn_forward(ffn, x.data(), y.data(), 5) == SWIGLU_OK);
    // Same numbers as the C++ API.
    swiglu::Ffn cpp(b.gate_view(), b.up_view(), b.down_view(), swiglu::Options{2});
    std::vector<float> y_cpp(x.size());
    cpp.forward(x.data(), y_cpp.data(), 5);
    CHECK(y == y_cpp);

    swiglu_ffn_destroy(ffn);
    swiglu_ffn_destroy(nullptr);
    CHECK(std::string(swiglu_version()) == swiglu::version());
}

TEST_CASE("every error path returns a status and a message") {
    RandomBlock b(7, 13, swiglu::Layout::in_out, 5);
    const swiglu_weight g = c_weight(b.gate_view()), u = c_weight(b.up_view()),
                        dn = c_weight(b.down_view());
    swiglu_ffn* ffn = reinterpret_cast<swiglu_ffn*>(0x1);  // must be reset to NULL

    CHECK(swiglu_ffn_create(&g, &u, &dn, nullptr, nullptr) == SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("out is NULL"));
    CHECK(swiglu_ffn_create(nullptr, &u, &dn, nullptr, &ffn) == SWIGLU_INVALID_ARGUMENT);
    CHECK(ffn == nullptr);
    CHECK(error_mentions("must not be NULL"));

    swiglu_weight bad = g;
    bad.data = nullptr;
    CHECK(swiglu_ffn_create(&bad, &u, &dn, nullptr, &ffn) == SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("gate: data is null"));
    bad = g;
    bad.layout = static_cast<swiglu_layout>(9);
    CHECK(swiglu_ffn_create(&bad, &u, &dn, nullptr, &ffn) == SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("layout"));
    bad = u;
    bad.cols = 12;
    CHECK(swiglu_ffn_create(&g, &bad, &dn, nullptr, &ffn) == SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("up is"));
    const swiglu_options bad_threads = c_options(-3, SWIGLU_DTYPE_F32);
    CHECK(swiglu_ffn_create(&g, &u, &dn, &bad_threads, &ffn) == SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("threads"));
    swiglu_options bad_dtype = c_options(1, SWIGLU_DTYPE_F32);
    const int nine = 9;
    std::memcpy(&bad_dtype.dtype, &nine, sizeof(nine));
    CHECK(swiglu_ffn_create(&g, &u, &dn, &bad_dtype, &ffn) == SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("dtype"));
    CHECK(ffn == nullptr);

    REQUIRE(swiglu_ffn_create(&g, &u, &dn, nullptr, &ffn) == SWIGLU_OK);
    std::vector<float> x(7 * 2, 1.0f), y(7 * 2, 5.0f);
    CHECK(swiglu_ffn_forward(nullptr, x.data(), y.data(), 2) == SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("ffn is NULL"));
    CHECK(swiglu_ffn_forward(ffn, nullptr, y.data(), 2) == SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("x is null"));
    CHECK(swiglu_ffn_forward(ffn, x.data(), nullptr, 2) == SWIGLU_INVALID_ARGUMENT);
    CHECK(swiglu_ffn_forward(ffn, x.data(), y.data(), -1) == SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("tokens"));
    CHECK(swiglu_ffn_forward(ffn, x.data(), x.data() + 1, 1) == SWIGLU_INVALID_ARGUMENT);
    CHECK(y == std::vector<float>(7 * 2, 5.0f));
    CHECK(swiglu_ffn_dims(nullptr, nullptr, nullptr) == SWIGLU_INVALID_ARGUMENT);
    // A success clears the message.
    CHECK(swiglu_ffn_forward(ffn, x.data(), y.data(), 2) == SWIGLU_OK);
    CHECK(std::string(swiglu_last_error()).empty());
    swiglu_ffn_destroy(ffn);
}

TEST_CASE("create from a safetensors file, and its errors") {
    const int64_t d = 7, f = 13;
    RandomBlock b(d, f, swiglu::Layout::out_in, 6);
    const std::string dir = swiglu::test::temp_dir();
    const std::string path = dir + "/block.safetensors";
    swiglu::test::write_file(path,
                             swiglu::test::safetensors_bytes({
                                 {"model.layers.0.mlp.gate_proj.weight", "F32", {f, d}, b.gate},
                                 {"model.layers.0.mlp.up_proj.weight", "F32", {f, d}, b.up},
                                 {"model.layers.0.mlp.down_proj.weight", "F32", {d, f}, b.down},
                             }));

    swiglu_ffn* ffn = nullptr;
    REQUIRE(swiglu_ffn_create_from_safetensors(path.c_str(), 0, nullptr, nullptr, &ffn) ==
            SWIGLU_OK);
    int64_t got_d = 0, got_f = 0;
    CHECK(swiglu_ffn_dims(ffn, &got_d, &got_f) == SWIGLU_OK);
    CHECK(got_d == d);
    CHECK(got_f == f);
    swiglu_ffn_destroy(ffn);
    REQUIRE(swiglu_ffn_create_from_safetensors(path.c_str(), -1, "model.layers.0.mlp.", nullptr,
                                               &ffn) == SWIGLU_OK);
    swiglu_ffn_destroy(ffn);

    CHECK(swiglu_ffn_create_from_safetensors(nullptr, 0, nullptr, nullptr, &ffn) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("path is NULL"));
    CHECK(swiglu_ffn_create_from_safetensors(path.c_str(), 0, nullptr, nullptr, nullptr) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(swiglu_ffn_create_from_safetensors((dir + "/missing.safetensors").c_str(), 0, nullptr,
                                             nullptr, &ffn) == SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("missing.safetensors"));
    CHECK(ffn == nullptr);
    CHECK(swiglu_ffn_create_from_safetensors(path.c_str(), 5, nullptr, nullptr, &ffn) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(ffn == nullptr);

    const std::string garbage = dir + "/garbage.safetensors";
    swiglu::test::write_file(garbage, "not a safetensors file at all");
    CHECK(swiglu_ffn_create_from_safetensors(garbage.c_str(), -1, nullptr, nullptr, &ffn) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("garbage.safetensors"));
}

TEST_CASE("a checkpoint's block chosen by layer, expert or prefix") {
    // One layer of two Mixtral-style experts.
    std::vector<swiglu::test::TensorSpec> tensors;
    std::vector<RandomBlock> experts;
    for (int e = 0; e < 2; ++e) {
        experts.emplace_back(6, 11, swiglu::Layout::out_in, unsigned(60 + e));
        const RandomBlock& b = experts.back();
        const std::string p = "model.layers.4.block_sparse_moe.experts." + std::to_string(e) + ".";
        tensors.push_back({p + "w1.weight", "F32", {11, 6}, b.gate});
        tensors.push_back({p + "w3.weight", "F32", {11, 6}, b.up});
        tensors.push_back({p + "w2.weight", "F32", {6, 11}, b.down});
    }
    const std::string path = swiglu::test::temp_dir() + "/moe.safetensors";
    swiglu::test::write_file(path, swiglu::test::safetensors_bytes(tensors));
    const auto x = swiglu::test::random_input(2, 6, 3);
    const swiglu_options one_thread = c_options(1, SWIGLU_DTYPE_F32);

    swiglu_block_selector selector = SWIGLU_BLOCK_SELECTOR_ANY;
    selector.expert = 1;
    // The block's prefix with or without its trailing '.'.
    for (const char* block : {(const char*)nullptr, "model.layers.4.block_sparse_moe.experts.1.",
                              "model.layers.4.block_sparse_moe.experts.1"}) {
        swiglu_block_selector s = selector;
        if (block) s = {-1, -1, block};
        swiglu_ffn* ffn = nullptr;
        REQUIRE(swiglu_ffn_create_from_checkpoint(path.c_str(), &s, &one_thread, &ffn) ==
                SWIGLU_OK);
        std::vector<float> y(x.size()), expected(x.size());
        CHECK(swiglu_ffn_forward(ffn, x.data(), y.data(), 2) == SWIGLU_OK);
        swiglu::Ffn cpp(experts[1].gate_view(), experts[1].up_view(), experts[1].down_view(),
                        swiglu::Options{1});
        cpp.forward(x.data(), expected.data(), 2);
        CHECK(y == expected);
        swiglu_ffn_destroy(ffn);
    }

    swiglu_ffn* ffn = nullptr;
    CHECK(swiglu_ffn_create_from_checkpoint(path.c_str(), nullptr, nullptr, &ffn) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("holds 2 experts"));
    selector = {4, -1, nullptr};
    CHECK(swiglu_ffn_create_from_checkpoint(path.c_str(), &selector, nullptr, &ffn) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("layer 4 holds 2 experts"));
    selector = {4, 0, "model.layers.4."};
    CHECK(swiglu_ffn_create_from_checkpoint(path.c_str(), &selector, nullptr, &ffn) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("not both"));
    selector = {-2, 0, nullptr};
    CHECK(swiglu_ffn_create_from_checkpoint(path.c_str(), &selector, nullptr, &ffn) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("layer -2"));
    CHECK(swiglu_ffn_create_from_checkpoint(nullptr, nullptr, nullptr, &ffn) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("path is NULL"));
    CHECK(ffn == nullptr);
}

TEST_CASE("bf16 and int8 through the C API give the C++ API's numbers") {
    RandomBlock b(13, 29, swiglu::Layout::out_in, 8);
    const swiglu_weight g = c_weight(b.gate_view()), u = c_weight(b.up_view()),
                        dn = c_weight(b.down_view());
    const auto x = swiglu::test::random_input(3, 13, 2);
    const std::pair<swiglu_dtype, swiglu::Dtype> dtypes[] = {
        {SWIGLU_DTYPE_BF16, swiglu::Dtype::bf16},
        {SWIGLU_DTYPE_INT8, swiglu::Dtype::int8},
        {SWIGLU_DTYPE_Q8_0, swiglu::Dtype::q8_0},
        {SWIGLU_DTYPE_Q4_0, swiglu::Dtype::q4_0}};
    for (const auto& [c_dtype, dtype] : dtypes) {
        const swiglu_options options = c_options(1, c_dtype);
        swiglu_ffn* ffn = nullptr;
        if (dtype == swiglu::Dtype::int8 && !swiglu::test::int8_supported()) {
            CHECK(swiglu_ffn_create(&g, &u, &dn, &options, &ffn) == SWIGLU_UNSUPPORTED);
            CHECK(ffn == nullptr);
            CHECK(error_mentions("AVX512-VNNI"));
            continue;
        }
        REQUIRE(swiglu_ffn_create(&g, &u, &dn, &options, &ffn) == SWIGLU_OK);
        std::vector<float> y(x.size()), expected(x.size());
        CHECK(swiglu_ffn_forward(ffn, x.data(), y.data(), 3) == SWIGLU_OK);
        swiglu::Ffn cpp(b.gate_view(), b.up_view(), b.down_view(), swiglu::Options{1, dtype});
        cpp.forward(x.data(), expected.data(), 3);
        CHECK(y == expected);
        swiglu_ffn_destroy(ffn);
    }
}

TEST_CASE("the backward through the C API gives the C++ API's numbers") {
    RandomBlock b(13, 29, swiglu::Layout::in_out, 5);
    const swiglu_weight g = c_weight(b.gate_view()), u = c_weight(b.up_view()),
                        dn = c_weight(b.down_view());
    swiglu_ffn* ffn = nullptr;
    const swiglu_options one = c_options(1);
    REQUIRE(swiglu_ffn_create(&g, &u, &dn, &one, &ffn) == SWIGLU_OK);
    const swiglu::Ffn cpp(b.gate_view(), b.up_view(), b.down_view(), swiglu::Options{1});
    const std::int64_t tokens = 6, df = 13 * 29;
    const auto x = swiglu::test::random_input(tokens, 13, 6);
    const auto dy = swiglu::test::random_input(tokens, 13, 7);
    std::vector<float> y(x.size()), saved(static_cast<std::size_t>(2 * tokens * 29)), dx(x.size()),
        gate(df), up(df), down(df, 1.0f);
    REQUIRE(swiglu_ffn_forward_for_backward(ffn, x.data(), y.data(), saved.data(), tokens) ==
            SWIGLU_OK);
    const swiglu_gradients grads = {gate.data(), up.data(), down.data(), 0};
    REQUIRE(swiglu_ffn_backward(ffn, x.data(), dy.data(), dx.data(), tokens, &grads,
                                saved.data()) == SWIGLU_OK);
    std::vector<float> dx_cpp(x.size()), gate_cpp(df), up_cpp(df), down_cpp(df);
    cpp.backward(x.data(), dy.data(), dx_cpp.data(), tokens,
                 swiglu::Gradients{gate_cpp.data(), up_cpp.data(), down_cpp.data()});
    CHECK(dx == dx_cpp);
    CHECK(gate == gate_cpp);
    CHECK(up == up_cpp);
    CHECK(down == down_cpp);
    // No gradients asked: dx alone, recomputing gate and up.
    std::vector<float> dx_only(x.size());
    CHECK(swiglu_ffn_backward(ffn, x.data(), dy.data(), dx_only.data(), tokens, nullptr, nullptr) ==
          SWIGLU_OK);
    CHECK(dx_only == dx_cpp);
    // Errors: a status and the C++ message, nothing written.
    std::vector<float> untouched(dx);
    CHECK(swiglu_ffn_backward(ffn, nullptr, dy.data(), dx.data(), tokens, &grads, nullptr) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("x is null"));
    CHECK(swiglu_ffn_backward(nullptr, x.data(), dy.data(), dx.data(), tokens, &grads, nullptr) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(swiglu_ffn_forward_for_backward(ffn, x.data(), y.data(), nullptr, tokens) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(dx == untouched);
    swiglu_ffn* bf16 = nullptr;
    const swiglu_options bf16_options = c_options(1, SWIGLU_DTYPE_BF16);
    REQUIRE(swiglu_ffn_create(&g, &u, &dn, &bf16_options, &bf16) == SWIGLU_OK);
    CHECK(swiglu_ffn_backward(bf16, x.data(), dy.data(), dx.data(), tokens, nullptr, nullptr) ==
          SWIGLU_UNSUPPORTED);
    swiglu_ffn_destroy(bf16);
    swiglu_ffn_destroy(ffn);
}

TEST_CASE("status names") {
    CHECK(std::string(swiglu_status_name(SWIGLU_OK)) == "SWIGLU_OK");
    CHECK(std::string(swiglu_status_name(SWIGLU_INVALID_ARGUMENT)) == "SWIGLU_INVALID_ARGUMENT");
    CHECK(std::string(swiglu_status_name(SWIGLU_OUT_OF_MEMORY)) == "SWIGLU_OUT_OF_MEMORY");
    CHECK(std::string(swiglu_status_name(SWIGLU_UNSUPPORTED)) == "SWIGLU_UNSUPPORTED");
    CHECK(std::string(swiglu_status_name(SWIGLU_INTERNAL)) == "SWIGLU_INTERNAL");
    CHECK(std::string(swiglu_status_name(static_cast<swiglu_status>(42))) ==
          "SWIGLU_UNKNOWN_STATUS");
}

TEST_CASE("C API: sizes, thread counts and overflows at their boundaries") {
    RandomBlock b(7, 13, swiglu::Layout::out_in, 44);
    const swiglu_weight g = c_weight(b.gate_view()), u = c_weight(b.up_view()),
                        dn = c_weight(b.down_view());
    swiglu_ffn* ffn = reinterpret_cast<swiglu_ffn*>(0x1);

    const char* names[3] = {"gate", "up", "down"};
    for (int which = 0; which < 3; ++which) {
        for (int64_t value : {int64_t{0}, int64_t{-7}}) {
            swiglu_weight w[3] = {g, u, dn};
            w[which].rows = value;
            CHECK(swiglu_ffn_create(&w[0], &w[1], &w[2], nullptr, &ffn) == SWIGLU_INVALID_ARGUMENT);
            CHECK(ffn == nullptr);
            CHECK(error_mentions(names[which]));
            CHECK(error_mentions("must be >= 1"));
        }
        swiglu_weight w[3] = {g, u, dn};
        w[which].layout = static_cast<swiglu_layout>(-1);
        CHECK(swiglu_ffn_create(&w[0], &w[1], &w[2], nullptr, &ffn) == SWIGLU_INVALID_ARGUMENT);
        CHECK(
            error_mentions("layout must be SWIGLU_LAYOUT_OUT_IN or SWIGLU_LAYOUT_IN_OUT (got -1)"));
    }
    for (int threads : {-1, 4097, 1 << 20, INT_MAX, INT_MIN}) {
        const swiglu_options options = c_options(threads);
        CHECK(swiglu_ffn_create(&g, &u, &dn, &options, &ffn) == SWIGLU_INVALID_ARGUMENT);
        CHECK(error_mentions("threads"));
        CHECK(error_mentions(std::to_string(threads).c_str()));
        CHECK(ffn == nullptr);
    }

    const float one = 1.0f;
    const int64_t big = int64_t{1} << 31;
    const swiglu_weight huge = {&one, big, big, SWIGLU_LAYOUT_OUT_IN};
    CHECK(swiglu_ffn_create(&huge, &huge, &huge, nullptr, &ffn) == SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("overflows"));
    // Fits in 64 bits, but no machine has 192 TiB: out of memory, not a crash,
    // and nothing read from the one float behind the view.
    const int64_t n22 = int64_t{1} << 22;
    const swiglu_weight vast = {&one, n22, n22, SWIGLU_LAYOUT_OUT_IN};
    CHECK(swiglu_ffn_create(&vast, &vast, &vast, nullptr, &ffn) == SWIGLU_OUT_OF_MEMORY);
    CHECK(error_mentions("cannot allocate"));
    CHECK(ffn == nullptr);

    REQUIRE(swiglu_ffn_create(&g, &u, &dn, nullptr, &ffn) == SWIGLU_OK);
    const auto x = swiglu::test::random_input(3, 7, 2);
    std::vector<float> expected(x.size()), y(x.size(), 9.0f);
    REQUIRE(swiglu_ffn_forward(ffn, x.data(), expected.data(), 3) == SWIGLU_OK);
    const int64_t tokens = std::numeric_limits<int64_t>::max() / 4 / 7 + 1;
    CHECK(swiglu_ffn_forward(ffn, x.data(), y.data(), tokens) == SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("overflows"));
    CHECK(swiglu_ffn_forward(ffn, x.data(), y.data(), std::numeric_limits<int64_t>::min()) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(y == std::vector<float>(x.size(), 9.0f));
    // tokens = 0 is a no-op, null pointers included.
    CHECK(swiglu_ffn_forward(ffn, nullptr, nullptr, 0) == SWIGLU_OK);
    // The handle is unchanged by the refused calls.
    CHECK(swiglu_ffn_forward(ffn, x.data(), y.data(), 3) == SWIGLU_OK);
    CHECK(y == expected);
    int64_t f = 0;
    CHECK(swiglu_ffn_dims(ffn, nullptr, &f) == SWIGLU_OK);
    CHECK(f == 13);
    swiglu_ffn_destroy(ffn);
}

TEST_CASE("C API: a checkpoint with a bad thread count or an unconvertible dtype") {
    RandomBlock b(4, 8, swiglu::Layout::out_in, 45);
    const std::string dir = swiglu::test::temp_dir();
    const std::string good = dir + "/good.safetensors", i32 = dir + "/i32.safetensors";
    const std::string p = "model.layers.0.mlp.";
    swiglu::test::write_file(good, swiglu::test::safetensors_bytes({
                                       {p + "gate_proj.weight", "F32", {8, 4}, b.gate},
                                       {p + "up_proj.weight", "F32", {8, 4}, b.up},
                                       {p + "down_proj.weight", "F32", {4, 8}, b.down},
                                   }));
    swiglu::test::write_file(i32, swiglu::test::safetensors_bytes({
                                      {p + "gate_proj.weight", "I32", {8, 4}, b.gate},
                                      {p + "up_proj.weight", "F32", {8, 4}, b.up},
                                      {p + "down_proj.weight", "F32", {4, 8}, b.down},
                                  }));
    swiglu_ffn* ffn = reinterpret_cast<swiglu_ffn*>(0x1);
    const swiglu_options negative = c_options(-1), absurd = c_options(5000);
    CHECK(swiglu_ffn_create_from_safetensors(good.c_str(), 0, nullptr, &negative, &ffn) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("threads"));
    CHECK(ffn == nullptr);
    CHECK(swiglu_ffn_create_from_safetensors(good.c_str(), 0, nullptr, &absurd, &ffn) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("5000"));
    swiglu_options bad_dtype = c_options(1);
    const int minus_one = -1;
    std::memcpy(&bad_dtype.dtype, &minus_one, sizeof(minus_one));
    CHECK(swiglu_ffn_create_from_safetensors(good.c_str(), 0, nullptr, &bad_dtype, &ffn) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("dtype"));
    CHECK(error_mentions("(got -1)"));
    CHECK(ffn == nullptr);
    CHECK(swiglu_ffn_create_from_safetensors(i32.c_str(), 0, nullptr, nullptr, &ffn) ==
          SWIGLU_UNSUPPORTED);
    CHECK(error_mentions("I32"));
    CHECK(error_mentions("i32.safetensors"));
    CHECK(ffn == nullptr);
    // A layer and a prefix together are refused, naming both.
    CHECK(swiglu_ffn_create_from_safetensors(good.c_str(), 0, "model.layers.0.mlp.", nullptr,
                                             &ffn) == SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("not both"));
    CHECK(ffn == nullptr);
    // The empty prefix means no prefix.
    REQUIRE(swiglu_ffn_create_from_safetensors(good.c_str(), -1, "", nullptr, &ffn) == SWIGLU_OK);
    swiglu_ffn_destroy(ffn);
}

TEST_CASE("down_dtype and keep_stored: a Q4_K_M block as the C++ API runs it") {
    const std::int64_t d = 256, f = 512;
    RandomBlock b(d, f, swiglu::Layout::out_in, 8);
    const swiglu_weight g = c_weight(b.gate_view()), u = c_weight(b.up_view()),
                        dn = c_weight(b.down_view());
    const auto x = swiglu::test::random_input(2, d, 3);
    swiglu_options mixed = c_options(1, SWIGLU_DTYPE_Q4_K);
    mixed.has_down_dtype = 1;
    mixed.down_dtype = SWIGLU_DTYPE_Q6_K;
    swiglu::Options cpp_mixed;
    cpp_mixed.threads = 1;
    cpp_mixed.dtype = swiglu::Dtype::q4_k;
    cpp_mixed.down_dtype = swiglu::Dtype::q6_k;
    swiglu_ffn* ffn = nullptr;
    REQUIRE(swiglu_ffn_create(&g, &u, &dn, &mixed, &ffn) == SWIGLU_OK);
    std::vector<float> y(x.size()), want(x.size());
    CHECK(swiglu_ffn_forward(ffn, x.data(), y.data(), 2) == SWIGLU_OK);
    swiglu_ffn_destroy(ffn);
    swiglu::Ffn(b.gate_view(), b.up_view(), b.down_view(), cpp_mixed)
        .forward(x.data(), want.data(), 2);
    CHECK(y == want);

    // down_dtype is read only with has_down_dtype; then checked like dtype.
    swiglu_options bad = mixed;
    const int nine = 9;
    std::memcpy(&bad.down_dtype, &nine, sizeof(nine));
    CHECK(swiglu_ffn_create(&g, &u, &dn, &bad, &ffn) == SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("down_dtype"));
    CHECK(error_mentions("(got 9)"));
    CHECK(ffn == nullptr);
    bad.has_down_dtype = 0;
    REQUIRE(swiglu_ffn_create(&g, &u, &dn, &bad, &ffn) == SWIGLU_OK);
    swiglu_ffn_destroy(ffn);
    ffn = nullptr;
    // f32 beside a block format: refused by the library, naming both.
    bad = mixed;
    bad.down_dtype = SWIGLU_DTYPE_F32;
    CHECK(swiglu_ffn_create(&g, &u, &dn, &bad, &ffn) == SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("down_dtype f32"));
    CHECK(ffn == nullptr);

    // keep_stored on a GGUF file in Q4_K_M's mix: the same bits as the C++ loader.
    const std::string path = swiglu::test::temp_dir() + "/q4_k_m.gguf";
    swiglu::test::write_file(
        path, swiglu::test::gguf_bytes({{"blk.0.ffn_gate.weight", 12, {d, f}, b.gate, ""},
                                        {"blk.0.ffn_up.weight", 12, {d, f}, b.up, ""},
                                        {"blk.0.ffn_down.weight", 14, {f, d}, b.down, ""}}));
    swiglu_options stored = c_options(1);
    stored.keep_stored = 1;
    REQUIRE(swiglu_ffn_create_from_checkpoint(path.c_str(), nullptr, &stored, &ffn) == SWIGLU_OK);
    CHECK(swiglu_ffn_forward(ffn, x.data(), y.data(), 2) == SWIGLU_OK);
    swiglu_ffn_destroy(ffn);
    swiglu::load_ffn(path, {}, cpp_mixed).forward(x.data(), want.data(), 2);
    CHECK(y == want);
    // Without it, dtype (f32) for all three.
    REQUIRE(swiglu_ffn_create_from_checkpoint(path.c_str(), nullptr, nullptr, &ffn) == SWIGLU_OK);
    CHECK(swiglu_ffn_forward(ffn, x.data(), y.data(), 2) == SWIGLU_OK);
    swiglu_ffn_destroy(ffn);
    swiglu::load_ffn(path, {}, swiglu::Options{}).forward(x.data(), want.data(), 2);
    CHECK(y == want);
}

TEST_CASE("route through the C API gives route()'s bits, for each rule") {
    const std::int64_t tokens = 9, E = 16;
    const auto logits = swiglu::test::uniform(std::size_t(tokens * E), 3.0f, 70);
    const auto bias = swiglu::test::uniform(std::size_t(E), 0.5f, 71);

    swiglu_router_rule mixtral = SWIGLU_ROUTER_RULE_DEFAULT;
    mixtral.top_k = 2;
    mixtral.normalize = 1;
    swiglu_router_rule v2 = SWIGLU_ROUTER_RULE_DEFAULT;  // DeepSeek-V2's group-limited greedy
    v2.top_k = 6;
    v2.groups = 4;
    v2.top_groups = 2;
    v2.scaling = 16.0f;
    swiglu_router_rule v3 = v2;  // DeepSeek-V3
    v3.top_k = 4;
    v3.score = SWIGLU_ROUTER_SIGMOID;
    v3.group_score = SWIGLU_GROUP_TOP2_SUM;
    v3.normalize = 1;
    v3.scaling = 2.5f;
    struct Case {
        swiglu_router_rule c;
        swiglu::RouterRule cpp;
        bool bias;
    };
    swiglu::RouterRule cpp_mixtral, cpp_v2, cpp_v3;
    cpp_mixtral.top_k = 2;
    cpp_mixtral.normalize = true;
    cpp_v2.top_k = 6;
    cpp_v2.groups = 4;
    cpp_v2.top_groups = 2;
    cpp_v2.scaling = 16.0f;
    cpp_v3 = cpp_v2;
    cpp_v3.top_k = 4;
    cpp_v3.score = swiglu::RouterScore::sigmoid;
    cpp_v3.group_score = swiglu::GroupScore::top2_sum;
    cpp_v3.normalize = true;
    cpp_v3.scaling = 2.5f;
    const swiglu_router_rule plain = SWIGLU_ROUTER_RULE_DEFAULT;
    for (const Case& c :
         {Case{plain, swiglu::RouterRule{}, false}, Case{mixtral, cpp_mixtral, false},
          Case{v2, cpp_v2, false}, Case{v3, cpp_v3, true}}) {
        const auto k = std::size_t(c.cpp.top_k);
        std::vector<std::int32_t> ids(std::size_t(tokens) * k, -1), want_ids(ids);
        std::vector<float> w(std::size_t(tokens) * k, NAN), want_w(w);
        const float* b = c.bias ? bias.data() : nullptr;
        REQUIRE(swiglu_route(logits.data(), tokens, E, &c.c, b, ids.data(), w.data()) == SWIGLU_OK);
        CHECK(std::string(swiglu_last_error()).empty());
        swiglu::route(logits.data(), tokens, E, c.cpp, b, want_ids.data(), want_w.data());
        CHECK(ids == want_ids);
        CHECK(same_bits(w, want_w));
    }
    // tokens = 0: the rule is checked, nothing else read.
    CHECK(swiglu_route(nullptr, 0, E, &v3, nullptr, nullptr, nullptr) == SWIGLU_OK);
}

TEST_CASE("route: every bad argument returns a status and a message, and writes nothing") {
    const std::int64_t tokens = 3, E = 8;
    auto logits = swiglu::test::uniform(std::size_t(tokens * E), 3.0f, 72);
    const swiglu_router_rule good = [] {
        swiglu_router_rule r = SWIGLU_ROUTER_RULE_DEFAULT;
        r.top_k = 2;
        return r;
    }();
    std::vector<std::int32_t> ids(tokens * 2, -7);
    std::vector<float> w(tokens * 2, 9.0f);
    auto refused = [&](const swiglu_router_rule* rule, const char* needle, const float* l = nullptr,
                       std::int64_t t = 3, std::int64_t e = 8, const float* bias = nullptr) {
        CAPTURE(needle);
        CHECK(swiglu_route(l ? l : logits.data(), t, e, rule, bias, ids.data(), w.data()) ==
              SWIGLU_INVALID_ARGUMENT);
        CHECK(error_mentions(needle));
        CHECK(ids == std::vector<std::int32_t>(tokens * 2, -7));
        CHECK(w == std::vector<float>(tokens * 2, 9.0f));
    };
    refused(nullptr, "rule is NULL");
    swiglu_router_rule zeroed;
    std::memset(&zeroed, 0, sizeof zeroed);
    refused(&zeroed, "rule->top_k is 0");
    refused(&zeroed, "SWIGLU_ROUTER_RULE_DEFAULT");
    swiglu_router_rule bad = zeroed;
    bad.top_k = 2;
    refused(&bad, "rule->groups is 0");
    bad.groups = 1;
    refused(&bad, "rule->top_groups is 0");
    bad.top_groups = 1;
    refused(&bad, "rule->scaling is 0");
    bad.scaling = 1.0f;
    REQUIRE(swiglu_route(logits.data(), tokens, E, &bad, nullptr, ids.data(), w.data()) ==
            SWIGLU_OK);  // memset, then every field set: a rule
    std::fill(ids.begin(), ids.end(), -7);
    std::fill(w.begin(), w.end(), 9.0f);

    bad = good;
    const int seven = 7;
    std::memcpy(&bad.score, &seven, sizeof seven);
    refused(&bad, "rule->score must be SWIGLU_ROUTER_SOFTMAX or SWIGLU_ROUTER_SIGMOID (got 7)");
    bad = good;
    std::memcpy(&bad.group_score, &seven, sizeof seven);
    refused(&bad, "rule->group_score must be SWIGLU_GROUP_MAX or SWIGLU_GROUP_TOP2_SUM (got 7)");
    bad = good;
    bad.top_k = 9;
    refused(&bad, "top_k must be in [1, experts = 8] (got 9)");
    bad = good;
    bad.groups = 3;
    refused(&bad, "groups must be >= 1 and divide experts = 8 (got 3)");
    bad.groups = 4;
    bad.top_groups = 5;
    refused(&bad, "top_groups must be in [1, groups = 4] (got 5)");
    bad = good;
    bad.scaling = std::numeric_limits<float>::quiet_NaN();
    refused(&bad, "scaling must be finite");
    refused(&good, "tokens must be >= 0", nullptr, -1);
    refused(&good, "experts must be in [1, 2^31] (got 0)", nullptr, 3, 0);
    const float nan_bias[8] = {0, 0, 0, NAN, 0, 0, 0, 0};
    refused(&good, "bias[expert 3] is NaN", nullptr, 3, 8, nan_bias);
    logits[1 * E + 5] = std::numeric_limits<float>::infinity();
    refused(&good, "logits[token 1, expert 5] is +inf");
    logits[1 * E + 5] = 0.0f;
    CHECK(swiglu_route(nullptr, tokens, E, &good, nullptr, ids.data(), w.data()) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("logits is null"));
    CHECK(swiglu_route(logits.data(), tokens, E, &good, nullptr, nullptr, w.data()) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("ids is null"));
    CHECK(swiglu_route(logits.data(), tokens, E, &good, nullptr, ids.data(), nullptr) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("weights is null"));
    // weights over logits: an output that would change an input halfway.
    CHECK(swiglu_route(logits.data(), tokens, E, &good, nullptr, ids.data(), logits.data() + 4) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("overlap"));
    CHECK(ids == std::vector<std::int32_t>(tokens * 2, -7));
    // A success clears the message.
    CHECK(swiglu_route(logits.data(), tokens, E, &good, nullptr, ids.data(), w.data()) ==
          SWIGLU_OK);
    CHECK(std::string(swiglu_last_error()).empty());
}

TEST_CASE("experts: create_stacked, dims, forward, destroy give the C++ API's bits") {
    const MoeCase m(5, 13, 29, 7, 3, 80);
    for (swiglu_layout layout : {SWIGLU_LAYOUT_OUT_IN, SWIGLU_LAYOUT_IN_OUT}) {
        const swiglu::Layout l =
            layout == SWIGLU_LAYOUT_OUT_IN ? swiglu::Layout::out_in : swiglu::Layout::in_out;
        std::vector<float> want(m.x.size());
        // Any thread count gives the one-thread bits.
        swiglu::Experts::stacked(m.g(layout), m.u(layout), m.dn(layout), m.E, m.d, m.f, l,
                                 swiglu::Options{1})
            .forward(m.x.data(), want.data(), m.tokens, m.ids.data(), m.weights.data(), m.k);
        for (int threads : {1, 2, 3}) {
            CAPTURE(threads);
            const swiglu_options options = c_options(threads);
            swiglu_experts* experts = nullptr;
            REQUIRE(swiglu_experts_create_stacked(m.g(layout), m.u(layout), m.dn(layout), m.E, m.d,
                                                  m.f, layout, &options, &experts) == SWIGLU_OK);
            REQUIRE(experts != nullptr);
            CHECK(std::string(swiglu_last_error()).empty());
            int64_t count = 0, d = 0, f = 0;
            CHECK(swiglu_experts_dims(experts, &count, &d, &f) == SWIGLU_OK);
            CHECK(count == m.E);
            CHECK(d == m.d);
            CHECK(f == m.f);
            CHECK(swiglu_experts_dims(experts, nullptr, nullptr, nullptr) == SWIGLU_OK);
            std::vector<float> y(m.x.size(), NAN);
            CHECK(swiglu_experts_forward(experts, m.x.data(), y.data(), m.tokens, m.ids.data(),
                                         m.weights.data(), m.k) == SWIGLU_OK);
            CHECK(same_bits(y, want));
            std::vector<float> in_place = m.x;
            CHECK(swiglu_experts_forward(experts, in_place.data(), in_place.data(), m.tokens,
                                         m.ids.data(), m.weights.data(), m.k) == SWIGLU_OK);
            CHECK(same_bits(in_place, want));
            swiglu_experts_destroy(experts);
        }
    }
    swiglu_experts_destroy(nullptr);

    // A packed format and NULL options, as the C++ API runs them.
    const swiglu_options q4 = c_options(2, SWIGLU_DTYPE_Q4_0);
    for (const swiglu_options* options : {&q4, (const swiglu_options*)nullptr}) {
        swiglu::Options cpp;
        if (options) cpp = swiglu::Options{2, swiglu::Dtype::q4_0};
        swiglu_experts* experts = nullptr;
        REQUIRE(swiglu_experts_create_stacked(m.gate.data(), m.up.data(), m.down.data(), m.E, m.d,
                                              m.f, SWIGLU_LAYOUT_OUT_IN, options,
                                              &experts) == SWIGLU_OK);
        std::vector<float> y(m.x.size()), want(m.x.size());
        CHECK(swiglu_experts_forward(experts, m.x.data(), y.data(), m.tokens, m.ids.data(),
                                     m.weights.data(), m.k) == SWIGLU_OK);
        swiglu::Experts::stacked(m.gate.data(), m.up.data(), m.down.data(), m.E, m.d, m.f,
                                 swiglu::Layout::out_in, cpp)
            .forward(m.x.data(), want.data(), m.tokens, m.ids.data(), m.weights.data(), m.k);
        CHECK(same_bits(y, want));
        swiglu_experts_destroy(experts);
    }

    // route, then the experts: the two calls a C caller chains.
    const auto logits = swiglu::test::uniform(std::size_t(m.tokens * m.E), 2.0f, 81);
    swiglu_router_rule rule = SWIGLU_ROUTER_RULE_DEFAULT;
    rule.top_k = 2;
    rule.normalize = 1;
    std::vector<std::int32_t> ids(std::size_t(m.tokens * 2));
    std::vector<float> w(ids.size()), y(m.x.size()), want(m.x.size());
    REQUIRE(swiglu_route(logits.data(), m.tokens, m.E, &rule, nullptr, ids.data(), w.data()) ==
            SWIGLU_OK);
    swiglu_experts* experts = nullptr;
    REQUIRE(swiglu_experts_create_stacked(m.gate.data(), m.up.data(), m.down.data(), m.E, m.d, m.f,
                                          SWIGLU_LAYOUT_OUT_IN, nullptr, &experts) == SWIGLU_OK);
    CHECK(swiglu_experts_forward(experts, m.x.data(), y.data(), m.tokens, ids.data(), w.data(),
                                 2) == SWIGLU_OK);
    swiglu_experts_destroy(experts);
    swiglu::RouterRule cpp_rule;
    cpp_rule.top_k = 2;
    cpp_rule.normalize = true;
    std::vector<std::int32_t> cpp_ids(ids.size());
    std::vector<float> cpp_w(ids.size());
    swiglu::route(logits.data(), m.tokens, m.E, cpp_rule, nullptr, cpp_ids.data(), cpp_w.data());
    swiglu::Experts::stacked(m.gate.data(), m.up.data(), m.down.data(), m.E, m.d, m.f,
                             swiglu::Layout::out_in)
        .forward(m.x.data(), want.data(), m.tokens, cpp_ids.data(), cpp_w.data(), 2);
    CHECK(same_bits(y, want));
}

TEST_CASE("experts: every error path returns a status and a message, and writes nothing") {
    const MoeCase m(4, 7, 11, 3, 2, 90);
    const swiglu_layout oi = SWIGLU_LAYOUT_OUT_IN;
    swiglu_experts* experts = reinterpret_cast<swiglu_experts*>(0x1);  // must be reset to NULL
    auto create_refused = [&](const float* g, const float* u, const float* dn, int64_t E, int64_t d,
                              int64_t f, swiglu_layout layout, const swiglu_options* options,
                              const char* needle) {
        CAPTURE(needle);
        experts = reinterpret_cast<swiglu_experts*>(0x1);
        CHECK(swiglu_experts_create_stacked(g, u, dn, E, d, f, layout, options, &experts) ==
              SWIGLU_INVALID_ARGUMENT);
        CHECK(experts == nullptr);
        CHECK(error_mentions(needle));
    };
    const float *g = m.gate.data(), *u = m.up.data(), *dn = m.down.data();
    CHECK(swiglu_experts_create_stacked(g, u, dn, 4, 7, 11, oi, nullptr, nullptr) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("out is NULL"));
    create_refused(nullptr, u, dn, 4, 7, 11, oi, nullptr, "gate is null");
    create_refused(g, nullptr, dn, 4, 7, 11, oi, nullptr, "up is null");
    create_refused(g, u, nullptr, 4, 7, 11, oi, nullptr, "down is null");
    create_refused(g, u, dn, 0, 7, 11, oi, nullptr, "experts must be >= 1 (got 0)");
    create_refused(g, u, dn, 4, -7, 11, oi, nullptr, "d and f must be >= 1");
    create_refused(g, u, dn, 4, 7, 0, oi, nullptr, "d and f must be >= 1");
    create_refused(g, u, dn, int64_t{1} << 40, int64_t{1} << 20, int64_t{1} << 20, oi, nullptr,
                   "overflows");
    create_refused(g, u, dn, 4, 7, 11, static_cast<swiglu_layout>(9), nullptr,
                   "swiglu_experts_create_stacked: layout must be SWIGLU_LAYOUT_OUT_IN or "
                   "SWIGLU_LAYOUT_IN_OUT (got 9)");
    const swiglu_options bad_threads = c_options(-2);
    create_refused(g, u, dn, 4, 7, 11, oi, &bad_threads, "threads");
    swiglu_options bad_dtype = c_options(1);
    const int nine = 9;
    std::memcpy(&bad_dtype.dtype, &nine, sizeof nine);
    create_refused(g, u, dn, 4, 7, 11, oi, &bad_dtype, "options->dtype must be");

    REQUIRE(swiglu_experts_create_stacked(g, u, dn, 4, 7, 11, oi, nullptr, &experts) == SWIGLU_OK);
    std::vector<float> y(m.x.size(), 5.0f);
    std::vector<std::int32_t> ids = m.ids;
    std::vector<float> w = m.weights;
    auto forward_refused = [&](const swiglu_experts* e, const float* x, float* out, int64_t tokens,
                               const int32_t* i, const float* wt, int64_t k, const char* needle) {
        CAPTURE(needle);
        CHECK(swiglu_experts_forward(e, x, out, tokens, i, wt, k) == SWIGLU_INVALID_ARGUMENT);
        CHECK(error_mentions(needle));
        CHECK(y == std::vector<float>(m.x.size(), 5.0f));
    };
    const float* x = m.x.data();
    forward_refused(nullptr, x, y.data(), 3, ids.data(), w.data(), 2, "experts is NULL");
    forward_refused(experts, nullptr, y.data(), 3, ids.data(), w.data(), 2, "x is null");
    forward_refused(experts, x, nullptr, 3, ids.data(), w.data(), 2, "y is null");
    forward_refused(experts, x, y.data(), 3, nullptr, w.data(), 2, "ids is null");
    forward_refused(experts, x, y.data(), 3, ids.data(), nullptr, 2, "weights is null");
    forward_refused(experts, x, y.data(), -1, ids.data(), w.data(), 2, "tokens must be >= 0");
    forward_refused(experts, x, y.data(), 3, ids.data(), w.data(), 0, "k must be >= 1 (got 0)");
    forward_refused(experts, x, y.data(), std::numeric_limits<int64_t>::max() / 2, ids.data(),
                    w.data(), 2, "overflows");
    ids[3] = 4;
    forward_refused(experts, x, y.data(), 3, ids.data(), w.data(), 2,
                    "ids[t = 1, j = 1] = 4 is not an expert: ids must be in [0, 4)");
    ids[3] = -1;
    forward_refused(experts, x, y.data(), 3, ids.data(), w.data(), 2, "= -1 is not an expert");
    ids = m.ids;
    w[4] = NAN;
    forward_refused(experts, x, y.data(), 3, ids.data(), w.data(), 2,
                    "weights[t = 2, j = 0] = nan must be finite");
    w = m.weights;
    std::vector<float> xy = m.x;
    CHECK(swiglu_experts_forward(experts, xy.data(), xy.data() + 1, 2, ids.data(), w.data(), 2) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("x and y overlap"));
    CHECK(xy == m.x);
    CHECK(swiglu_experts_dims(nullptr, nullptr, nullptr, nullptr) == SWIGLU_INVALID_ARGUMENT);
    CHECK(error_mentions("swiglu_experts_dims: experts is NULL"));
    // tokens = 0 is a no-op, null pointers included; a success clears the message.
    CHECK(swiglu_experts_forward(experts, nullptr, nullptr, 0, nullptr, nullptr, 0) == SWIGLU_OK);
    CHECK(std::string(swiglu_last_error()).empty());
    // The handle is unchanged by the refused calls.
    std::vector<float> want(m.x.size());
    swiglu::Experts::stacked(g, u, dn, 4, 7, 11, swiglu::Layout::out_in)
        .forward(x, want.data(), 3, m.ids.data(), m.weights.data(), 2);
    CHECK(swiglu_experts_forward(experts, x, y.data(), 3, ids.data(), w.data(), 2) == SWIGLU_OK);
    CHECK(same_bits(y, want));
    swiglu_experts_destroy(experts);
}

TEST_CASE("moe_layer: a checkpoint's layer through create, forward, route, dims: the C++ bits") {
    // Qwen2-MoE: 6 experts, top 4, a gated shared expert.
    using namespace swiglu::test;
    const MoeWeights m(24, 16, 6, 40, 11);
    const std::string dir = temp_dir(), path = dir + "/model.safetensors";
    write_file(path, safetensors_bytes(hf_moe_tensors(m, kQwen2MoeNames, 0, "F32")));
    write_file(dir + "/config.json", kQwen2MoeConfig);
    const std::int64_t tokens = 7;
    const std::vector<float> x = random_input(tokens, m.d, 3);
    const swiglu::MoeLayer cpp = swiglu::load_moe_layer(path, 0, swiglu::Options{2});
    std::vector<float> want(x.size());
    cpp.forward(x.data(), want.data(), tokens);
    std::vector<std::int32_t> want_ids(std::size_t(tokens * 4));
    std::vector<float> want_w(want_ids.size());
    cpp.route(x.data(), tokens, want_ids.data(), want_w.data());

    const swiglu_options options = c_options(2);
    swiglu_moe_layer* layer = nullptr;
    REQUIRE(swiglu_moe_layer_create_from_checkpoint(path.c_str(), 0, &options, &layer) ==
            SWIGLU_OK);
    int64_t experts = 0, k = 0, d = 0, f = 0;
    int shared = 0;
    CHECK(swiglu_moe_layer_dims(layer, &experts, &k, &d, &f, &shared) == SWIGLU_OK);
    CHECK(experts == 6);
    CHECK(k == 4);
    CHECK(d == m.d);
    CHECK(f == m.f);
    CHECK(shared == 1);
    CHECK(swiglu_moe_layer_dims(layer, nullptr, nullptr, nullptr, nullptr, nullptr) == SWIGLU_OK);
    std::vector<float> y(x.size(), NAN);
    CHECK(swiglu_moe_layer_forward(layer, x.data(), y.data(), tokens) == SWIGLU_OK);
    CHECK(same_bits(y, want));
    std::vector<float> in_place = x;
    CHECK(swiglu_moe_layer_forward(layer, in_place.data(), in_place.data(), tokens) == SWIGLU_OK);
    CHECK(same_bits(in_place, want));
    std::vector<std::int32_t> ids(want_ids.size());
    std::vector<float> w(ids.size());
    CHECK(swiglu_moe_layer_route(layer, x.data(), tokens, ids.data(), w.data()) == SWIGLU_OK);
    CHECK(ids == want_ids);
    CHECK(same_bits(w, want_w));

    // Errors: a status and a message, nothing written, *out NULL.
    std::vector<float> untouched(x.size(), 7.0f);
    CHECK(swiglu_moe_layer_forward(nullptr, x.data(), untouched.data(), tokens) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(std::string(swiglu_last_error()).find("layer is NULL") != std::string::npos);
    CHECK(swiglu_moe_layer_forward(layer, nullptr, untouched.data(), tokens) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(swiglu_moe_layer_forward(layer, x.data(), untouched.data(), -1) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(swiglu_moe_layer_route(layer, x.data(), tokens, ids.data(), nullptr) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(std::all_of(untouched.begin(), untouched.end(), [](float v) { return v == 7.0f; }));
    CHECK(swiglu_moe_layer_forward(layer, nullptr, nullptr, 0) == SWIGLU_OK);  // nothing to do
    CHECK(swiglu_moe_layer_dims(nullptr, &experts, nullptr, nullptr, nullptr, nullptr) ==
          SWIGLU_INVALID_ARGUMENT);
    swiglu_moe_layer_destroy(layer);
    swiglu_moe_layer_destroy(nullptr);

    swiglu_moe_layer* bad = reinterpret_cast<swiglu_moe_layer*>(0x1);  // must be reset to NULL
    CHECK(swiglu_moe_layer_create_from_checkpoint(path.c_str(), 1, nullptr, &bad) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(bad == nullptr);
    CHECK(std::string(swiglu_last_error()).find("layer 1") != std::string::npos);
    CHECK(swiglu_moe_layer_create_from_checkpoint(path.c_str(), -1, nullptr, &bad) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(std::string(swiglu_last_error()).find("layer must be >= 0") != std::string::npos);
    CHECK(swiglu_moe_layer_create_from_checkpoint(nullptr, 0, nullptr, &bad) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(swiglu_moe_layer_create_from_checkpoint(path.c_str(), 0, nullptr, nullptr) ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(swiglu_moe_layer_create_from_checkpoint((dir + "/missing.safetensors").c_str(), 0,
                                                  nullptr, &bad) != SWIGLU_OK);
    CHECK(bad == nullptr);
}

TEST_CASE("moe_layer_create: a layer from arrays in memory, the C++ MoeLayer's bits") {
    using namespace swiglu::test;
    const MoeWeights m(24, 16, 6, 40, 29);
    const std::int64_t tokens = 7;
    const std::vector<float> x = random_input(tokens, m.d, 4);
    const swiglu_options options = c_options(2);
    const swiglu_weight router = {m.router.data(), m.e, m.d, SWIGLU_LAYOUT_OUT_IN};
    const swiglu_moe_shared shared = {
        {m.shared->gate.data(), m.shared->f, m.d, SWIGLU_LAYOUT_OUT_IN},
        {m.shared->up.data(), m.shared->f, m.d, SWIGLU_LAYOUT_OUT_IN},
        {m.shared->down.data(), m.d, m.shared->f, SWIGLU_LAYOUT_OUT_IN},
        m.shared_gate.data()};
    // Qwen2-MoE (softmax top 4, a gated shared expert), experts out_in;
    // DeepSeek-V3's rule (sigmoid, groups, bias, scaling), experts in_out.
    swiglu_router_rule qwen = SWIGLU_ROUTER_RULE_DEFAULT;
    qwen.top_k = 4;
    swiglu_router_rule v3 = SWIGLU_ROUTER_RULE_DEFAULT;
    v3.top_k = 3;
    v3.score = SWIGLU_ROUTER_SIGMOID;
    v3.normalize = 1;
    v3.groups = 3;
    v3.top_groups = 2;
    v3.group_score = SWIGLU_GROUP_TOP2_SUM;
    v3.scaling = 2.5f;
    for (const bool deepseek : {false, true}) {
        CAPTURE(deepseek);
        const swiglu_router_rule& c_rule = deepseek ? v3 : qwen;
        swiglu::RouterRule rule;
        rule.top_k = c_rule.top_k;
        if (deepseek) {
            rule.score = swiglu::RouterScore::sigmoid;
            rule.normalize = true;
            rule.groups = 3;
            rule.top_groups = 2;
            rule.group_score = swiglu::GroupScore::top2_sum;
            rule.scaling = 2.5f;
        }
        const swiglu::Layout layout = deepseek ? swiglu::Layout::in_out : swiglu::Layout::out_in;
        const MoeWeights::Stacked w = m.stacked(layout);
        const swiglu::MoeLayer cpp =
            m.layer(rule, deepseek, !deepseek, !deepseek, swiglu::Options{2});
        std::vector<float> want(x.size());
        cpp.forward(x.data(), want.data(), tokens);
        std::vector<std::int32_t> want_ids(std::size_t(tokens * rule.top_k));
        std::vector<float> want_w(want_ids.size());
        cpp.route(x.data(), tokens, want_ids.data(), want_w.data());

        swiglu_moe_layer* layer = nullptr;
        REQUIRE(swiglu_moe_layer_create(&router, &c_rule, deepseek ? m.bias.data() : nullptr,
                                        w.gate.data(), w.up.data(), w.down.data(), m.e, m.d, m.f,
                                        deepseek ? SWIGLU_LAYOUT_IN_OUT : SWIGLU_LAYOUT_OUT_IN,
                                        deepseek ? nullptr : &shared, &options,
                                        &layer) == SWIGLU_OK);
        int64_t experts = 0, k = 0, d = 0, f = 0;
        int has_shared = -1;
        CHECK(swiglu_moe_layer_dims(layer, &experts, &k, &d, &f, &has_shared) == SWIGLU_OK);
        CHECK(experts == m.e);
        CHECK(k == rule.top_k);
        CHECK(d == m.d);
        CHECK(f == m.f);
        CHECK(has_shared == (deepseek ? 0 : 1));
        std::vector<float> y(x.size(), NAN);
        CHECK(swiglu_moe_layer_forward(layer, x.data(), y.data(), tokens) == SWIGLU_OK);
        CHECK(same_bits(y, want));
        std::vector<std::int32_t> ids(want_ids.size());
        std::vector<float> got_w(ids.size());
        CHECK(swiglu_moe_layer_route(layer, x.data(), tokens, ids.data(), got_w.data()) ==
              SWIGLU_OK);
        CHECK(ids == want_ids);
        CHECK(same_bits(got_w, want_w));
        swiglu_moe_layer_destroy(layer);
    }

    // Bad input: a status, a message naming it, *out NULL.
    const MoeWeights::Stacked w = m.stacked(swiglu::Layout::out_in);
    const auto create = [&](const swiglu_weight* r, const swiglu_router_rule* rule,
                            const float* bias, const float* gate, std::int64_t experts, int layout,
                            const swiglu_moe_shared* s) {
        swiglu_moe_layer* bad = reinterpret_cast<swiglu_moe_layer*>(0x1);
        swiglu_layout l;
        std::memcpy(&l, &layout, sizeof(l));
        const swiglu_status status =
            swiglu_moe_layer_create(r, rule, bias, gate, w.up.data(), w.down.data(), experts, m.d,
                                    m.f, l, s, nullptr, &bad);
        CHECK(bad == nullptr);
        return std::make_pair(status, std::string(swiglu_last_error()));
    };
    const auto fails = [](const std::pair<swiglu_status, std::string>& got, const char* what) {
        CAPTURE(got.second);
        CHECK(got.first == SWIGLU_INVALID_ARGUMENT);
        CHECK(got.second.find(what) != std::string::npos);
    };
    fails(create(nullptr, &qwen, nullptr, w.gate.data(), m.e, 0, nullptr), "router is NULL");
    fails(create(&router, nullptr, nullptr, w.gate.data(), m.e, 0, nullptr), "rule is NULL");
    const swiglu_router_rule zeroed = {};
    fails(create(&router, &zeroed, nullptr, w.gate.data(), m.e, 0, nullptr),
          "swiglu_moe_layer_create: rule->top_k is 0");
    fails(create(&router, &qwen, nullptr, nullptr, m.e, 0, nullptr), "null");
    fails(create(&router, &qwen, nullptr, w.gate.data(), m.e, 7, nullptr), "layout");
    // The router's E (6) against 5 experts.
    fails(create(&router, &qwen, nullptr, w.gate.data(), m.e - 1, 0, nullptr), "router");
    std::vector<float> nan_bias(m.bias);
    nan_bias[2] = NAN;
    fails(create(&router, &qwen, nan_bias.data(), w.gate.data(), m.e, 0, nullptr), "bias[2]");
    swiglu_moe_shared narrow = shared;  // d of 23: not the experts'
    narrow.gate.cols = narrow.up.cols = m.d - 1;
    narrow.down.rows = m.d - 1;
    CHECK(create(&router, &qwen, nullptr, w.gate.data(), m.e, 0, &narrow).first ==
          SWIGLU_INVALID_ARGUMENT);
    CHECK(swiglu_moe_layer_create(&router, &qwen, nullptr, w.gate.data(), w.up.data(),
                                  w.down.data(), m.e, m.d, m.f, SWIGLU_LAYOUT_OUT_IN, nullptr,
                                  nullptr, nullptr) == SWIGLU_INVALID_ARGUMENT);
    // Review: E * d * f past int64 is refused before any array is read.
    {
        swiglu_moe_layer* big = reinterpret_cast<swiglu_moe_layer*>(0x1);
        const swiglu_weight huge_router = {m.router.data(), std::int64_t{1} << 40, m.d,
                                           SWIGLU_LAYOUT_OUT_IN};
        CHECK(swiglu_moe_layer_create(&huge_router, &qwen, nullptr, w.gate.data(), w.up.data(),
                                      w.down.data(), std::int64_t{1} << 40, std::int64_t{1} << 20,
                                      std::int64_t{1} << 20, SWIGLU_LAYOUT_OUT_IN, nullptr, nullptr,
                                      &big) == SWIGLU_INVALID_ARGUMENT);
        CHECK(big == nullptr);
        CHECK(std::string(swiglu_last_error()).find("overflows") != std::string::npos);
    }
}

}  // TEST_SUITE
