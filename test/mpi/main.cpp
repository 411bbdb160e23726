// The MPI suite's main: MPI around doctest, run on every rank under mpirun
// (ctest entries mpi_2 and mpi_3). A failure on any rank fails the run.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <mpi.h>

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    doctest::Context context(argc, argv);
    if (rank != 0) context.setOption("out", "/dev/null");  // rank 0 reports for all
    int failed = context.run() != 0 ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return failed;
}
