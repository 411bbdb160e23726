#include "exit_status.hpp"

#include <exception>
#include <iostream>
#include <new>

#include <swiglu/swiglu.hpp>

namespace swiglu::cli {

namespace {
std::string program_name = "swiglu";
bool quiet = false;
}  // namespace

void set_reporter(const std::string& program, bool silent) {
    program_name = program;
    quiet = silent;
}

int report(ExitStatus status, const std::string& message) {
    if (quiet) return status;
    // One line, so that scripts and logs can take it as one record.
    std::string line = message;
    for (char& c : line)
        if (c == '\n' || c == '\r') c = ' ';
    std::cerr << program_name << ": error: " << line << std::endl;
    return status;
}

int report_parse_error(const CLI::App& app, const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    return report(exit_usage, parse_error_message(app, e));
}

std::string parse_error_message(const CLI::App& app, const CLI::ParseError& e) {
    const auto selected = app.get_subcommands();
    const CLI::App& where = selected.empty() ? app : *selected.front();
    const std::string command = selected.empty() ? "" : where.get_name();
    // CLI11 checks required options before it complains about unknown ones;
    // a mistyped option is the better explanation of the two.
    std::string message = e.what();
    const std::vector<std::string> unknown = where.remaining();
    if (!unknown.empty()) message = "unknown argument '" + unknown.front() + "'";
    const std::string see = program_name + (command.empty() ? "" : " " + command) + " --help";
    return (command.empty() ? "" : command + ": ") + message + " (see '" + see + "')";
}

int report_current_exception() {
    try {
        throw;
    } catch (const Error& e) {
        switch (e.status()) {
            case Status::invalid_argument:
            case Status::unsupported: return report(exit_usage, e.what());
            case Status::out_of_memory:
                return report(exit_internal, std::string("out of memory: ") + e.what());
            default: return report(exit_internal, std::string("internal error: ") + e.what());
        }
    } catch (const std::bad_alloc&) {
        return report(exit_internal, "out of memory");
    } catch (const std::exception& e) {
        return report(exit_internal, std::string("internal error: ") + e.what());
    } catch (...) {
        return report(exit_internal, "internal error: unknown exception");
    }
}

}  // namespace swiglu::cli
