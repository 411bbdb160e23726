// The command's exit statuses and the one-line error report on stderr.
//
//   0  success (also --help and --version)
//   1  internal error: Status::internal, out of memory, any unexpected
//      exception — a bug or a machine problem, not the caller's input
//   2  the request cannot be served as given: bad or missing argument, a
//      missing, unreadable or malformed file, a shape mismatch, an
//      unsupported dtype, an output path that cannot be written
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace swiglu::cli {

enum ExitStatus : int { exit_ok = 0, exit_internal = 1, exit_usage = 2 };

// Who reports: the program's name in messages ("swiglu" unless set), and
// whether this process prints at all (under mpirun only rank 0 does; the
// others return the same statuses silently).
void set_reporter(const std::string& program, bool quiet);

// Prints "<program>: error: <message>" on one line (newlines in `message`
// are flattened) and returns `status`.
int report(ExitStatus status, const std::string& message);

// CLI11's parse errors (its own exit codes 105, 106, ...) reported as usage
// errors, naming the command and its --help; help and version print and
// succeed.
int report_parse_error(const CLI::App& app, const CLI::ParseError& e);
// What report_parse_error prints for an error (not help or version).
std::string parse_error_message(const CLI::App& app, const CLI::ParseError& e);

// Call from a catch (...) block: reports the exception in flight and returns
// the exit status it maps to.
int report_current_exception();

}  // namespace swiglu::cli
