// Checks shared by the suites that test error paths: a swiglu::Error with a
// given status and message, and the C API's view of weights and errors.
#pragma once

#include <doctest/doctest.h>

#include <initializer_list>
#include <string>

#include <swiglu/swiglu.h>
#include <swiglu/swiglu.hpp>

namespace swiglu::test {

// Runs `f`, expecting a swiglu::Error of `status` whose message contains
// every needle.
template <class F>
void expect_error(F&& f, Status status, std::initializer_list<std::string> needles) {
    try {
        f();
        FAIL("no error thrown");
    } catch (const Error& e) {
        const std::string message = e.what();  // a string: CAPTURE prints its text
        CAPTURE(message);
        CHECK(e.status() == status);
        for (const std::string& needle : needles) {
            CAPTURE(needle);
            CHECK(message.find(needle) != std::string::npos);
        }
    }
}

template <class F>
void expect_error(F&& f, Status status, const std::string& needle) {
    expect_error(std::forward<F>(f), status, {needle});
}

// The message of the swiglu::Error that `f` throws, after checking its
// status; "" (and a failed check) if it throws none.
template <class F>
std::string error_message(F&& f, Status status = Status::invalid_argument) {
    try {
        f();
    } catch (const Error& e) {
        CHECK(e.status() == status);
        return e.what();
    }
    FAIL_CHECK("no error thrown");
    return "";
}

inline bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

inline swiglu_weight c_weight(const WeightView& w) {
    return {w.data, w.rows, w.cols,
            w.layout == Layout::out_in ? SWIGLU_LAYOUT_OUT_IN : SWIGLU_LAYOUT_IN_OUT};
}

// This thread's last C API error mentions `needle`.
inline bool error_mentions(const char* needle) {
    return std::string(swiglu_last_error()).find(needle) != std::string::npos;
}

}  // namespace swiglu::test
