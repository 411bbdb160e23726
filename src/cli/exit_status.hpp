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

namespace swiglu::cli {

enum ExitStatus : int { exit_ok = 0, exit_internal = 1, exit_usage = 2 };

// Prints "swiglu: error: <message>" on one line (newlines in `message` are
// flattened) and returns `status`.
int report(ExitStatus status, const std::string& message);

// Call from a catch (...) block: reports the exception in flight and returns
// the exit status it maps to.
int report_current_exception();

}  // namespace swiglu::cli
