"""An mpi4py + PyTorch job whose time is in oneDNN's convolutions: each rank trains a small
convolutional net on random 32x32 images (forward, backward, SGD step) for --seconds, the ranks
average their gradients with an allreduce every step, and rank 0 prints the job's figure,
`img/s: X`. Used by tests/e2e/kernel_e2e_test.cpp (issue 47's oneDNN kernel knob) and
bench/grids/torchconv. The ranks stop together: each step's allreduce carries a stop flag, set by
a rank whose time is up, so no rank waits in an allreduce its peer has left (a rank that decided
alone to take one more step hung both until the trial's time limit)."""
import argparse
import time

import numpy as np
import torch
from mpi4py import MPI

parser = argparse.ArgumentParser()
parser.add_argument("--seconds", type=float, default=3.0)
parser.add_argument("--batch", type=int, default=32)
args = parser.parse_args()

comm = MPI.COMM_WORLD
torch.manual_seed(comm.Get_rank())
net = torch.nn.Sequential(
    torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(),
    torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(),
    torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(64, 10))
opt = torch.optim.SGD(net.parameters(), lr=0.01)
x = torch.randn(args.batch, 3, 32, 32)
y = torch.randint(0, 10, (args.batch,))
loss_fn = torch.nn.CrossEntropyLoss()
params = list(net.parameters())


def step(stop):
    """One training step; whether any rank asked to stop (`stop`: this rank's time is up)."""
    opt.zero_grad()
    loss_fn(net(x), y).backward()
    flat = torch.cat([p.grad.reshape(-1) for p in params] + [torch.tensor([float(stop)])])
    flat = flat.numpy()
    total = np.empty_like(flat)
    comm.Allreduce(flat, total, op=MPI.SUM)
    offset = 0
    for p in params:
        n = p.grad.numel()
        p.grad.copy_(torch.from_numpy(total[offset:offset + n]).reshape(p.grad.shape))
        offset += n
    opt.step()
    return total[-1] > 0


step(False)  # warm-up: oneDNN builds its kernels
comm.Barrier()
start = time.perf_counter()
done = 0
stopped = False
while not stopped:
    stopped = step(time.perf_counter() - start >= args.seconds)
    done += 1
elapsed = time.perf_counter() - start
images = comm.allreduce(done * args.batch, op=MPI.SUM)
longest = comm.allreduce(elapsed, op=MPI.MAX)
if comm.Get_rank() == 0:
    print(f"img/s: {images / longest:.1f}", flush=True)
