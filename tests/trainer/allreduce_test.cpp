// Every allreduce algorithm and wire dtype against MPI_Allreduce on random buffers of awkward
// sizes; 1-bit against the sign/scale/residual arithmetic recomputed here, over two steps so the
// error feedback is exercised. Runs under mpirun with 2, 3 and 4 ranks. Tests make collective
// calls: they use EXPECT (never ASSERT) after the first collective so every rank keeps going.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <random>
#include <string>

#include "trainer/allreduce.h"

namespace tune::trainer {
namespace {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int s = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

std::vector<float> random_buffer(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed * 7919u + static_cast<unsigned>(world_rank()));
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

std::vector<float> mpi_sum(const std::vector<float>& in) {
  std::vector<float> out(in.size());
  MPI_Allreduce(in.data(), out.data(), static_cast<int>(in.size()), MPI_FLOAT, MPI_SUM,
                MPI_COMM_WORLD);
  return out;
}

const char* name(Algorithm a) {
  switch (a) {
    case Algorithm::mpi:
      return "mpi";
    case Algorithm::ring:
      return "ring";
    case Algorithm::rabenseifner:
      return "rabenseifner";
    case Algorithm::hierarchical:
      return "hierarchical";
    case Algorithm::nccl:
      return "nccl";
  }
  return "?";
}

struct Case {
  Algorithm algo;
  std::size_t n;
  double bucket_mb;
};

std::string case_name(const testing::TestParamInfo<Case>& info) {
  return std::string(name(info.param.algo)) + "_n" + std::to_string(info.param.n) + "_bucket" +
         std::to_string(static_cast<int>(info.param.bucket_mb * 1000)) + "KB";
}

const auto k_cases = testing::Values(
    Case{Algorithm::mpi, 1, 4}, Case{Algorithm::mpi, 7, 4}, Case{Algorithm::mpi, 1000003, 4},
    Case{Algorithm::ring, 1, 4}, Case{Algorithm::ring, 7, 4}, Case{Algorithm::ring, 1000003, 4},
    Case{Algorithm::ring, 1000003, 0.5}, Case{Algorithm::rabenseifner, 1, 4},
    Case{Algorithm::rabenseifner, 7, 4}, Case{Algorithm::rabenseifner, 1000003, 4},
    Case{Algorithm::rabenseifner, 1000003, 0.5}, Case{Algorithm::hierarchical, 1, 4},
    Case{Algorithm::hierarchical, 7, 4}, Case{Algorithm::hierarchical, 1000003, 4});

class Reduce : public testing::TestWithParam<Case> {};

// Every element within tol of the reference, and every rank holding the same bytes afterwards.
void expect_close_and_same_on_every_rank(const std::vector<float>& data,
                                         const std::vector<float>& ref, double tol) {
  std::size_t bad = 0;
  double worst = 0;
  for (std::size_t i = 0; i < data.size(); ++i) {
    const double e = std::fabs(data[i] - ref[i]);
    worst = std::max(worst, e);
    bad += e > tol;
  }
  EXPECT_EQ(bad, 0u) << "worst error " << worst << ", tolerance " << tol;
  std::vector<float> r0 = data;
  MPI_Bcast(r0.data(), static_cast<int>(r0.size()), MPI_FLOAT, 0, MPI_COMM_WORLD);
  EXPECT_EQ(r0, data);
}

// Reduces a random buffer (seeded by seed) in the case's algorithm and bucket size with dtype on
// the wire, and checks it against MPI_Allreduce within tol.
void expect_reduce_matches_mpi(const Case& c, GradDtype dtype, unsigned seed, double tol) {
  Communicator comm(MPI_COMM_WORLD);
  GradientReducer reducer(comm, c.n, c.algo, dtype, c.bucket_mb);
  std::vector<float> data = random_buffer(c.n, seed);
  const std::vector<float> ref = mpi_sum(data);
  reducer.reduce(data.data());
  expect_close_and_same_on_every_rank(data, ref, tol);
}

TEST_P(Reduce, Fp32MatchesMpiAllreduce) {
  // Summation order differs between algorithms: allow a few float roundings of a sum <= p.
  expect_reduce_matches_mpi(GetParam(), GradDtype::fp32, 1,
                            4 * world_size() * 1.2e-7 * world_size());
}

TEST_P(Reduce, Fp16MatchesMpiAllreduceWithinHalfPrecision) {
  // Each input is rounded to half (2^-11 relative) and each of the p-1 partial sums (<= p in
  // magnitude) too: bound p * p * 2^-11.
  const double p = world_size();
  expect_reduce_matches_mpi(GetParam(), GradDtype::fp16, 2, p * p * std::ldexp(1.0, -11));
}

// The 1-bit arithmetic, recomputed: v = g + residual; per bucket scale = mean |v| (summed in
// double, element i of the bucket into lane i % 16, lanes added pairwise); this rank contributes
// scale * sign(v) (sign(0) = +); residual' = v - contribution.
TEST_P(Reduce, OneBitIsSignTimesScaleWithErrorFeedback) {
  const Case c = GetParam();
  Communicator comm(MPI_COMM_WORLD);
  GradientReducer reducer(comm, c.n, c.algo, GradDtype::one_bit, c.bucket_mb);
  const std::size_t bucket = reducer.bucket_elems();
  EXPECT_EQ(bucket,
            std::min<std::size_t>(c.n, static_cast<std::size_t>(c.bucket_mb * 1024 * 1024 / 4)));
  std::vector<float> residual(c.n, 0.f);
  for (int step = 0; step < 2; ++step) {
    std::vector<float> g = random_buffer(c.n, 10 + static_cast<unsigned>(step));
    std::vector<float> contribution(c.n), expected_residual(c.n);
    for (std::size_t off = 0; off < c.n; off += bucket) {
      const std::size_t len = std::min(bucket, c.n - off);
      double lane[16] = {};
      for (std::size_t i = off; i < off + len; ++i)
        lane[(i - off) % 16] += std::fabs(g[i] + residual[i]);
      for (int width = 8; width >= 1; width /= 2)
        for (int j = 0; j < width; ++j) lane[j] = lane[2 * j] + lane[2 * j + 1];
      const double abs_sum = lane[0];
      const float scale = static_cast<float>(abs_sum / double(len));
      for (std::size_t i = off; i < off + len; ++i) {
        const float v = g[i] + residual[i];
        contribution[i] = v >= 0.f ? scale : -scale;
        expected_residual[i] = v - contribution[i];
      }
    }
    const std::vector<float> ref = mpi_sum(contribution);
    reducer.reduce(g.data());
    std::size_t bad_sum = 0, bad_residual = 0;
    for (std::size_t i = 0; i < c.n; ++i) {
      bad_sum += std::fabs(g[i] - ref[i]) > 1e-6 * (1 + std::fabs(ref[i]));
      bad_residual += reducer.residual()[i] != expected_residual[i];  // bit-exact
    }
    EXPECT_EQ(bad_sum, 0u) << "step " << step;
    EXPECT_EQ(bad_residual, 0u) << "step " << step;
    residual = expected_residual;
  }
  // During the warm start a 1-bit reducer sends plain fp32 and leaves the residual alone.
  std::vector<float> g = random_buffer(c.n, 30);
  const std::vector<float> ref = mpi_sum(g);
  reducer.reduce(g.data(), /*compress=*/false);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < c.n; ++i) bad += std::fabs(g[i] - ref[i]) > 1e-5;
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(reducer.residual(), residual);
}

// Polite waits (nonblocking calls, test and sleep) change how a rank waits, not what it computes:
// the same bits as the blocking calls for the own algorithms and 1-bit; MPI's nonblocking
// collectives (mpi, hierarchical's node reduce) may add in another order, so there the sums
// agree within the fp32 and fp16 tolerances of the tests above.
TEST_P(Reduce, PoliteWaitsGiveTheSameSums) {
  const Case c = GetParam();
  const bool own = c.algo == Algorithm::ring || c.algo == Algorithm::rabenseifner;
  const double p = world_size();
  for (GradDtype dtype : {GradDtype::fp32, GradDtype::fp16, GradDtype::one_bit}) {
    Communicator blocking(MPI_COMM_WORLD), polite(MPI_COMM_WORLD);
    polite.set_polite(true);
    GradientReducer a(blocking, c.n, c.algo, dtype, c.bucket_mb);
    GradientReducer b(polite, c.n, c.algo, dtype, c.bucket_mb);
    std::vector<float> x = random_buffer(c.n, 40), y = x;
    a.reduce(x.data());
    b.reduce(y.data());
    if (own || dtype == GradDtype::one_bit)
      EXPECT_EQ(x, y) << "dtype " << int(dtype);
    else
      expect_close_and_same_on_every_rank(
          y, x, dtype == GradDtype::fp32 ? 8 * p * p * 1.2e-7 : 2 * p * p * std::ldexp(1.0, -11));
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, Reduce, k_cases, case_name);

TEST(Communicator, AllgatherRingAndMpiAgree) {
  Communicator comm(MPI_COMM_WORLD);
  const int p = comm.size();
  for (std::size_t bytes : {std::size_t(1), std::size_t(13), std::size_t(100001)}) {
    std::vector<std::uint8_t> mine(bytes);
    for (std::size_t i = 0; i < bytes; ++i)
      mine[i] = static_cast<std::uint8_t>(i * 31 + comm.rank());
    std::vector<std::uint8_t> a(bytes * p), b(bytes * p);
    comm.allgather(mine.data(), bytes, a.data(), Algorithm::ring);
    comm.allgather(mine.data(), bytes, b.data(), Algorithm::mpi);
    EXPECT_EQ(a, b) << bytes;
    for (int r = 0; r < p; ++r) EXPECT_EQ(a[r * bytes], static_cast<std::uint8_t>(r)) << bytes;
  }
}

TEST(Communicator, HalfAllreduceMatchesFloatOnExactValues) {
  // Small integers are exact in half: every algorithm must give the exact sum.
  Communicator comm(MPI_COMM_WORLD);
  const std::size_t n = 1001;
  for (Algorithm a :
       {Algorithm::mpi, Algorithm::ring, Algorithm::rabenseifner, Algorithm::hierarchical}) {
    std::vector<float> f(n);
    for (std::size_t i = 0; i < n; ++i) f[i] = static_cast<float>(int(i % 17) - 8 + comm.rank());
    std::vector<std::uint16_t> h(n), scratch(n);
    float_to_half(f.data(), h.data(), n);
    comm.allreduce(h.data(), n, a, scratch.data());
    std::vector<float> back(n);
    half_to_float(h.data(), back.data(), n);
    const std::vector<float> ref = mpi_sum(f);
    EXPECT_EQ(back, ref) << name(a);
  }
}

}  // namespace
}  // namespace tune::trainer
