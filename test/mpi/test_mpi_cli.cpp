// `swiglu-mpi run` under mpirun, run as real processes (ctest mpi_cli):
// y as `swiglu run` writes it within the f32 bound, in x's shape, for
// safetensors and GGUF, 2 and 3 ranks; a rank that fails to load, bad input
// on rank 0, a bad output path and bad arguments on one rank all exit 2
// with rank 0's one error line naming what failed, and leave an existing y
// untouched.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <sys/stat.h>

#include "cli/npy.hpp"
#include "gguf_writer.hpp"
#include "process.hpp"
#include "reference.hpp"
#include "safetensors_writer.hpp"

using namespace swiglu;
using namespace swiglu::test;

namespace {

// mpirun as root with more ranks than cores, as in CI.
std::vector<std::string> mpirun(int ranks) {
    return {SWIGLU_MPIEXEC, "--allow-run-as-root", "--oversubscribe", "-n", std::to_string(ranks)};
}

ProcessResult swiglu_mpi(int ranks, const std::vector<std::string>& args) {
    std::vector<std::string> argv = mpirun(ranks);
    argv.push_back(SWIGLU_MPI_CLI_PATH);
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv);
}

std::vector<float> read_y(const std::string& path, std::vector<std::int64_t>* shape = nullptr) {
    detail::NpyArray y = detail::read_npy(path);
    if (shape) *shape = y.shape;
    return y.data;
}

// The lines of `text` that start with `prefix`.
std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
    std::vector<std::string> found;
    std::size_t at = 0;
    while (at < text.size()) {
        const std::size_t end = std::min(text.find('\n', at), text.size());
        if (text.compare(at, prefix.size(), prefix) == 0)
            found.push_back(text.substr(at, end - at));
        at = end + 1;
    }
    return found;
}

// A folder with checkpoints of one block (hf-llama safetensors, glassllm's
// (in, out) W1/W3/W2, GGUF Q4_0), an input of shape (2, 3, d) and an out/
// folder holding a sentinel y.npy.
struct Fixture {
    static constexpr std::int64_t kD = 64, kF = 256;
    std::string dir = temp_dir();
    RandomBlock block{kD, kF, Layout::out_in, 41};
    RandomBlock glass{kD, kF, Layout::in_out, 42};
    std::string hf = dir + "/hf.safetensors", glassllm = dir + "/glass.safetensors",
                gguf = dir + "/model.gguf", x_path = dir + "/x.npy", out_dir = dir + "/out",
                y_path = out_dir + "/y.npy", single = dir + "/single.npy";
    std::vector<float> x = random_input(6, kD, 43);
    const std::string sentinel = "sentinel: must survive every failure\n";

    Fixture() {
        const std::string p = "model.layers.0.mlp.";
        write_file(hf, safetensors_bytes({{p + "gate_proj.weight", "F32", {kF, kD}, block.gate},
                                          {p + "up_proj.weight", "F32", {kF, kD}, block.up},
                                          {p + "down_proj.weight", "F32", {kD, kF}, block.down}}));
        write_file(glassllm, safetensors_bytes({{"W1", "F32", {kD, kF}, glass.gate},
                                                {"W3", "F32", {kD, kF}, glass.up},
                                                {"W2", "F32", {kF, kD}, glass.down}}));
        write_file(gguf, gguf_bytes({{"blk.0.ffn_gate.weight", 2, {kD, kF}, block.gate, ""},
                                     {"blk.0.ffn_up.weight", 2, {kD, kF}, block.up, ""},
                                     {"blk.0.ffn_down.weight", 2, {kF, kD}, block.down, ""}}));
        write_file(x_path, detail::npy_bytes(x.data(), {2, 3, kD}));
        ::mkdir(out_dir.c_str(), 0755);
        write_file(y_path, sentinel);
    }

    std::vector<std::string> args(const std::string& weights, const std::string& input,
                                  const std::string& output) const {
        return {"run",      "--weights", weights,     "--input", input,
                "--output", output,      "--threads", "1"};
    }
    void check_untouched() const {
        CHECK(slurp(y_path) == sentinel);
        CHECK(list_dir(out_dir) == std::set<std::string>{"y.npy"});
    }
};

// A failure: exit status 2, and rank 0's one error line naming `needles`.
void expect_failure(const ProcessResult& r, const std::vector<std::string>& needles) {
    INFO("stderr: " << r.err);
    CHECK(r.status == 2);
    const std::vector<std::string> errors = lines_starting(r.err, "swiglu-mpi: error: ");
    REQUIRE(errors.size() == 1);
    for (const std::string& needle : needles) CHECK(errors[0].find(needle) != std::string::npos);
}

}  // namespace

TEST_SUITE("mpi_cli") {

TEST_CASE("y as the single process's, in x's shape, for 2 and 3 ranks and each format") {
    const Fixture fx;
    struct Case {
        std::string weights, dtype;
    };
    for (const Case& c : {Case{fx.hf, "f32"}, Case{fx.glassllm, "f32"}, Case{fx.gguf, "q4_0"}})
        for (const int ranks : {2, 3}) {
            CAPTURE(c.weights);
            CAPTURE(ranks);
            std::vector<std::string> args = fx.args(c.weights, fx.x_path, fx.y_path);
            args.insert(args.end(), {"--dtype", c.dtype});
            const ProcessResult r = swiglu_mpi(ranks, args);
            INFO("stderr: " << r.err);
            REQUIRE(r.status == 0);
            std::vector<std::string> single = {SWIGLU_CLI_PATH};
            for (const std::string& a : fx.args(c.weights, fx.x_path, fx.single))
                single.push_back(a);
            single.insert(single.end(), {"--dtype", c.dtype});
            REQUIRE(run_process(single).status == 0);
            std::vector<std::int64_t> shape;
            const std::vector<float> y = read_y(fx.y_path, &shape);
            CHECK(shape == std::vector<std::int64_t>{2, 3, Fixture::kD});
            const std::vector<float> expected = read_y(fx.single);
            CHECK(relative_error(y, {expected.begin(), expected.end()}) <=
                  f32_tolerance(Fixture::kD, Fixture::kF));
            CHECK(list_dir(fx.out_dir) == std::set<std::string>{"y.npy"});
        }
}

TEST_CASE("a Mixture-of-Experts layer runs sharded by experts, as the single process") {
    // Mixtral's names, E = 6, k = 2: each rank loads its experts only.
    const Fixture fx;
    const std::int64_t E = 6, f = 48;
    const std::string p = "model.layers.0.block_sparse_moe.";
    std::vector<TensorSpec> tensors = {{p + "gate.weight",
                                        "F32",
                                        {E, Fixture::kD},
                                        uniform(std::size_t(E * Fixture::kD), 0.5f, 7)}};
    std::vector<RandomBlock> experts;
    for (std::int64_t e = 0; e < E; ++e) {
        const RandomBlock b(Fixture::kD, f, Layout::out_in, 50 + unsigned(e));
        const std::string q = p + "experts." + std::to_string(e) + ".";
        tensors.push_back({q + "w1.weight", "F32", {f, Fixture::kD}, b.gate});
        tensors.push_back({q + "w3.weight", "F32", {f, Fixture::kD}, b.up});
        tensors.push_back({q + "w2.weight", "F32", {Fixture::kD, f}, b.down});
    }
    const std::string dir = temp_dir(), weights = dir + "/model.safetensors";
    write_file(weights, safetensors_bytes(tensors));
    write_file(dir + "/config.json",
               R"({"model_type": "mixtral", "num_local_experts": 6, "num_experts_per_tok": 2})");
    std::vector<std::string> single = {SWIGLU_CLI_PATH};
    for (const std::string& a : fx.args(weights, fx.x_path, fx.single)) single.push_back(a);
    single.insert(single.end(), {"--layer", "0"});
    REQUIRE(run_process(single).status == 0);
    const std::vector<float> expected = read_y(fx.single);
    for (const int ranks : {2, 3}) {
        CAPTURE(ranks);
        std::vector<std::string> args = fx.args(weights, fx.x_path, fx.y_path);
        args.insert(args.end(), {"--layer", "0"});
        const ProcessResult r = swiglu_mpi(ranks, args);
        INFO("stderr: " << r.err);
        REQUIRE(r.status == 0);
        std::vector<std::int64_t> shape;
        const std::vector<float> y = read_y(fx.y_path, &shape);
        CHECK(shape == std::vector<std::int64_t>{2, 3, Fixture::kD});
        // The same terms, the combine's k additions in another order
        // (test_sharded_moe.cpp): within the block's f32 bound.
        CHECK(relative_error(y, {expected.begin(), expected.end()}) <=
              f32_tolerance(Fixture::kD, f));
    }
    // More ranks than experts: refused on every rank, named.
    std::vector<std::string> args = fx.args(weights, fx.x_path, fx.y_path);
    args.insert(args.end(), {"--layer", "0"});
    expect_failure(swiglu_mpi(7, args), {"experts >= ranks"});
}

TEST_CASE("a rank that cannot load its checkpoint fails the run, named, y untouched") {
    const Fixture fx;
    const std::string truncated = fx.dir + "/truncated.safetensors";
    const std::string bytes = slurp(fx.hf);
    write_file(truncated, bytes.substr(0, bytes.size() - 100));
    // MPMD: rank 0 gets the good file, rank 1 the damaged one.
    std::vector<std::string> argv = mpirun(1);
    argv.push_back(SWIGLU_MPI_CLI_PATH);
    for (const std::string& a : fx.args(fx.hf, fx.x_path, fx.y_path)) argv.push_back(a);
    argv.insert(argv.end(), {":", "-n", "1", SWIGLU_MPI_CLI_PATH});
    for (const std::string& a : fx.args(truncated, fx.x_path, fx.y_path)) argv.push_back(a);
    expect_failure(run_process(argv), {"rank 1: ", truncated});
    fx.check_untouched();

    expect_failure(swiglu_mpi(2, fx.args(fx.dir + "/missing.safetensors", fx.x_path, fx.y_path)),
                   {"rank 0: ", "missing.safetensors"});
    fx.check_untouched();
}

TEST_CASE("rank 0's bad input or output path fails every rank before y is written") {
    const Fixture fx;
    const std::string narrow = fx.dir + "/narrow.npy";
    const std::vector<float> x(3 * 5, 1.0f);
    write_file(narrow, detail::npy_bytes(x.data(), {3, 5}));
    expect_failure(swiglu_mpi(2, fx.args(fx.hf, narrow, fx.y_path)),
                   {"rank 0: ", "input " + narrow, "expected d = 64"});
    fx.check_untouched();
    expect_failure(swiglu_mpi(2, fx.args(fx.hf, fx.dir + "/none.npy", fx.y_path)), {"none.npy"});
    fx.check_untouched();
    expect_failure(swiglu_mpi(2, fx.args(fx.hf, fx.x_path, fx.dir + "/no/such/dir/y.npy")),
                   {"output"});
    // A mistyped option: a usage error, printed once; also on one rank only.
    expect_failure(swiglu_mpi(2, {"run", "--weights", fx.hf, "--inptu", fx.x_path}),
                   {"unknown argument '--inptu'"});
    std::vector<std::string> argv = mpirun(1);
    argv.push_back(SWIGLU_MPI_CLI_PATH);
    for (const std::string& a : fx.args(fx.hf, fx.x_path, fx.y_path)) argv.push_back(a);
    argv.insert(argv.end(), {":", "-n", "1", SWIGLU_MPI_CLI_PATH, "run", "--inptu", "x"});
    expect_failure(run_process(argv), {"rank 1: ", "unknown argument '--inptu'"});
    fx.check_untouched();
}

}  // TEST_SUITE
