// `swiglu-mpi run`: `swiglu run` with the block sharded over the ranks of
// MPI_COMM_WORLD (swiglu/mpi.hpp). Rank 0 reads x and writes y; every rank
// loads only its shard of the checkpoint; the others receive x.
#pragma once

#include <CLI/CLI.hpp>

#include "run_command.hpp"

namespace swiglu::cli {

// Registers the subcommand and its options (run's, but --trace) on `app`.
CLI::App* add_mpi_run_command(CLI::App& app, RunArgs& args);
// Runs it: collective over MPI_COMM_WORLD. Every failure, on any rank, is
// thrown on every rank (rank 0's message says which rank failed), before
// y is written; y is written atomically by rank 0 last.
void mpi_run_command(const RunArgs& args);

}  // namespace swiglu::cli
