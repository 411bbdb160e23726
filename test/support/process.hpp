// Runs a program as a real process, for the suites that test commands:
// its exit status and what it printed, and the file helpers they share.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace swiglu::test {

struct ProcessResult {
    int status = -1;  // the exit status, or -signal
    std::string out, err;
};

// Runs argv[0] (a path) with argv; stdout and stderr go to files (no pipe
// to drain, so a chatty child cannot block). Fails the test if it cannot
// start.
ProcessResult run_process(const std::vector<std::string>& argv);

std::string slurp(const std::string& path);
bool exists(const std::string& path);
std::set<std::string> list_dir(const std::string& dir);

}  // namespace swiglu::test
