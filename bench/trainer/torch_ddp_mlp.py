#!/usr/bin/python3
"""The peer of tune-trainer: PyTorch DistributedDataParallel (gloo) training the same MLP
(784-1000-1000-10, ReLU, softmax cross-entropy, momentum SGD lr 0.05 / 0.9) on the same
Fashion-MNIST samples with the same per-rank batch. Launched by mpirun (rank and size come from
Open MPI's environment); rank 0 prints one JSON line. Timed like tune-trainer's --benchmark:
from a barrier after setup to a barrier after the last step, data loading excluded."""
import argparse
import gzip
import json
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel


def load(data_dir, n):
    with gzip.open(os.path.join(data_dir, "train-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784)[:n]
    with gzip.open(os.path.join(data_dir, "train-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)[:n]
    x = (images.astype(np.float32) / 255.0 - 0.2860) / 0.3530
    return torch.from_numpy(x), torch.from_numpy(labels.astype(np.int64))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--train-samples", type=int, default=12000)
    p.add_argument("--batch-size", type=int, default=100)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29511")
    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(1)
    x, y = load(a.data_dir, a.train_samples)
    model = DistributedDataParallel(
        nn.Sequential(nn.Linear(784, 1000), nn.ReLU(), nn.Linear(1000, 1000), nn.ReLU(), nn.Linear(1000, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    per_epoch = len(y) // (a.batch_size * world)
    dist.barrier()
    t0 = time.perf_counter()
    loss_sum = 0.0
    for epoch in range(a.epochs):
        perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(epoch))
        for b in range(per_epoch):
            first = (b * world + rank) * a.batch_size
            idx = perm[first:first + a.batch_size]
            loss = F.cross_entropy(model(x[idx]), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.item()
    dist.barrier()
    elapsed = time.perf_counter() - t0
    if rank == 0:
        samples = per_epoch * a.epochs * a.batch_size * world
        print(json.dumps({"samples_per_sec": samples / elapsed, "elapsed_time": elapsed,
                          "main/loss": loss_sum / (per_epoch * a.epochs), "torch": torch.__version__}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
