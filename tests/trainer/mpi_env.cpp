// main() of the MPI test binary: MPI around GoogleTest. Every rank runs every test (the tests
// make collective calls, so no rank may skip or return early from one); ranks other than 0
// print failures only, so a failure on any rank is still shown and fails the mpirun.
#include <gtest/gtest.h>
#include <mpi.h>

int main(int argc, char** argv) {
  int provided = 0;
  // SERIALIZED: the double-buffering tests make MPI calls from the rule's comm thread.
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) GTEST_FLAG_SET(brief, true);
  const int failed = RUN_ALL_TESTS();
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}
