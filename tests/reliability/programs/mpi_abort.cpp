// A real MPI job that prints a partial figure and then aborts with code 0, as a job's error path
// sometimes does (`MPI_Abort(comm, 0)`): Open MPI's mpirun then exits 0 (issue 50).
#include <mpi.h>

#include <cstdio>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    std::printf("time: 0.5\n");
    std::fflush(stdout);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 1 || argc > 1) MPI_Abort(MPI_COMM_WORLD, 0);
  MPI_Finalize();
  return 0;
}
