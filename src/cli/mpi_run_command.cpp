#include "mpi_run_command.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include <swiglu/mpi.hpp>

#include "atomic_file.hpp"
#include "help_text.hpp"
#include "mpi/agreement.hpp"
#include "npy_output.hpp"

namespace swiglu::cli {

namespace {

constexpr const char* kWho = "swiglu-mpi run";

// Rank 0's `data` on every rank, in pieces that MPI's int counts hold.
void broadcast_floats(float* data, std::int64_t n, MPI_Comm comm) {
    constexpr std::int64_t kPiece = std::int64_t{1} << 30;
    for (std::int64_t at = 0; at < n; at += kPiece)
        detail::check_mpi(
            MPI_Bcast(data + at, static_cast<int>(std::min(kPiece, n - at)), MPI_FLOAT, 0, comm),
            "MPI_Bcast");
}

// Runs `work` on rank 0 only, then every rank throws what it threw.
template <class Work>
void on_root(MPI_Comm comm, bool root, Work&& work) {
    detail::agree_from(comm, 0, detail::failure_of(kWho, [&] {
                                    if (root) work();
                                }).get());
}

}  // namespace

CLI::App* add_mpi_run_command(CLI::App& app, RunArgs& args) {
    CLI::App* run = app.add_subcommand("run", help::mpi_run_description);
    run->footer(help::mpi_run_footer);
    add_run_options(*run, args);
    return run;
}

void mpi_run_command(const RunArgs& args) {
    const MPI_Comm comm = MPI_COMM_WORLD;
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    const bool root = rank == 0;

    // Rank 0's cheap checks and its input first: a bad output path or input
    // should not cost a checkpoint load on every rank.
    detail::NpyArray x;
    on_root(comm, root, [&] {
        check_output_path(args.output, "output");
        x = read_input(args.input);
    });
    // A Mixture-of-Experts layer is sharded by experts, a block by hidden
    // columns; every rank must see the same kind (files that differ would
    // otherwise enter different collectives).
    std::int64_t moe_layer = -1;
    detail::agree(comm, detail::failure_of(kWho, [&] {
                            moe_layer = moe_layer_of(args.weights).value_or(-1);
                        }).get());
    std::int64_t kinds[2] = {moe_layer, -moe_layer};
    detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, kinds, 2, MPI_INT64_T, MPI_MAX, comm),
                      "MPI_Allreduce");
    if (kinds[0] != -kinds[1])
        throw Error(Status::invalid_argument,
                    std::string(kWho) + ": the ranks' --weights differ: layer " +
                        std::to_string(kinds[0]) +
                        " is a Mixture-of-Experts layer in some ranks' files only");
    // Every rank maps the checkpoint and packs only its shard: its hidden
    // columns of a block, or its experts of a MoE layer.
    const Options options = block_options(args.weights.path, args.threads, args.dtype);
    std::unique_ptr<ShardedFfn> ffn;
    std::unique_ptr<ShardedMoeLayer> moe;
    if (moe_layer >= 0)
        moe = std::make_unique<ShardedMoeLayer>(comm, args.weights.path, moe_layer, options);
    else
        ffn =
            std::make_unique<ShardedFfn>(comm, args.weights.path, args.weights.selector(), options);
    const std::int64_t d = moe ? moe->d() : ffn->d();
    std::int64_t tokens = 0;
    on_root(comm, root, [&] { tokens = input_rows(x, d, args.input); });
    detail::check_mpi(MPI_Bcast(&tokens, 1, MPI_INT64_T, 0, comm), "MPI_Bcast");
    // x to every rank; y replaces it in place (ShardedFfn allows y == x).
    detail::agree(comm, detail::failure_of(kWho, [&] {
                            if (!root) x.data.resize(static_cast<std::size_t>(tokens * d));
                        }).get());
    broadcast_floats(x.data.data(), tokens * d, comm);
    if (moe)
        moe->forward(x.data.data(), x.data.data(), tokens);
    else
        ffn->forward(x.data.data(), x.data.data(), tokens);
    // Last, so that an output in place means the whole run succeeded.
    on_root(comm, root, [&] { write_npy_file(args.output, x.data.data(), x.shape); });
}

}  // namespace swiglu::cli
