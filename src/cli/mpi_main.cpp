// The `swiglu-mpi` command, run under mpirun: `swiglu run` with the block
// sharded over the ranks (mpi_run_command.hpp). Every rank parses the same
// arguments and agrees on every failure; only rank 0 prints, and every rank
// exits with the same status, so mpirun's is the run's.
#include <mpi.h>

#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <swiglu/swiglu.hpp>

#include "exit_status.hpp"
#include "help_formatter.hpp"
#include "help_text.hpp"
#include "mpi_run_command.hpp"

using namespace swiglu::cli;

namespace {

int run(int argc, char** argv, bool root) {
    set_reporter("swiglu-mpi", /*quiet=*/!root);
    CLI::App app(help::mpi_program_description, "swiglu-mpi");
    app.formatter(std::make_shared<HelpFormatter>());
    app.footer(help::mpi_program_footer);
    app.set_version_flag("--version", std::string("swiglu-mpi ") + swiglu::version(),
                         "print the version and exit");
    RunArgs args;
    CLI::App* command = add_mpi_run_command(app, args);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return report_parse_error(app, e);
    }
    if (!command->parsed()) {
        if (root) std::cerr << app.help();
        return exit_usage;
    }
    try {
        mpi_run_command(args);
    } catch (...) {
        return report_current_exception();
    }
    return exit_ok;
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const int status = run(argc, argv, rank == 0);
    MPI_Finalize();
    return status;
}
