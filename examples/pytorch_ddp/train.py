#!/usr/bin/python3
"""A small PyTorch DistributedDataParallel job, the kind of script `tune init` is for.

An MLP (784-1000-1000-10) trained on Fashion-MNIST with DDP over gloo, one process per rank,
started by mpirun (rank and size come from Open MPI's environment; the rendezvous is
MASTER_ADDR=127.0.0.1 and a port). The images go through a torch DataLoader whose samples are
augmented in Python (a random shift and flip), so its workers have real work to do.

The CPU knobs are flags, and a flag that is absent leaves the library's own default:
  --threads N          torch.set_num_threads (the intra-op pool; default: torch's choice)
  --interop-threads N  torch.set_num_interop_threads (default: torch's choice)
  --workers N          DataLoader num_workers (default: 0, batches made in the training process)

Rank 0 prints the settings in effect and, at the end, one line
  samples/s: 5123.4 (12000 samples in 2.342 s, 1 epoch, loss 0.612)
timed from after setup to after the last step; the process's whole wall time is what
`objective: {wall_time: true}` scores instead.
"""
import argparse
import gzip
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

MEAN, STD = 0.2860, 0.3530  # of the Fashion-MNIST training images


def read_idx(path, header, count, item_bytes):
    """The first `count` items of a gzip'd IDX file, decompressing no more than they need."""
    with gzip.open(path) as f:
        data = f.read(header + count * item_bytes)
    return np.frombuffer(data, np.uint8, offset=header)


def load(data_dir, n):
    images = read_idx(os.path.join(data_dir, "train-images-idx3-ubyte.gz"), 16, n, 784)
    labels = read_idx(os.path.join(data_dir, "train-labels-idx1-ubyte.gz"), 8, n, 1)
    if len(labels) < n:
        sys.exit(f"train.py: {data_dir} holds {len(labels)} training images, fewer than {n}")
    return images.reshape(-1, 28, 28), labels.astype(np.int64)


class Augmented(Dataset):
    """Each sample shifted by up to 2 pixels and flipped at random, then normalised: per-sample
    Python work, as an image pipeline has."""

    def __init__(self, images, labels, seed):
        self.images, self.labels, self.seed = images, labels, seed

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        rng = np.random.default_rng(self.seed + i)
        dy, dx = rng.integers(-2, 3, size=2)
        img = np.roll(self.images[i], (dy, dx), axis=(0, 1))
        if rng.random() < 0.5:
            img = img[:, ::-1]
        x = (img.astype(np.float32).reshape(784) / 255.0 - MEAN) / STD
        return torch.from_numpy(x), self.labels[i]


def default_port():
    """One port per mpirun job: Open MPI gives every job its own id, so two jobs on one host
    (two tune workers, two tests) do not meet at one rendezvous."""
    job = int(os.environ.get("OMPI_MCA_ess_base_jobid", "0"))
    return 20000 + (job * 2654435761 % 2**32) % 30000


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--train-samples", type=int, default=12000)
    p.add_argument("--batch-size", type=int, default=100, help="per rank")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--threads", type=int, help="torch intra-op threads (default: torch's)")
    p.add_argument("--interop-threads", type=int, help="torch inter-op threads (default: torch's)")
    p.add_argument("--workers", type=int, help="DataLoader workers (default: DataLoader's, 0)")
    p.add_argument("--port", type=int, help="rendezvous port (default: MASTER_PORT, else one per mpirun job)")
    return p.parse_args()


def main():
    a = parse_args()
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    port = a.port or int(os.environ.get("MASTER_PORT", "0")) or default_port()
    os.environ["MASTER_PORT"] = str(port)
    # Before any parallel work: torch fixes its pools when it first uses them.
    if a.interop_threads is not None:
        torch.set_num_interop_threads(a.interop_threads)
    if a.threads is not None:
        torch.set_num_threads(a.threads)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(1)
    images, labels = load(a.data_dir, a.train_samples)
    data = Augmented(images, labels, seed=rank * 1_000_003)
    sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True, seed=1)
    loader_options = {} if a.workers is None else {"num_workers": a.workers}
    loader = DataLoader(data, batch_size=a.batch_size, sampler=sampler, drop_last=True,
                        **loader_options)
    if rank == 0:
        print(f"settings: {world} ranks, torch threads {torch.get_num_threads()}, interop "
              f"{torch.get_num_interop_threads()}, DataLoader workers {loader.num_workers}",
              flush=True)
    model = DistributedDataParallel(nn.Sequential(
        nn.Linear(784, 1000), nn.ReLU(), nn.Linear(1000, 1000), nn.ReLU(), nn.Linear(1000, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    dist.barrier()
    start = time.perf_counter()
    loss_sum, steps = 0.0, 0
    for epoch in range(a.epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.item()
            steps += 1
    dist.barrier()
    elapsed = time.perf_counter() - start
    if rank == 0:
        samples = steps * a.batch_size * world
        print(f"samples/s: {samples / elapsed:.1f} ({samples} samples in {elapsed:.3f} s, "
              f"{a.epochs} epoch{'s' if a.epochs != 1 else ''}, loss {loss_sum / max(steps, 1):.3f})",
              flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
