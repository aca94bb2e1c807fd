#!/usr/bin/env python3
"""torch_gpu_baseline.py: PyTorch's training step on one GPU, the baseline of the in-situ step
(bench_gpu insitu; issue 33): the 784-512-512-10 MLP (ReLU, cross-entropy, batch 128) and the
3-32-32-1 surrogate (tanh, MSE, batch 120), SGD lr 1e-3 momentum 0.9, inputs already on the
device. Each step returns its loss to the host (loss.item()), as hpct_insitu_step does.
  eager: zero_grad, forward, loss, backward, optimizer step, loss.item()
  graph: the same step captured once with torch.cuda.graph (after warm-up steps on a side
         stream, as PyTorch's documentation does it) and replayed, then loss.item()
Prints "TORCH name ms_eager ms_graph" per model (ms a step, mean over REPS after warm-up),
for bench/gpu_validate.sh. --device cpu runs the eager step only (a smoke test; graph -1).

    python3 bench/torch_gpu_baseline.py [--reps N] [--device cuda|cpu]
"""
import argparse
import time

import torch


def model_of(name):
    """The network and its loss for a case name."""
    if name.startswith("mlp"):
        net = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(),
                                  torch.nn.Linear(512, 512), torch.nn.ReLU(),
                                  torch.nn.Linear(512, 10))
        return net, torch.nn.CrossEntropyLoss(), 784, 128
    net = torch.nn.Sequential(torch.nn.Linear(3, 32), torch.nn.Tanh(), torch.nn.Linear(32, 32),
                              torch.nn.Tanh(), torch.nn.Linear(32, 1))
    return net, torch.nn.MSELoss(), 3, 120


def batch_of(name, inputs, batch, dev):
    """Static inputs and targets on the device (the in-situ caller's arrays)."""
    x = torch.rand(batch, inputs, device=dev)
    if name.startswith("mlp"):
        return x, torch.arange(batch, device=dev) % 10
    return x, torch.rand(batch, 1, device=dev)


def sync(dev):
    if dev == "cuda":
        torch.cuda.synchronize()


def time_eager(name, reps, dev):
    """ms a step of the eager step."""
    net, crit, inputs, batch = model_of(name)
    net.to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=1e-3, momentum=0.9)
    x, t = batch_of(name, inputs, batch, dev)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = crit(net(x), t)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(20):
        step()
    sync(dev)
    t0 = time.perf_counter()
    for _ in range(reps):
        step()
    sync(dev)
    return (time.perf_counter() - t0) / reps * 1e3


def time_graph(name, reps):
    """ms a step of the step captured as one CUDA graph and replayed."""
    net, crit, inputs, batch = model_of(name)
    net.cuda()
    opt = torch.optim.SGD(net.parameters(), lr=1e-3, momentum=0.9)
    x, t = batch_of(name, inputs, batch, "cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up: makes the momentum buffers before the capture
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            crit(net(x), t).backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        loss = crit(net(x), t)
        loss.backward()
        opt.step()
    for _ in range(20):
        graph.replay()
        loss.item()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        graph.replay()
        loss.item()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / reps * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=500)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    a = ap.parse_args()
    if a.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("torch_gpu_baseline: torch.cuda is not available")
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 products, as the library's cuBLAS calls
    print(f"# torch {torch.__version__}, device {a.device}"
          + (f" ({torch.cuda.get_device_name(0)})" if a.device == "cuda" else ""))
    for name in ("mlp_b128", "surrogate_b120"):
        eager = time_eager(name, a.reps, a.device)
        graph = time_graph(name, a.reps) if a.device == "cuda" else -1.0
        print(f"TORCH {name} {eager:.4f} {graph:.4f}", flush=True)


if __name__ == "__main__":
    main()
