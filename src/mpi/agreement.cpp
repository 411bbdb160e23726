#include "agreement.hpp"

#include <string>

namespace swiglu::detail {

void check_mpi(int rc, const char* what) {
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        int length = 0;
        MPI_Error_string(rc, text, &length);
        throw Error(Status::internal, std::string(what) + ": " + std::string(text, length));
    }
}

void throw_from(MPI_Comm comm, int from, const Error* local) {
    std::string message = local ? local->what() : "";
    int fields[2] = {local ? static_cast<int>(local->status()) : 0,
                     static_cast<int>(message.size())};
    check_mpi(MPI_Bcast(fields, 2, MPI_INT, from, comm), "MPI_Bcast");
    message.resize(static_cast<std::size_t>(fields[1]));
    check_mpi(MPI_Bcast(message.data(), fields[1], MPI_CHAR, from, comm), "MPI_Bcast");
    throw Error(static_cast<Status>(fields[0]), "rank " + std::to_string(from) + ": " + message);
}

void agree(MPI_Comm comm, const Error* local) {
    int rank = 0, ranks = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    int first = local ? rank : ranks;
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
    if (first < ranks) throw_from(comm, first, first == rank ? local : nullptr);
}

void agree_from(MPI_Comm comm, int from, const Error* local) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    int failed = local ? 1 : 0;
    check_mpi(MPI_Bcast(&failed, 1, MPI_INT, from, comm), "MPI_Bcast");
    if (failed) throw_from(comm, from, rank == from ? local : nullptr);
}

}  // namespace swiglu::detail
