// ShardedFfn from a checkpoint under mpirun: every naming scheme, sharded
// safetensors, GGUF (F32, and Q8_0 / Q4_0 run as stored) and its experts,
// each rank loading its slice; y as the single process's within the f32
// bound, the same bits on every rank; a rank that fails to load, or loads
// another block, fails every rank.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <swiglu/checkpoint.hpp>
#include <swiglu/mpi.hpp>

#include "checkpoint_blocks.hpp"
#include "gguf_writer.hpp"
#include "mpi_support.hpp"
#include "safetensors_writer.hpp"

using namespace swiglu;
using namespace swiglu::test;

namespace {

// Rank 0 writes `bytes` to a fresh file named `name`; every rank gets its path.
std::string shared_file(const std::string& name, const std::string& bytes) {
    std::string path;
    if (world_rank() == 0) {
        path = temp_dir() + "/" + name;
        write_file(path, bytes);
    }
    return broadcast(path);
}

// The block the single process loads from `path`, run on `x`.
std::vector<double> single_process(const std::string& path, const WeightSelector& selector,
                                   const std::vector<float>& x, std::int64_t tokens, Dtype dtype) {
    const Ffn ffn = load_ffn(path, selector, Options{1, dtype});
    std::vector<float> y(x.size());
    ffn.forward(x.data(), y.data(), tokens);
    return {y.begin(), y.end()};
}

// The sharded block from `path` against the single process: within
// `tolerance` of max |y| and the same bits on every rank.
void check_sharded(const std::string& path, const WeightSelector& selector, std::int64_t d,
                   std::int64_t f, Dtype dtype, double tolerance) {
    const ShardedFfn ffn(MPI_COMM_WORLD, path, selector, Options{1, dtype});
    CHECK(ffn.d() == d);
    CHECK(ffn.f() == f);
    const std::int64_t tokens = 5;
    const std::vector<float> x = random_input(tokens, d, 21);
    std::vector<float> y(x.size(), -1.0f);
    ffn.forward(x.data(), y.data(), tokens);
    CHECK(relative_error(y, single_process(path, selector, x, tokens, dtype)) <= tolerance);
    CHECK(same_on_every_rank(y));
}

// A GGUF file of one llama.cpp block (ne = [in, out]) in ggml type `type`.
std::string gguf_block(const RandomBlock& b, std::uint32_t type) {
    return gguf_bytes({{"blk.0.ffn_gate.weight", type, {b.d, b.f}, b.gate, ""},
                       {"blk.0.ffn_up.weight", type, {b.d, b.f}, b.up, ""},
                       {"blk.0.ffn_down.weight", type, {b.f, b.d}, b.down, ""}});
}

}  // namespace

TEST_SUITE("mpi") {

TEST_CASE("every naming scheme: each rank loads its columns of the file") {
    // f = 7: shards below the 64-column tile; f = 341: odd, on 64-column boundaries.
    for (const std::int64_t f : {7, 341})
        for (const Scheme& s : kSchemes)
            for (const char* dtype : {"F32", "BF16"}) {
                CAPTURE(s.name);
                CAPTURE(f);
                CAPTURE(dtype);
                const RandomBlock b(13, f, s.layout, unsigned(f));
                const std::string path =
                    shared_file("model.safetensors", safetensors_bytes(block_tensors(s, b, dtype)));
                check_sharded(path, {}, 13, f, Dtype::f32, f32_tolerance(13, f));
                // Packed in bf16 from the slices: the same rounding as the single process.
                check_sharded(path, {}, 13, f, Dtype::bf16, f32_tolerance(13, f));
            }
}

TEST_CASE("a sharded safetensors checkpoint: a layer chosen by --layer") {
    const RandomBlock b0(16, 200, Layout::out_in, 3), b1(16, 200, Layout::out_in, 4);
    std::string dir;
    if (world_rank() == 0) {
        dir = temp_dir();
        const auto layer0 = block_tensors(kHfLlama, b0, "BF16", layer_prefix(0).c_str());
        const auto layer1 = block_tensors(kHfLlama, b1, "BF16", layer_prefix(1).c_str());
        write_file(dir + "/model-00001-of-00002.safetensors", safetensors_bytes(layer0));
        write_file(dir + "/model-00002-of-00002.safetensors", safetensors_bytes(layer1));
        std::string map;
        for (const auto* layer : {&layer0, &layer1})
            for (const TensorSpec& t : *layer)
                map += std::string(map.empty() ? "" : ", ") + "\"" + t.name + "\": \"model-0000" +
                       (layer == &layer0 ? "1" : "2") + "-of-00002.safetensors\"";
        write_file(dir + "/model.safetensors.index.json", "{\"weight_map\": {" + map + "}}");
    }
    dir = broadcast(dir);
    check_sharded(dir, WeightSelector{1, "", -1}, 16, 200, Dtype::f32, f32_tolerance(16, 200));
    // Over MPI_COMM_WORLD, without naming it.
    CHECK(ShardedFfn(dir + "/model.safetensors.index.json", WeightSelector{0, "", -1}).f() == 200);
}

TEST_CASE("GGUF: F32 and F16, and Q8_0 / Q4_0 run as the file stores them") {
    // f = 256: every rank's columns start on a block of 32 (also for 3 ranks).
    const RandomBlock b(64, 256, Layout::out_in, 8);
    struct Case {
        std::uint32_t type;
        Dtype dtype;
    };
    for (const Case c : {Case{0, Dtype::f32}, Case{1, Dtype::f32}, Case{8, Dtype::q8_0},
                         Case{2, Dtype::q4_0}, Case{8, Dtype::f32}}) {
        CAPTURE(c.type);
        const std::string path = shared_file("model.gguf", gguf_block(b, c.type));
        // Blocks as stored: the same values, activations quantised on the
        // same 32-column blocks, only the order of the ranks' sums differs.
        check_sharded(path, {}, 64, 256, c.dtype, f32_tolerance(64, 256));
    }
}

TEST_CASE("GGUF K-quants as stored: shards on whole super-blocks of 256") {
    // Q4_K_M's mix: gate, up Q4_K, down Q6_K (its rows of f cut by the shards).
    const std::int64_t d = 256, f = 768;
    const RandomBlock b(d, f, Layout::out_in, 12);
    const std::string path =
        shared_file("q4_k_m.gguf", gguf_bytes({{"blk.0.ffn_gate.weight", 12, {d, f}, b.gate, ""},
                                               {"blk.0.ffn_up.weight", 12, {d, f}, b.up, ""},
                                               {"blk.0.ffn_down.weight", 14, {f, d}, b.down, ""}}));
    Options stored;
    stored.threads = 1;
    stored.keep_stored = true;
    const ShardedFfn ffn(MPI_COMM_WORLD, path, {}, stored);
    CHECK(ffn.shard().begin % 256 == 0);
    CHECK((ffn.shard().end % 256 == 0 || ffn.shard().end == f));
    const std::int64_t tokens = 3;
    const std::vector<float> x = random_input(tokens, d, 21);
    std::vector<float> y(x.size()), single(x.size());
    ffn.forward(x.data(), y.data(), tokens);
    // The single process runs the same stored blocks, down's activations
    // quantised on the same super-blocks: only the order of the sums differs.
    load_ffn(path, {}, stored).forward(x.data(), single.data(), tokens);
    CHECK(relative_error(y, std::vector<double>(single.begin(), single.end())) <=
          f32_tolerance(d, f));
    CHECK(same_on_every_rank(y));
}

TEST_CASE("GGUF experts: one expert of a stacked tensor, sharded") {
    const std::int64_t d = 32, f = 128, experts = 2;
    std::vector<float> gate, up, down;
    for (std::int64_t e = 0; e < experts; ++e) {
        const RandomBlock b(d, f, Layout::out_in, unsigned(30 + e));
        gate.insert(gate.end(), b.gate.begin(), b.gate.end());
        up.insert(up.end(), b.up.begin(), b.up.end());
        down.insert(down.end(), b.down.begin(), b.down.end());
    }
    const std::string path = shared_file(
        "moe.gguf", gguf_bytes({{"blk.0.ffn_gate_exps.weight", 8, {d, f, 2}, gate, ""},
                                {"blk.0.ffn_up_exps.weight", 8, {d, f, 2}, up, ""},
                                {"blk.0.ffn_down_exps.weight", 8, {f, d, 2}, down, ""}}));
    check_sharded(path, WeightSelector{-1, "", 1}, d, f, Dtype::q8_0, f32_tolerance(d, f));
}

TEST_CASE("a rank that cannot load its checkpoint, or loads another block, fails every rank") {
    const RandomBlock b(16, 100, Layout::out_in, 5), other(16, 60, Layout::out_in, 6);
    const std::string bytes = safetensors_bytes(block_tensors(kHfLlama, b, "F32"));
    const std::string good = shared_file("model.safetensors", bytes);
    const std::string truncated =
        shared_file("truncated.safetensors", bytes.substr(0, bytes.size() / 2));
    const std::string different =
        shared_file("other.safetensors", safetensors_bytes(block_tensors(kHfLlama, other, "F32")));
    const int last = world_size() - 1;
    const bool odd_one = world_rank() == last;

    std::string message =
        error_on_every_rank([&] { ShardedFfn(MPI_COMM_WORLD, odd_one ? truncated : good); });
    CAPTURE(message);
    CHECK(message.rfind("rank " + std::to_string(last) + ": " + truncated + ": ", 0) == 0);

    message = error_on_every_rank([&] { ShardedFfn(MPI_COMM_WORLD, odd_one ? different : good); });
    CHECK(contains(message, "every rank must load the same block"));

    // Same shapes, another block or dtype: layer 1 of a two-layer file, or bf16.
    std::vector<TensorSpec> two = block_tensors(kHfLlama, b, "F32", layer_prefix(0).c_str());
    append(two, block_tensors(kHfLlama, b, "F32", layer_prefix(1).c_str()));
    const std::string layers = shared_file("layers.safetensors", safetensors_bytes(two));
    message = error_on_every_rank([&] {
        ShardedFfn(MPI_COMM_WORLD, layers, WeightSelector{odd_one ? 1 : 0, "", -1});
    });
    CHECK(contains(message, "every rank must load the same block"));
    message = error_on_every_rank([&] {
        ShardedFfn(MPI_COMM_WORLD, good, {}, Options{1, odd_one ? Dtype::bf16 : Dtype::f32});
    });
    CHECK(contains(message, "every rank must load the same block"));

    message = error_on_every_rank([&] {
        ShardedFfn(MPI_COMM_WORLD, good, WeightSelector{odd_one ? 7 : -1, "", -1});
    });
    CHECK(message.rfind("rank " + std::to_string(last) + ": ", 0) == 0);
}

}  // TEST_SUITE
