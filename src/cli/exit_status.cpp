#include "exit_status.hpp"

#include <exception>
#include <iostream>
#include <new>

#include <swiglu/swiglu.hpp>

namespace swiglu::cli {

int report(ExitStatus status, const std::string& message) {
    // One line, so that scripts and logs can take it as one record.
    std::string line = message;
    for (char& c : line)
        if (c == '\n' || c == '\r') c = ' ';
    std::cerr << "swiglu: error: " << line << std::endl;
    return status;
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
