#!/usr/bin/python3
# A PyTorch DDP job that would train for an hour, for the window objective's end-to-end test
# (tests/e2e/window_e2e_test.cpp) and benchmark (bench/tuner/window_bench.py): an MLP on random
# data for --steps steps (default: 150,000, about an hour here), rank 0 printing a progress line
# ("step N/TOTAL loss X": the total tells `tune init` the job runs on past its probe)
# every 5 steps ("step N loss X", flushed), as training scripts do. No thread flag: the intra-op
# pool is whatever OMP_NUM_THREADS says, else torch's own choice. Rank and size come from Open
# MPI's environment; gloo over loopback. With --steps small it is the "full run" the benchmark
# measures: after the last step rank 0 prints "samples/s: N" over the steps after the first 10.
import os, sys, time, numpy as np, torch
import torch.distributed as dist

rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
size = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
job = int(os.environ.get("OMPI_MCA_ess_base_jobid", "0"))
os.environ.setdefault("MASTER_PORT", str(20000 + (job * 2654435761 % 2**32) % 30000))
steps = 150_000
if "--steps" in sys.argv:
    steps = int(sys.argv[sys.argv.index("--steps") + 1])
batch = 100

dist.init_process_group("gloo", rank=rank, world_size=size)
torch.manual_seed(1)
rng = np.random.default_rng(rank)
x = torch.from_numpy(rng.standard_normal((batch * 8, 784), dtype=np.float32))
y = torch.from_numpy(rng.integers(0, 10, batch * 8))
model = torch.nn.parallel.DistributedDataParallel(
    torch.nn.Sequential(torch.nn.Linear(784, 1000), torch.nn.ReLU(), torch.nn.Linear(1000, 1000),
                        torch.nn.ReLU(), torch.nn.Linear(1000, 10)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
if rank == 0:
    print(f"settings: {size} ranks, torch threads {torch.get_num_threads()}", flush=True)
start = None
for i in range(steps):
    if i == 10:
        start = time.perf_counter()
    j = (i % 8) * batch
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x[j:j + batch]), y[j:j + batch])
    loss.backward()
    opt.step()
    if rank == 0 and (i + 1) % 5 == 0:
        print(f"step {i + 1}/{steps} loss {loss.item():.4f}", flush=True)
if rank == 0 and start is not None:
    elapsed = time.perf_counter() - start
    print(f"samples/s: {(steps - 10) * batch * size / elapsed:.1f}", flush=True)
dist.destroy_process_group()
