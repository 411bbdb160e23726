#include "help_formatter.hpp"

#include <sstream>

namespace swiglu::cli {

std::string HelpFormatter::make_subcommand(const CLI::App* sub) const {
    const std::string description = sub->get_description();
    std::stringstream out;
    CLI::detail::format_help(out, sub->get_display_name(true),
                             description.substr(0, description.find('\n')), get_column_width());
    return out.str();
}

std::string HelpFormatter::make_description(const CLI::App* app) const {
    const std::string description = CLI::Formatter::make_description(app);
    return description.empty() ? description : description + "\n";
}

}  // namespace swiglu::cli
