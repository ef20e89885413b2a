"""An mpi4py + NumPy job whose time is in OpenBLAS: each rank multiplies 384x384 matrices for
--seconds, the ranks sum their counts with an allreduce, and rank 0 prints the job's figure,
`gflops: X`. Used by tests/e2e/init_e2e_test.cpp (the kernel knob of issue 47)."""
import argparse
import time

import numpy as np
from mpi4py import MPI

parser = argparse.ArgumentParser()
parser.add_argument("--seconds", type=float, default=3.0)
args = parser.parse_args()

comm = MPI.COMM_WORLD
n = 384
rng = np.random.default_rng(comm.Get_rank())
a = rng.standard_normal((n, n))
b = rng.standard_normal((n, n))
a @ b  # warm-up: OpenBLAS starts its pool
comm.Barrier()
start = time.perf_counter()
done = 0
while time.perf_counter() - start < args.seconds:
    a @ b
    done += 1
elapsed = time.perf_counter() - start
total = comm.allreduce(done * 2.0 * n**3, op=MPI.SUM)
longest = comm.allreduce(elapsed, op=MPI.MAX)
if comm.Get_rank() == 0:
    print(f"gflops: {total / longest / 1e9:.2f}", flush=True)
