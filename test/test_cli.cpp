// The `swiglu` command, run as a real process: results against the fp64
// reference, exit statuses, one-line error messages, and that no failure
// touches an existing output or leaves a temporary file behind.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <sys/stat.h>

#include <swiglu/checkpoint.hpp>
#include <swiglu/swiglu.hpp>

#include "capabilities.hpp"
#include "cli/npy.hpp"
#include "dtypes.hpp"
#include "gguf_writer.hpp"
#include "process.hpp"
#include "reference.hpp"
#include "safetensors_writer.hpp"

using namespace swiglu;
using swiglu::test::RandomBlock;
using swiglu::test::TensorSpec;

namespace {

constexpr std::int64_t kD = 13, kF = 29;

using Result = test::ProcessResult;
using test::exists;
using test::list_dir;
using test::slurp;

// Runs the built command with `args`.
Result swiglu_cli(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {SWIGLU_CLI_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    return test::run_process(argv);
}

std::string command_line(const std::vector<std::string>& args) {
    std::string line = "swiglu";
    for (const std::string& a : args) line += " " + a;
    return line;
}

// A failure: exit status 2 (or `status`), nothing on stdout, exactly one
// line on stderr, "swiglu: error: ...", containing every needle.
void expect_failure(const std::vector<std::string>& args,
                    std::initializer_list<std::string> needles, int status = 2) {
    const Result r = swiglu_cli(args);
    INFO(command_line(args));
    INFO("stderr: " << r.err);
    CHECK(r.status == status);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("swiglu: error: ", 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.back() == '\n');
    for (const std::string& needle : needles) CHECK(r.err.find(needle) != std::string::npos);
}

std::vector<TensorSpec> hf_layer(const RandomBlock& b, int layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".mlp.";
    return {{p + "gate_proj.weight", "F32", {b.f, b.d}, b.gate},
            {p + "up_proj.weight", "F32", {b.f, b.d}, b.up},
            {p + "down_proj.weight", "F32", {b.d, b.f}, b.down}};
}

void write_npy(const std::string& path, const std::vector<float>& data,
               const std::vector<std::int64_t>& shape) {
    test::write_file(path, detail::npy_bytes(data.data(), shape));
}

double tolerance(std::int64_t d, std::int64_t f) { return test::f32_tolerance(d, f); }

// y as the command wrote it must have `shape` and match the reference.
void check_output(const std::string& path, const std::vector<float>& x,
                  const std::vector<std::int64_t>& shape, const RandomBlock& b) {
    const detail::NpyArray y = detail::read_npy(path);
    CHECK(y.shape == shape);
    REQUIRE(y.data.size() == x.size());
    const std::int64_t tokens = static_cast<std::int64_t>(x.size()) / b.d;
    const std::vector<double> ref =
        test::reference_ffn(x.data(), tokens, b.gate_view(), b.up_view(), b.down_view());
    CHECK(test::relative_error(y.data, ref) <= tolerance(b.d, b.f));
}

// A directory with a one-block checkpoint, a two-layer checkpoint, a good
// input, and an out/ directory holding only a sentinel y.npy.
struct Fixture {
    std::string dir = test::temp_dir();
    RandomBlock block0{kD, kF, Layout::out_in, 11};
    RandomBlock block1{kD, kF, Layout::out_in, 23};
    std::string one = dir + "/one.safetensors";
    std::string two = dir + "/two.safetensors";
    std::string x_path = dir + "/x.npy";
    std::vector<float> x = test::random_input(5, kD, 7);
    std::string out_dir = dir + "/out";
    std::string y_path = out_dir + "/y.npy";
    const std::string sentinel = "sentinel: must survive every failure\n";

    Fixture() {
        test::write_file(one, test::safetensors_bytes(hf_layer(block0, 0)));
        std::vector<TensorSpec> both = hf_layer(block0, 0);
        for (TensorSpec& t : hf_layer(block1, 1)) both.push_back(t);
        test::write_file(two, test::safetensors_bytes(both));
        write_npy(x_path, x, {5, kD});
        ::mkdir(out_dir.c_str(), 0755);
        test::write_file(y_path, sentinel);
    }

    std::vector<std::string> run_args(const std::string& weights, const std::string& input) const {
        return {"run", "--weights", weights, "--input", input, "--output", y_path};
    }

    // The sentinel is byte-identical and nothing else appeared in out/.
    void check_untouched() const {
        CHECK(slurp(y_path) == sentinel);
        CHECK(list_dir(out_dir) == std::set<std::string>{"y.npy"});
    }
};

}  // namespace

TEST_SUITE("cli") {

TEST_CASE("run matches the reference for (M, d), (B, T, d) and empty inputs") {
    Fixture fx;
    const Result r = swiglu_cli(fx.run_args(fx.one, fx.x_path));
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(r.err.empty());
    check_output(fx.y_path, fx.x, {5, kD}, fx.block0);
    // Replaced atomically: no temporary file is left next to it.
    CHECK(list_dir(fx.out_dir) == std::set<std::string>{"y.npy"});

    const std::vector<float> x3 = test::random_input(2 * 3, kD, 8);
    write_npy(fx.dir + "/x3.npy", x3, {2, 3, kD});
    REQUIRE(swiglu_cli(fx.run_args(fx.one, fx.dir + "/x3.npy")).status == 0);
    check_output(fx.y_path, x3, {2, 3, kD}, fx.block0);

    // No rows: a valid, empty output of the same shape.
    write_npy(fx.dir + "/x0.npy", {}, {0, kD});
    REQUIRE(swiglu_cli(fx.run_args(fx.one, fx.dir + "/x0.npy")).status == 0);
    CHECK(detail::read_npy(fx.y_path).shape == std::vector<std::int64_t>{0, kD});
    write_npy(fx.dir + "/x00.npy", {}, {2, 0, kD});
    REQUIRE(swiglu_cli(fx.run_args(fx.one, fx.dir + "/x00.npy")).status == 0);
    CHECK(detail::read_npy(fx.y_path).shape == std::vector<std::int64_t>{2, 0, kD});
}

TEST_CASE("output does not depend on --threads") {
    Fixture fx;
    const std::vector<float> x = test::random_input(40, kD, 9);
    write_npy(fx.x_path, x, {40, kD});
    std::vector<std::string> args = fx.run_args(fx.one, fx.x_path);
    args.insert(args.end(), {"--threads", "1"});
    REQUIRE(swiglu_cli(args).status == 0);
    const std::string single = slurp(fx.y_path);
    args.back() = "3";
    REQUIRE(swiglu_cli(args).status == 0);
    CHECK(slurp(fx.y_path) == single);
    check_output(fx.y_path, x, {40, kD}, fx.block0);
}

TEST_CASE("--dtype runs the same block in bf16 and int8, and is the library's block") {
    Fixture fx;
    const std::vector<float> x = test::random_input(6, kD, 12);
    write_npy(fx.x_path, x, {6, kD});
    for (Dtype dtype : test::kReducedDtypes) {
        CAPTURE(std::string(dtype_name(dtype)));
        std::vector<std::string> args = fx.run_args(fx.one, fx.x_path);
        args.insert(args.end(), {"--dtype", dtype_name(dtype)});
        const Result r = swiglu_cli(args);
        INFO(r.err);
        if (dtype == Dtype::int8 && !test::int8_supported()) {
            // Refused with the library's reason, as every other error.
            CHECK(r.status == 2);
            CHECK(r.err.find("int8 needs a CPU with AVX512-VNNI") != std::string::npos);
            continue;
        }
        REQUIRE(r.status == 0);
        // Bit for bit what the library gives for the same weights and dtype.
        Ffn ffn(fx.block0.gate_view(), fx.block0.up_view(), fx.block0.down_view(),
                Options{0, dtype});
        std::vector<float> expected(x.size());
        ffn.forward(x.data(), expected.data(), 6);
        CHECK(detail::read_npy(fx.y_path).data == expected);
    }
    std::vector<std::string> bad = fx.run_args(fx.one, fx.x_path);
    bad.insert(bad.end(), {"--dtype", "fp8"});
    const Result r = swiglu_cli(bad);
    CHECK(r.status == 2);
    CHECK(r.err.find("--dtype") != std::string::npos);
    // A name that is no dtype, or a number (an enum's value is no name),
    // is refused on one line that lists the names, not CLI11's check text.
    for (const char* value : {"fp16", "3", "0"}) {
        std::vector<std::string> args = fx.run_args(fx.one, fx.x_path);
        args.insert(args.end(), {"--dtype", value});
        expect_failure(args, {"--dtype: unknown dtype '" + std::string(value) +
                              "': use stored, f32, bf16, int8, q8_0, q4_0"});
        const Result refused = swiglu_cli(args);
        CHECK(refused.err.find("FAILED") == std::string::npos);
        CHECK(refused.err.find("->") == std::string::npos);
    }
}

TEST_CASE("--layer and --prefix pick a block from a multi-layer checkpoint") {
    Fixture fx;
    std::vector<std::string> args = fx.run_args(fx.two, fx.x_path);
    args.insert(args.end(), {"--layer", "1"});
    Result r = swiglu_cli(args);
    INFO(r.err);
    REQUIRE(r.status == 0);
    check_output(fx.y_path, fx.x, {5, kD}, fx.block1);

    // The prefix with or without its trailing '.' (the module's name).
    for (const char* prefix : {"model.layers.0.mlp.", "model.layers.0.mlp"}) {
        args = fx.run_args(fx.two, fx.x_path);
        args.insert(args.end(), {"--prefix", prefix});
        r = swiglu_cli(args);
        INFO(prefix << ": " << r.err);
        REQUIRE(r.status == 0);
        check_output(fx.y_path, fx.x, {5, kD}, fx.block0);
    }
    args = fx.run_args(fx.two, fx.x_path);
    args.insert(args.end(), {"--block", "model.layers.1.mlp"});
    r = swiglu_cli(args);
    INFO(r.err);
    REQUIRE(r.status == 0);
    check_output(fx.y_path, fx.x, {5, kD}, fx.block1);
}

TEST_CASE("info lists every block; --layer and --expert choose a Mixtral expert") {
    Fixture fx;
    // Two layers of two experts each, with the router's weight beside them.
    std::vector<TensorSpec> tensors;
    std::vector<RandomBlock> experts;
    for (int layer = 0; layer < 2; ++layer) {
        const std::string moe = "model.layers." + std::to_string(layer) + ".block_sparse_moe.";
        tensors.push_back({moe + "gate.weight", "F32", {2, kD}, std::vector<float>(2 * kD, 1.0f)});
        for (int e = 0; e < 2; ++e) {
            experts.emplace_back(kD, kF, Layout::out_in, unsigned(50 + 2 * layer + e));
            const RandomBlock& b = experts.back();
            const std::string p = moe + "experts." + std::to_string(e) + ".";
            tensors.push_back({p + "w1.weight", "F32", {kF, kD}, b.gate});
            tensors.push_back({p + "w3.weight", "F32", {kF, kD}, b.up});
            tensors.push_back({p + "w2.weight", "F32", {kD, kF}, b.down});
        }
    }
    const std::string moe = fx.dir + "/moe.safetensors";
    test::write_file(moe, test::safetensors_bytes(tensors));

    Result r = swiglu_cli({"info", "--weights", moe});
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out.find("blocks:     4 found\n") != std::string::npos);
    CHECK(r.out.find("  \"model.layers.1.block_sparse_moe.experts.0.\"  mixtral-expert  layer 1  "
                     "expert 0  d 13  f 29  F32\n") != std::string::npos);
    CHECK(r.out.find("choose one with --layer N, --expert E or --block P") != std::string::npos);
    CHECK(r.out.find("matmul:") == std::string::npos);

    r = swiglu_cli({"info", "--weights", moe, "--layer", "1", "--expert", "1"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out.find("block:      \"model.layers.1.block_sparse_moe.experts.1.\"\n") !=
          std::string::npos);
    CHECK(r.out.find("gate:       model.layers.1.block_sparse_moe.experts.1.w1.weight\n") !=
          std::string::npos);
    CHECK(r.out.find("matmul:") != std::string::npos);

    std::vector<std::string> args = fx.run_args(moe, fx.x_path);
    args.insert(args.end(), {"--layer", "1", "--expert", "0"});
    r = swiglu_cli(args);
    INFO(r.err);
    REQUIRE(r.status == 0);
    check_output(fx.y_path, fx.x, {5, kD}, experts[2]);

    args = fx.run_args(moe, fx.x_path);
    args.insert(args.end(), {"--block", "model.layers.0.block_sparse_moe.experts.1."});
    r = swiglu_cli(args);
    INFO(r.err);
    REQUIRE(r.status == 0);
    check_output(fx.y_path, fx.x, {5, kD}, experts[1]);

    // The whole layer needs its routing rule, from the config.json that is not there.
    args = fx.run_args(moe, fx.x_path);
    args.insert(args.end(), {"--layer", "1"});
    expect_failure(
        args, {moe, "layer 1: holds 2 experts", fx.dir + "/config.json not found", "--expert E"});
}

TEST_CASE("--trace writes the intermediates") {
    Fixture fx;
    const std::string trace = fx.dir + "/trace";
    std::vector<float> x3 = test::random_input(2 * 3, kD, 5);
    write_npy(fx.dir + "/x3.npy", x3, {2, 3, kD});
    std::vector<std::string> args = fx.run_args(fx.one, fx.dir + "/x3.npy");
    args.insert(args.end(), {"--trace", trace});
    const Result r = swiglu_cli(args);
    INFO(r.err);
    REQUIRE(r.status == 0);
    check_output(fx.y_path, x3, {2, 3, kD}, fx.block0);

    const detail::NpyArray gate = detail::read_npy(trace + "/gate.npy");
    const detail::NpyArray up = detail::read_npy(trace + "/up.npy");
    const detail::NpyArray act = detail::read_npy(trace + "/act.npy");
    const detail::NpyArray down = detail::read_npy(trace + "/down.npy");
    const std::vector<std::int64_t> hidden = {2, 3, kF};
    CHECK(gate.shape == hidden);
    CHECK(up.shape == hidden);
    CHECK(act.shape == hidden);
    CHECK(down.shape == std::vector<std::int64_t>{2, 3, kD});
    CHECK(down.data == detail::read_npy(fx.y_path).data);
    REQUIRE(act.data.size() == gate.data.size());
    for (std::size_t i = 0; i < act.data.size(); ++i)
        CHECK(act.data[i] == doctest::Approx(test::silu(gate.data[i]) * up.data[i]).epsilon(1e-5));
    CHECK(list_dir(trace) == std::set<std::string>{"gate.npy", "up.npy", "act.npy", "down.npy"});

    // A trace path that is a file is refused before anything is written.
    test::write_file(fx.dir + "/file", "x");
    args.back() = fx.dir + "/file";
    test::write_file(fx.y_path, fx.sentinel);
    expect_failure(args, {fx.dir + "/file", "not a directory"});
    fx.check_untouched();
}

TEST_CASE("--dtype stored, a GGUF file's default, runs a Q4_K_M block as stored") {
    Fixture fx;
    const std::int64_t d = 256, f = 512;  // whole super-blocks
    const RandomBlock b(d, f, Layout::out_in, 31);
    const std::string gguf = fx.dir + "/q4_k_m.gguf";
    test::write_file(gguf, test::gguf_bytes({{"blk.0.ffn_gate.weight", 12, {d, f}, b.gate, ""},
                                             {"blk.0.ffn_up.weight", 12, {d, f}, b.up, ""},
                                             {"blk.0.ffn_down.weight", 14, {f, d}, b.down, ""}}));
    const std::vector<float> x = test::random_input(2, d, 9);
    const std::string x_path = fx.dir + "/x256.npy";
    write_npy(x_path, x, {2, d});
    // What the library gives for the block as stored: gate/up Q4_K, down Q6_K.
    auto expected = [&](const Options& o) {
        std::vector<float> y(x.size());
        load_ffn(gguf, {}, o).forward(x.data(), y.data(), 2);
        return y;
    };
    Options stored;
    stored.dtype = Dtype::q4_k;
    stored.down_dtype = Dtype::q6_k;
    for (const std::vector<std::string>& extra :
         {std::vector<std::string>{}, std::vector<std::string>{"--dtype", "stored"},
          std::vector<std::string>{"--dtype", "STORED"}}) {
        std::vector<std::string> args = fx.run_args(gguf, x_path);
        args.insert(args.end(), extra.begin(), extra.end());
        const Result r = swiglu_cli(args);
        INFO(command_line(args) << ": " << r.err);
        REQUIRE(r.status == 0);
        CHECK(detail::read_npy(fx.y_path).data == expected(stored));
    }
    // Another --dtype converts all three.
    std::vector<std::string> args = fx.run_args(gguf, x_path);
    args.insert(args.end(), {"--dtype", "q8_0"});
    REQUIRE(swiglu_cli(args).status == 0);
    Options q8;
    q8.dtype = Dtype::q8_0;
    CHECK(detail::read_npy(fx.y_path).data == expected(q8));

    // info: each weight's stored format and what it runs in.
    Result r = swiglu_cli({"info", "--weights", gguf});
    INFO(r.err);
    REQUIRE(r.status == 0);
    for (const std::string& needle :
         {std::string("gate:       blk.0.ffn_gate.weight\n"),
          std::string("stored as:  mixed (gate Q4_K, up Q4_K, down Q6_K)\n"),
          std::string("runs as:    q4_k (gate, up), q6_k (down)  (--dtype stored)\n"),
          std::string("dtype:      q4_k (gate, up), q6_k (down)\n"),
          std::string("--dtype stored runs the file's 1536 blocks as stored: gate/up Q4_K, "
                      "down Q6_K")})
        CHECK(r.out.find(needle) != std::string::npos);
    r = swiglu_cli({"info", "--weights", gguf, "--dtype", "q8_0"});
    REQUIRE(r.status == 0);
    CHECK(r.out.find("runs as:    q8_0\n") != std::string::npos);
    CHECK(r.out.find("dtype:      q8_0\n") != std::string::npos);
    // --help lists stored among the dtypes.
    r = swiglu_cli({"run", "--help"});
    CHECK(r.out.find("stored|f32|bf16|int8|q8_0|q4_0|q4_k|q5_k|q6_k") != std::string::npos);
    expect_failure({"info", "--weights", gguf, "--dtype", "q4_kk"}, {"--dtype", "stored", "q6_k"});
}

TEST_CASE("--dtype q4_k quantises a safetensors file's f32 weights; stored keeps them f32") {
    Fixture fx;
    for (const char* name : {"q4_k", "q6_k", "stored"}) {
        CAPTURE(name);
        std::vector<std::string> args = fx.run_args(fx.one, fx.x_path);
        args.insert(args.end(), {"--dtype", name});
        const Result r = swiglu_cli(args);
        INFO(r.err);
        REQUIRE(r.status == 0);
        Options o;
        if (std::string(name) != "stored") dtype_from_name(name, &o.dtype);
        const Ffn ffn(fx.block0.gate_view(), fx.block0.up_view(), fx.block0.down_view(), o);
        std::vector<float> y(fx.x.size());
        ffn.forward(fx.x.data(), y.data(), 5);
        CHECK(detail::read_npy(fx.y_path).data == y);
    }
    // Without --dtype a safetensors file runs f32.
    const Result r = swiglu_cli({"info", "--weights", fx.one});
    REQUIRE(r.status == 0);
    CHECK(r.out.find("stored as:  F32\nruns as:    f32\n") != std::string::npos);
    CHECK(r.out.find("dtype:      f32\n") != std::string::npos);
}

TEST_CASE("info reports the library, and the checkpoint when given one") {
    Fixture fx;
    Result r = swiglu_cli({"info", "--threads", "2"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out.find(std::string("swiglu:     ") + version()) != std::string::npos);
    CHECK(r.out.find("cpu:") != std::string::npos);
    CHECK(r.out.find("activation:") != std::string::npos);
    CHECK(r.out.find("matmul:") != std::string::npos);
    CHECK(r.out.find("threads:    2\n") != std::string::npos);
    CHECK(r.out.find("dtype:      f32\n") != std::string::npos);
    for (const char* dtype : {"\nf32:", "\nbf16:", "\nint8:"})
        CHECK(r.out.find(dtype) != std::string::npos);

    r = swiglu_cli({"info", "--weights", fx.two, "--layer", "1"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    for (const std::string& needle :
         {"weights:    " + fx.two, std::string("scheme:     hf-llama"),
          std::string("gate:       model.layers.1.mlp.gate_proj.weight"),
          std::string("up:         model.layers.1.mlp.up_proj.weight"),
          std::string("down:       model.layers.1.mlp.down_proj.weight"),
          std::string("stored as:  F32"), std::string("d:          13\n"),
          std::string("f:          29\n"), std::string("parameters: 1131\n"),
          std::string("matmul:")}) {
        CHECK(r.out.find(needle) != std::string::npos);
    }

    expect_failure({"info", "--weights", fx.dir + "/missing.safetensors"},
                   {fx.dir + "/missing.safetensors"});
    expect_failure({"info", "--layer", "0"}, {"--layer", "--weights"});
}

TEST_CASE("help, version, and no command") {
    Result r = swiglu_cli({"--help"});
    CHECK(r.status == 0);
    for (const char* needle :
         {"SiLU(gate) * up", "run", "info", "Examples:", "swiglu run --weights"})
        CHECK(r.out.find(needle) != std::string::npos);

    r = swiglu_cli({"run", "--help"});
    CHECK(r.status == 0);
    for (const char* needle :
         {"--weights", "--layer", "--expert", "--block", "--prefix", "--input", "--output",
          "--threads", "--trace", "model.layers.N.mlp.", "gate_up_proj", "val_proj", "W1",
          "w1.weight", "experts.E.", "(M, d) or (B, T, d)",
          "A Mixture-of-Experts layer runs whole with --layer N", "config.json", "deepseek2"})
        CHECK(r.out.find(needle) != std::string::npos);

    r = swiglu_cli({"info", "--help"});
    CHECK(r.status == 0);
    CHECK(r.out.find("--weights") != std::string::npos);
    CHECK(r.out.find("its routing rule") != std::string::npos);

    r = swiglu_cli({"--version"});
    CHECK(r.status == 0);
    CHECK(r.out == std::string("swiglu ") + version() + "\n");

    // No command: the help, on stderr, as a failure.
    r = swiglu_cli({});
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find("Subcommands:") != std::string::npos);
}

TEST_CASE("bad arguments exit 2 with a message and touch nothing") {
    Fixture fx;
    const std::vector<std::string> good = fx.run_args(fx.one, fx.x_path);
    auto with = [&](std::initializer_list<std::string> extra) {
        std::vector<std::string> args = good;
        args.insert(args.end(), extra);
        return args;
    };
    expect_failure(with({"--bogus"}), {"--bogus"});
    expect_failure(with({"stray"}), {"stray"});
    expect_failure(with({"--layer", "0", "--prefix", "model.layers.0.mlp."}),
                   {"--layer", "--block"});
    expect_failure(with({"--expert", "1", "--block", "model.layers.0.mlp."}),
                   {"--expert", "--block"});
    expect_failure(with({"--expert", "-1"}), {"--expert", "-1"});
    expect_failure(with({"--threads", "-1"}), {"--threads", "-1"});
    expect_failure(with({"--threads", "many"}), {"--threads", "many"});
    expect_failure(with({"--threads", "100000"}), {"threads", "100000"});
    expect_failure(with({"--layer", "-2"}), {"--layer", "-2"});
    expect_failure({"run", "--weights", fx.one, "--output", fx.y_path}, {"--input"});
    expect_failure({"run", "--input", fx.x_path, "--output", fx.y_path}, {"--weights"});
    expect_failure({"run", "--weights", fx.one, "--input", fx.x_path}, {"--output"});
    expect_failure(
        {"run", "--weights", fx.one, "--input", fx.x_path, "--output", fx.y_path, "--bogus"},
        {"--bogus"});
    expect_failure({"frobnicate"}, {"frobnicate"});
    expect_failure({"--bogus"}, {"--bogus"});
    fx.check_untouched();
}

TEST_CASE("bad files exit 2, name the file, and touch nothing") {
    Fixture fx;
    const std::string d = fx.dir;

    // Weights.
    expect_failure(fx.run_args(d + "/missing.safetensors", fx.x_path),
                   {d + "/missing.safetensors"});
    test::write_file(d + "/garbage.safetensors", "this is not a checkpoint at all");
    expect_failure(fx.run_args(d + "/garbage.safetensors", fx.x_path),
                   {d + "/garbage.safetensors"});
    const std::string full = test::safetensors_bytes(hf_layer(fx.block0, 0));
    test::write_file(d + "/cut.safetensors", full.substr(0, full.size() - 10));
    expect_failure(fx.run_args(d + "/cut.safetensors", fx.x_path), {d + "/cut.safetensors"});
    // Files of other kinds given as weights are named, with what to do.
    expect_failure(fx.run_args(fx.x_path, fx.x_path),
                   {fx.x_path + ": a NumPy .npy array, not a checkpoint"});
    std::string torch_zip("PK\x03\x04", 4);
    torch_zip += std::string(22, '\0') + char(16) + std::string(3, '\0') + "archive/data.pkl";
    test::write_file(d + "/pytorch_model.bin", torch_zip + std::string(64, '\0'));
    expect_failure(fx.run_args(d + "/pytorch_model.bin", fx.x_path),
                   {d + "/pytorch_model.bin: a PyTorch checkpoint", "safetensors.torch"});
    // Two blocks and no --layer: ambiguous.
    expect_failure(fx.run_args(fx.two, fx.x_path), {fx.two});
    std::vector<std::string> args = fx.run_args(fx.two, fx.x_path);
    args.insert(args.end(), {"--layer", "7"});
    expect_failure(args, {fx.two});
    fx.check_untouched();

    // Inputs.
    expect_failure(fx.run_args(fx.one, d + "/missing.npy"), {"input " + d + "/missing.npy"});
    write_npy(d + "/d12.npy", test::random_input(4, kD - 1, 1), {4, kD - 1});
    expect_failure(fx.run_args(fx.one, d + "/d12.npy"),
                   {d + "/d12.npy", "(4, 12)", "last dimension 12", "expected d = 13"});
    write_npy(d + "/d12x3.npy", test::random_input(6, kD - 1, 1), {2, 3, kD - 1});
    expect_failure(fx.run_args(fx.one, d + "/d12x3.npy"), {d + "/d12x3.npy", "expected d = 13"});
    write_npy(d + "/rank1.npy", test::random_input(1, kD, 1), {kD});
    expect_failure(fx.run_args(fx.one, d + "/rank1.npy"),
                   {d + "/rank1.npy", "(13,)", "(M, d) or (B, T, d)"});
    write_npy(d + "/rank4.npy", test::random_input(2, kD, 1), {1, 2, 1, kD});
    expect_failure(fx.run_args(fx.one, d + "/rank4.npy"), {d + "/rank4.npy", "(1, 2, 1, 13)"});
    write_npy(d + "/rank0.npy", {1.0f}, {});
    expect_failure(fx.run_args(fx.one, d + "/rank0.npy"), {d + "/rank0.npy", "()"});

    const std::string f8 = "{'descr': '<f8', 'fortran_order': False, 'shape': (5, 13), }";
    test::write_file(d + "/f8.npy", detail::npy_preamble(f8) + std::string(5 * 13 * 8, '\0'));
    expect_failure(fx.run_args(fx.one, d + "/f8.npy"),
                   {d + "/f8.npy", "unsupported dtype '<f8'", "'<f4'"});
    const std::string fortran = "{'descr': '<f4', 'fortran_order': True, 'shape': (5, 13), }";
    test::write_file(d + "/fortran.npy",
                     detail::npy_preamble(fortran) + std::string(5 * 13 * 4, '\0'));
    expect_failure(fx.run_args(fx.one, d + "/fortran.npy"), {d + "/fortran.npy", "Fortran order"});
    const std::string good = slurp(fx.x_path);
    test::write_file(d + "/short.npy", good.substr(0, good.size() - 4));
    expect_failure(fx.run_args(fx.one, d + "/short.npy"), {d + "/short.npy", "data is"});
    test::write_file(d + "/text.npy", "1,2,3\n");
    expect_failure(fx.run_args(fx.one, d + "/text.npy"), {d + "/text.npy", "not a .npy file"});
    expect_failure(fx.run_args(fx.one, d), {d, "directory"});
    fx.check_untouched();
}

TEST_CASE("bad output paths exit 2 before any work") {
    Fixture fx;
    std::vector<std::string> args = fx.run_args(fx.one, fx.x_path);
    args.back() = fx.dir + "/no/such/dir/y.npy";
    expect_failure(args, {fx.dir + "/no/such/dir", "does not exist"});
    CHECK(!exists(fx.dir + "/no"));

    args.back() = fx.out_dir;  // a directory
    expect_failure(args, {fx.out_dir, "is a directory"});
    args.back() = fx.y_path + "/y.npy";  // under a file
    expect_failure(args, {fx.y_path, "not a directory"});
    fx.check_untouched();
}

}  // TEST_SUITE
