// The text of `swiglu --help` and of each command's --help, kept in one place
// so that it can be read (and corrected) as a whole. A command's description
// starts with a one-line summary: the top-level help lists only that line.
#pragma once

#include <string>

namespace swiglu::cli::help {

extern const char* const program_description;
extern const char* const program_footer;
// Lists the formats the loader reads from the format table.
std::string run_description();
extern const char* const run_footer;
extern const char* const info_description;
extern const char* const info_footer;
// swiglu-mpi
extern const char* const mpi_program_description;
extern const char* const mpi_program_footer;
extern const char* const mpi_run_description;
extern const char* const mpi_run_footer;

}  // namespace swiglu::cli::help
