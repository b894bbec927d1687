#!/usr/bin/env python3
"""GPT-2 124M training steps from Python (tegula.gpt) on the GPU: the C++
model behind numpy arrays, at the batch and sequence length of
benchmarks/gpt2_train.cpp (gpt2-train), so the two figures of one GPU session
compare (the Python calls add a few per step). Prints "skipped: ..." and
exits 0 without tegula or a GPU.

    PYTHONPATH=build/python python3 benchmarks/gpt2_train.py [--batch 8] [--seq 1024] [--steps 10]
"""
import argparse
import sys
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"])
    args = parser.parse_args()
    try:
        import numpy as np
        import tegula
        from tegula import gpt
    except ImportError as e:
        print(f"skipped: the tegula package does not import here ({e})")
        return 0
    ok, why = tegula.gpu_available()
    if not ok:
        print(f"skipped: no GPU: {why}")
        return 0
    B, T = args.batch, args.seq
    model = gpt.GPT(gpt.Config(), backend="gpu", dtype=args.dtype)
    model.init_random(seed=1)
    rng = np.random.default_rng(1)
    tokens = rng.integers(0, 50257, size=(B, T + 1), dtype=np.int32)

    def step():
        loss = model.forward(tokens[:, :-1], tokens[:, 1:])  # returns after the loss is read back
        model.zero_grad()
        model.backward()
        model.clip_grad_norm(1.0)  # reads the norm back: the step's kernels have run
        model.step(lr=3e-4)
        return loss

    for i in range(2):  # compile, load, allocate
        print(f"warm-up step {i + 1}: loss {step():.4f}")
    start = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    model.parameter("ln_f.bias")  # a small read back: waits for the last step's AdamW
    seconds = (time.perf_counter() - start) / args.steps
    memory = model.memory()
    print(f"# {args.steps} steps of B {B} x T {T}, {args.dtype}, last loss {loss:.4f}, "
          f"peak {memory['peak'] / 2**30:.2f} GiB")
    tag = "bf16" if args.dtype == "bfloat16" else "f32"
    print(f"gpt2_python_train_{tag} ms per step {seconds * 1e3:.2f}")
    print(f"gpt2_python_train_{tag} tokens/s {B * T / seconds:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
