// CLI11's help layout with two changes that make the long descriptions in
// help_text.cpp work: the list of commands shows only the first line of
// each command's description, and a blank line follows the description.
#pragma once

#include <CLI/CLI.hpp>

namespace swiglu::cli {

class HelpFormatter : public CLI::Formatter {
public:
    std::string make_subcommand(const CLI::App* sub) const override;
    std::string make_description(const CLI::App* app) const override;
};

}  // namespace swiglu::cli
