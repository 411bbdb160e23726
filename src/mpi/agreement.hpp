// How the ranks of a communicator agree on failures: each rank catches its
// own, then one collective makes every rank throw the same error (the
// lowest failing rank's, named), so that no rank goes on alone into a
// collective the others never reach.
#pragma once

#include <mpi.h>

#include <exception>
#include <memory>
#include <new>
#include <string>

#include <swiglu/swiglu.hpp>

namespace swiglu::detail {

// Throws Error(internal) naming `what` unless rc is MPI_SUCCESS.
void check_mpi(int rc, const char* what);

// Collective, once every rank knows that rank `from` failed: throws its
// error (its `local`; null elsewhere) on every rank, as "rank k: <message>".
[[noreturn]] void throw_from(MPI_Comm comm, int from, const Error* local);

// Collective: throws on every rank if `local` (this rank's failure, null if
// none) is set on any: the lowest failing rank's status and message, as
// "rank k: <message>".
void agree(MPI_Comm comm, const Error* local);

// Collective: the same when only rank `from` can fail (its `local`; the
// other ranks pass null): one broadcast instead of a reduction and two.
void agree_from(MPI_Comm comm, int from, const Error* local);

// Runs `work` and returns what it threw as an Error (bad_alloc as
// out_of_memory, any other exception as internal), or null: nothing escapes
// one rank alone.
template <class Work>
std::unique_ptr<Error> failure_of(const char* who, Work&& work) {
    try {
        work();
    } catch (const Error& e) {
        return std::make_unique<Error>(e);
    } catch (const std::bad_alloc&) {
        return std::make_unique<Error>(Status::out_of_memory, std::string(who) + ": out of memory");
    } catch (const std::exception& e) {
        return std::make_unique<Error>(Status::internal, std::string(who) + ": " + e.what());
    } catch (...) {
        return std::make_unique<Error>(Status::internal, std::string(who) + ": unknown exception");
    }
    return nullptr;
}

}  // namespace swiglu::detail
