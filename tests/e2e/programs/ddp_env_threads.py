#!/usr/bin/python3
# A PyTorch DDP job written unlike examples/pytorch_ddp, for `tune init`'s probe run
# (tests/e2e/init_probe_e2e_test.cpp): its imports on one line, no thread flag (the intra-op pool
# is whatever OMP_NUM_THREADS says, else torch's own choice), rank and size taken from Open MPI's
# environment. A small MLP on random data, a few steps; rank 0 prints one progress line per step
# and a final result line "samples/s: N".
import os, sys, time, numpy as np, torch
import torch.distributed as dist

rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
size = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
os.environ.setdefault("RANK", str(rank))
os.environ.setdefault("WORLD_SIZE", str(size))
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
# One port per mpirun job, so two jobs on one host do not meet at one rendezvous.
job = int(os.environ.get("OMPI_MCA_ess_base_jobid", "0"))
os.environ.setdefault("MASTER_PORT", str(20000 + (job * 2654435761 % 2**32) % 30000))
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
batch = 64

dist.init_process_group("gloo")
torch.manual_seed(rank)
model = torch.nn.parallel.DistributedDataParallel(
    torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
rng = np.random.default_rng(rank)
x = torch.from_numpy(rng.standard_normal((batch, 256), dtype=np.float32))
y = torch.from_numpy(rng.integers(0, 10, batch))
start = time.perf_counter()
for step in range(steps):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    if rank == 0:
        print(f"step {step + 1}/{steps} loss {loss.item():.4f}", flush=True)
elapsed = time.perf_counter() - start
if rank == 0:
    print(f"samples/s: {steps * batch * size / elapsed:.1f}", flush=True)
dist.destroy_process_group()
