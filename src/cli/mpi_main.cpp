// The `swiglu-mpi` command, run under mpirun: `swiglu run` with the block
// sharded over the ranks (mpi_run_command.hpp). Every rank parses the same
// arguments and agrees on every failure; only rank 0 prints, and every rank
// exits with the same status, so mpirun's is the run's.
#include <mpi.h>

#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <swiglu/swiglu.hpp>

#include "exit_status.hpp"
#include "help_formatter.hpp"
#include "help_text.hpp"
#include "mpi/agreement.hpp"
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
    // Ranks may be given different arguments (mpirun's "A : B" form): each
    // rank's parse is agreed on before any goes on into the run.
    std::unique_ptr<swiglu::Error> parse_failure;
    int printed = 0;  // help or version: printed (by rank 0), nothing to run
    try {
        app.parse(argc, argv);
        if (!command->parsed())
            parse_failure = std::make_unique<swiglu::Error>(
                swiglu::Status::invalid_argument, "no command: try 'swiglu-mpi run --help'");
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
            printed = 1;
            if (root) app.exit(e);
        } else {
            parse_failure = std::make_unique<swiglu::Error>(swiglu::Status::invalid_argument,
                                                            parse_error_message(app, e));
        }
    }
    try {
        swiglu::detail::agree(MPI_COMM_WORLD, parse_failure.get());
        MPI_Allreduce(MPI_IN_PLACE, &printed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (printed) return exit_ok;
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
