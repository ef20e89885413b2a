#!/usr/bin/python3
# A PyTorch DDP job written unlike examples/pytorch_ddp, as users write them: imports on one
# line, no flags, the thread count from the environment (OMP_NUM_THREADS, read by torch itself),
# rank and size from Open MPI's environment, gloo over loopback. Trains a small MLP on random
# data for a fixed number of steps and prints "samples/s: X" at the end (rank 0).
import os, sys, time, numpy as np, torch

import torch.distributed as dist

rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
size = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
steps = int(os.environ.get("DDP_ENV_STEPS", "60"))
batch = 100
job = int(os.environ.get("OMPI_MCA_ess_base_jobid", "0"))
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", str(20000 + (job * 2654435761 % 2**32) % 30000))
dist.init_process_group("gloo", rank=rank, world_size=size)

torch.manual_seed(1)
rng = np.random.default_rng(rank)
x = torch.from_numpy(rng.standard_normal((batch * 8, 784), dtype=np.float32))
y = torch.from_numpy(rng.integers(0, 10, batch * 8))
model = torch.nn.parallel.DistributedDataParallel(
    torch.nn.Sequential(torch.nn.Linear(784, 1000), torch.nn.ReLU(), torch.nn.Linear(1000, 1000),
                        torch.nn.ReLU(), torch.nn.Linear(1000, 10)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = torch.nn.CrossEntropyLoss()

def step(i):
    j = (i % 8) * batch
    opt.zero_grad()
    loss = loss_fn(model(x[j:j + batch]), y[j:j + batch])
    loss.backward()
    opt.step()
    return loss.item()

for i in range(3):  # warm-up
    step(i)
dist.barrier()
start = time.perf_counter()
for i in range(steps):
    loss = step(i)
elapsed = time.perf_counter() - start
if rank == 0:
    print(f"threads: {torch.get_num_threads()} (OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')})")
    print(f"samples/s: {steps * batch * size / elapsed:.1f} ({steps} steps in {elapsed:.3f} s, loss {loss:.3f})")
dist.destroy_process_group()
