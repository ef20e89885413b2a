#!/usr/bin/python3
"""A PyTorch DDP job whose DataLoader workers augment images with OpenCV: the kind of program
where every library's "one thread per core" default meets several ranks per node.

A small convolutional net trained with DDP over gloo, one process per rank, started by mpirun
(rank and size from Open MPI's environment; rendezvous at 127.0.0.1, one port per mpirun job).
Each sample is a Fashion-MNIST image enlarged to 160x160 and augmented with OpenCV (a random
rotation and scale with cv2.warpAffine, a Gaussian and a median blur, a brightness change, a reduction to 32x32) in the DataLoader's
workers, or in the training process itself with --workers 0. Debian's OpenCV runs its parallel
loops on TBB, one thread per core, in every process that calls it, and has no knob for that
pool but cv2.setNumThreads (--cv-threads).

  --threads N     torch.set_num_threads (intra-op pool; default: torch's)
  --workers N     DataLoader num_workers (default: 2)
  --cv-threads N  cv2.setNumThreads in every process that augments (default: OpenCV's)

Rank 0 prints, at the end, one line
  img/s: 812.3 (4096 images in 5.043 s, loss 1.234)
timed from after the first 4 steps to after the last.
"""
import argparse
import gzip
import os
import sys
import time

import cv2
import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

SIZE = 160  # augmented at this size
INPUT = 32  # the net's input


def load(data_dir, n):
    with gzip.open(os.path.join(data_dir, "train-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(16 + n * 784), np.uint8, offset=16)
    with gzip.open(os.path.join(data_dir, "train-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(8 + n), np.uint8, offset=8)
    if len(labels) < n:
        sys.exit(f"train.py: {data_dir} holds {len(labels)} training images, fewer than {n}")
    return images.reshape(-1, 28, 28), labels.astype(np.int64)


class Augmented(Dataset):
    def __init__(self, images, labels, seed, cv_threads):
        self.images, self.labels, self.seed, self.cv_threads = images, labels, seed, cv_threads

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        rng = np.random.default_rng(self.seed + i)
        img = cv2.resize(self.images[i], (SIZE, SIZE), interpolation=cv2.INTER_LINEAR)
        m = cv2.getRotationMatrix2D((SIZE / 2, SIZE / 2), rng.uniform(-15, 15),
                                    rng.uniform(0.9, 1.1))
        img = cv2.warpAffine(img, m, (SIZE, SIZE), borderMode=cv2.BORDER_REFLECT)
        img = cv2.GaussianBlur(img, (7, 7), rng.uniform(0.3, 1.2))
        img = cv2.medianBlur(img, 5)
        img = cv2.convertScaleAbs(img, alpha=rng.uniform(0.8, 1.2), beta=rng.uniform(-10, 10))
        img = cv2.resize(img, (INPUT, INPUT), interpolation=cv2.INTER_AREA)
        x = (img.astype(np.float32) / 255.0 - 0.29) / 0.35
        return torch.from_numpy(x).unsqueeze(0), self.labels[i]


def worker_init(cv_threads):
    if cv_threads is not None:
        cv2.setNumThreads(cv_threads)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 8, 3, padding=1)
        self.fc1 = nn.Linear(8 * 16 * 16, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--images", type=int, default=4096, help="per epoch, all ranks together")
    p.add_argument("--batch-size", type=int, default=32, help="per rank")
    p.add_argument("--threads", type=int, help="torch intra-op threads (default: torch's own)")
    p.add_argument("--workers", type=int, default=os.cpu_count(),
                   help="DataLoader worker processes (default: one per CPU, %(default)s here)")
    p.add_argument("--cv-threads", type=int, help="OpenCV threads in each worker")
    a = p.parse_args()
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    job = int(os.environ.get("OMPI_MCA_ess_base_jobid", "0"))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(20000 + (job * 2654435761 % 2**32) % 30000))
    if a.threads is not None:
        torch.set_num_threads(a.threads)
    worker_init(a.cv_threads)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(1)
    images, labels = load(a.data_dir, a.images)
    data = Augmented(images, labels, rank * 1_000_003, a.cv_threads)
    sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True, seed=1)
    loader = DataLoader(data, batch_size=a.batch_size, sampler=sampler, drop_last=True,
                        num_workers=a.workers, worker_init_fn=lambda _: worker_init(a.cv_threads),
                        persistent_workers=False)
    model = DistributedDataParallel(Net())
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    warm, steps, loss_sum, start = 4, 0, 0.0, None
    for x, y in loader:
        if steps == warm:
            start = time.perf_counter()
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss_sum += loss.item()
        steps += 1
    dist.barrier()
    elapsed = time.perf_counter() - start
    if rank == 0:
        n = (steps - warm) * a.batch_size * world
        print(f"img/s: {n / elapsed:.1f} ({n} images in {elapsed:.3f} s, "
              f"loss {loss_sum / max(steps, 1):.3f})", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
