#!/usr/bin/python3
"""cnn_baseline.py: the PyTorch side of bench/run_cnn_bench.sh.

The model, initialisation scheme and settings of examples/fashion-mnist-cnn.conf: Fashion-MNIST,
conv 32 (3x3, same) ReLU, max pool 2, conv 64 (3x3, same) ReLU, max pool 2, dense 128 ReLU,
dense 10, softmax cross-entropy, SGD lr 0.05 momentum 0.9 with a per-step cosine schedule to 0,
global batch 128 split over W ranks (DistributedDataParallel with gloo at W > 1), fp32,
torch.set_num_threads(1) per rank, data in memory, one permutation per epoch (each rank takes
its contiguous slice of every global batch). Prints samples/s over the training steps only and
the test accuracy after the last epoch.

    /usr/bin/python3 bench/cnn_baseline.py W EPOCHS [DIR [SEED]]

SEED (default 42) seeds the initialisation; epoch e's permutation is seeded with 2024 + e for
seed 42 (the speed runs) and with 1000 SEED + e otherwise.
"""
import math
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

import ddp_baseline  # same directory: its IDX reader

GLOBAL_BATCH = 128
LR = 0.05


def load(directory, images, labels):
    """ddp_baseline.py's arrays, the images as [n, 1, side, side] (square, as Fashion-MNIST's)."""
    x, y = ddp_baseline.load(directory, images, labels)
    side = int(round(x.shape[1] ** 0.5))
    return x.reshape(-1, 1, side, side), y


def make_model():
    """Layers and HPCT_INIT_AUTO: He normal (fan in) before ReLU, Xavier uniform on the output
    layer, zero biases."""
    model = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
    layers = [m for m in model if isinstance(m, (nn.Conv2d, nn.Linear))]
    with torch.no_grad():
        for i, layer in enumerate(layers):
            if i < len(layers) - 1:
                nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")
            else:
                nn.init.xavier_uniform_(layer.weight)
            nn.init.zeros_(layer.bias)
    return model


def worker(rank, world, epochs, directory, port, out, seed):
    torch.set_num_threads(1)
    if world > 1:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(port)
        dist.init_process_group("gloo", rank=rank, world_size=world)
    x, y = load(directory, "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")
    tx, ty = load(directory, "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
    torch.manual_seed(seed)
    perm_base = 2024 if seed == 42 else 1000 * seed
    model = make_model()
    net = nn.parallel.DistributedDataParallel(model) if world > 1 else model
    opt = torch.optim.SGD(net.parameters(), lr=LR, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    local = GLOBAL_BATCH // world
    steps = x.shape[0] // GLOBAL_BATCH
    total = steps * epochs
    if world > 1:
        dist.barrier()
    elapsed = 0.0
    for e in range(epochs):
        perm = torch.randperm(x.shape[0], generator=torch.Generator().manual_seed(perm_base + e))
        t0 = time.perf_counter()
        for s in range(steps):
            step = e * steps + s
            for g in opt.param_groups:  # cosine from LR to 0 over the run
                g["lr"] = 0.5 * LR * (1.0 + math.cos(math.pi * step / total))
            idx = perm[s * GLOBAL_BATCH + rank * local:s * GLOBAL_BATCH + (rank + 1) * local]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(net(x[idx]), y[idx])
            loss.backward()
            opt.step()
        if world > 1:
            dist.barrier()
        elapsed += time.perf_counter() - t0
    if rank == 0:
        with torch.no_grad():
            acc = sum((model(tx[i:i + 1000]).argmax(1) == ty[i:i + 1000]).sum().item()
                      for i in range(0, tx.shape[0], 1000)) / tx.shape[0]
        out.put((total * GLOBAL_BATCH / elapsed, elapsed, acc))
    if world > 1:
        dist.destroy_process_group()


def main():
    world = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    directory = sys.argv[3] if len(sys.argv) > 3 else "/usr/share/datasets/fashion-mnist"
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 42
    port = 29500 + os.getpid() % 1000
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, world, epochs, directory, port, out, seed))
             for r in range(world)]
    for p in procs:
        p.start()
    rate, elapsed, acc = out.get(timeout=3600)
    for p in procs:
        p.join()
    print("pytorch W=%d %s  samples/s %8.0f  train %.1f s  test accuracy %.4f"
          % (world, "ddp-gloo" if world > 1 else "single  ", rate, elapsed, acc))


if __name__ == "__main__":
    main()
