// The `swiglu` command: argument parsing and dispatch. Each command lives in
// its own file; exit statuses are defined in exit_status.hpp.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <swiglu/swiglu.hpp>

#include "exit_status.hpp"
#include "help_formatter.hpp"
#include "help_text.hpp"
#include "info_command.hpp"
#include "run_command.hpp"

using namespace swiglu::cli;

int main(int argc, char** argv) {
    CLI::App app(swiglu::cli::help::program_description, "swiglu");
    // Before the commands are added: they take the formatter from their parent.
    app.formatter(std::make_shared<HelpFormatter>());
    app.footer(swiglu::cli::help::program_footer);
    app.set_version_flag("--version", std::string("swiglu ") + swiglu::version(),
                         "print the version and exit");

    RunArgs run_args;
    InfoArgs info_args;
    CLI::App* run = add_run_command(app, run_args);
    CLI::App* info = add_info_command(app, info_args);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return report_parse_error(app, e);
    }

    try {
        if (run->parsed()) {
            run_command(run_args);
        } else if (info->parsed()) {
            info_command(info_args);
        } else {
            // No command: show what there is, but as a failure, so that a
            // script that forgot its command does not pass silently.
            std::cerr << app.help();
            return exit_usage;
        }
    } catch (...) {
        return report_current_exception();
    }
    return exit_ok;
}
