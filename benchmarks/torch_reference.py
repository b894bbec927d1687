#!/usr/bin/env python3
"""torch's figures for the shapes of benchmarks/gemm and benchmarks/attention,
measured the same way (CUDA events, median) in the same GPU session, so that
Tegula's numbers can be read as ratios. Run by scripts/gpu-check.sh when torch
is importable; prints "skipped: ..." and exits 0 otherwise.

    python3 benchmarks/torch_reference.py [--iters 10]
"""
import argparse
import statistics
import sys


def median_ms(torch, fn, iters, warmup=3):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=10)
    args = parser.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print(f"skipped: torch is not importable ({e})")
        return 0
    if not torch.cuda.is_available():
        print("skipped: torch sees no CUDA device")
        return 0
    print(f"# torch {torch.__version__} on {torch.cuda.get_device_name()}: "
          f"median of {args.iters} (CUDA events)")
    # Attention: torch SDPA (flash backend where available), [B, H, T, d].
    for heads, seq, dim, causal in [(96, 1024, 64, True), (96, 1024, 64, False), (32, 4096, 64, True),
                                    (32, 4096, 128, True), (16, 8192, 128, True), (16, 8192, 128, False)]:
        q, k, v = (torch.randn(1, heads, seq, dim, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        ms = median_ms(torch, lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), args.iters)
        flops = 4.0 * heads * seq * seq * dim * (0.5 if causal else 1.0)
        name = f"torch_sdpa_bh{heads}_t{seq}_d{dim}{'_causal' if causal else ''}"
        print(f"{name} {ms:.3f} ms {flops / ms / 1e9:.1f}")
    # GPT-2 124M's attention (benchmarks/gpt2-attention): B=8, 12 heads,
    # T=1024, d=64, causal, bf16 - forward, and backward alone (the gradient
    # of sum(o * do) through SDPA, the forward's saved state reused).
    q, k, v = (torch.randn(8, 12, 1024, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
               for _ in range(3))
    fwd_flops = 2.0 * 8 * 12 * 1024 * 1024 * 64
    ms = median_ms(torch, lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), args.iters)
    print(f"torch_sdpa_gpt2_fwd_bf16_b8 {ms:.3f} ms {fwd_flops / ms / 1e9:.1f}")
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    grad = torch.randn_like(out)
    ms = median_ms(torch, lambda: torch.autograd.grad(out, (q, k, v), grad, retain_graph=True), args.iters)
    print(f"torch_sdpa_gpt2_bwd_bf16_b8 {ms:.3f} ms {2.5 * fwd_flops / ms / 1e9:.1f}")
    # GEMM: torch.matmul (cuBLAS underneath) at the gemm benchmark's shapes.
    for m, n, k in [(4096, 4096, 4096), (8192, 8192, 8192), (8192, 2304, 768), (8192, 768, 3072)]:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        ms = median_ms(torch, lambda: a @ b, args.iters)
        print(f"torch_matmul_bf16_{m}x{n}x{k} {ms:.3f} ms {2.0 * m * n * k / ms / 1e9:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
