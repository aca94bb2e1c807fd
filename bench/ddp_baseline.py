#!/usr/bin/python3
"""ddp_baseline.py: the PyTorch DistributedDataParallel (gloo) side of bench/bench_train.

Same model, initialisation scheme and settings as bench_train.c: Fashion-MNIST, 784-512-512-10 ReLU MLP, softmax
cross-entropy, SGD lr 0.05 momentum 0.9, global batch 256 split over W ranks, fp32,
torch.set_num_threads(1) per rank, data in memory, 1 epoch, same shuffling rule (one
permutation per epoch, each rank takes its contiguous slice of every global batch).

    /usr/bin/python3 bench/ddp_baseline.py W [DIR]
"""
import gzip
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

GLOBAL_BATCH = 256


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, n = struct.unpack(">II", data[:8])
    if magic == 2051:
        rows, cols = struct.unpack(">II", data[8:16])
        return np.frombuffer(data, np.uint8, offset=16).reshape(n, rows * cols)
    return np.frombuffer(data, np.uint8, offset=8)


def load(directory, images, labels):
    x = torch.from_numpy(read_idx(os.path.join(directory, images)).astype(np.float32) / 255.0)
    y = torch.from_numpy(read_idx(os.path.join(directory, labels)).astype(np.int64))
    return x, y


def init_like_hpctrain(model):
    """HPCT_INIT_AUTO: He normal before ReLU, Xavier uniform on the output layer, zero biases."""
    layers = [m for m in model if isinstance(m, nn.Linear)]
    with torch.no_grad():
        for i, layer in enumerate(layers):
            if i < len(layers) - 1:
                nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")
            else:
                nn.init.xavier_uniform_(layer.weight)
            nn.init.zeros_(layer.bias)


def worker(rank, world, directory, port, out):
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    x, y = load(directory, "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")
    tx, ty = load(directory, "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
    torch.manual_seed(42)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10))
    init_like_hpctrain(model)
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    local = GLOBAL_BATCH // world
    perm = torch.randperm(x.shape[0], generator=torch.Generator().manual_seed(2024))
    steps = x.shape[0] // GLOBAL_BATCH
    dist.barrier()
    t0 = time.perf_counter()
    for s in range(steps):
        idx = perm[s * GLOBAL_BATCH + rank * local:s * GLOBAL_BATCH + (rank + 1) * local]
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(ddp(x[idx]), y[idx])
        loss.backward()
        opt.step()
    dist.barrier()
    elapsed = time.perf_counter() - t0
    if rank == 0:
        with torch.no_grad():
            acc = (model(tx).argmax(1) == ty).float().mean().item()
        out.put((steps * GLOBAL_BATCH / elapsed, elapsed, acc))
    dist.destroy_process_group()


def main():
    world = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    directory = sys.argv[2] if len(sys.argv) > 2 else "/usr/share/datasets/fashion-mnist"
    port = 29500 + os.getpid() % 1000
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, world, directory, port, out)) for r in range(world)]
    for p in procs:
        p.start()
    rate, elapsed, acc = out.get(timeout=600)
    for p in procs:
        p.join()
    print("pytorch-ddp W=%d gloo    samples/s %8.0f  epoch %.2f s  test accuracy %.4f"
          % (world, rate, elapsed, acc))


if __name__ == "__main__":
    main()
