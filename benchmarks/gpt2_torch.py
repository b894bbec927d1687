#!/usr/bin/env python3
"""torch's figure for benchmarks/gpt2-train: GPT-2 124M training steps
(forward, backward, gradient clipping, fused AdamW) at the same batch and
sequence length, in the two precisions Tegula's model runs: f32 with TF32
matmuls, and bf16 autocast (f32 master weights, as nanoGPT trains) - eager
and torch.compile'd, in the same GPU session. A compact GPT-2 is written out here
(no transformers needed). Prints "skipped: ..." without torch or a GPU.

    python3 benchmarks/gpt2_torch.py [--batch 8] [--seq 1024] [--steps 10]
"""
import argparse
import math
import sys
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    try:
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
    except ImportError as e:
        print(f"skipped: torch is not importable ({e})")
        return 0
    if not torch.cuda.is_available():
        print("skipped: torch sees no CUDA device")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    C, H, L, V, Vp = 768, 12, 12, 50257, 50304

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
            self.c_attn, self.c_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
            self.c_fc, self.mlp_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

        def forward(self, x):
            B, T, _ = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
            return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(Vp, C), nn.Embedding(1024, C)
            self.h = nn.ModuleList(Block() for _ in range(L))
            self.ln_f = nn.LayerNorm(C)

        def forward(self, idx, targets):
            x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
            for block in self.h:
                x = block(x)
            logits = self.ln_f(x) @ self.wte.weight.T
            return F.cross_entropy(logits[..., :V].reshape(-1, V), targets.view(-1))

    B, T = args.batch, args.seq
    print(f"# torch {torch.__version__}: GPT-2 124M, B={B} T={T}, f32 + TF32 matmuls and bf16 autocast, "
          f"fused AdamW, {args.steps} timed steps")
    for precision, mode in [(p, m) for p in ("f32", "bf16") for m in ("eager", "compile")]:
        torch.manual_seed(1)
        model = GPT().cuda()
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True)
        run = model
        if mode == "compile":
            try:
                run = torch.compile(model)
            except Exception as e:  # noqa: BLE001 - report and go on
                print(f"{precision} compile: not available ({e})")
                continue
        idx = torch.randint(0, V, (B, T), device="cuda")
        tgt = torch.randint(0, V, (B, T), device="cuda")

        def step():
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16"):
                loss = run(idx, tgt)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            return loss

        try:
            for _ in range(3):
                step()
            torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(args.steps):
                step()
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001
            print(f"{precision} {mode}: failed ({e})")
            continue
        s = (time.perf_counter() - start) / args.steps
        print(f"gpt2_124m_train_torch_{precision}_{mode}_tokens_per_s {B * T / s:.0f}")
        print(f"{precision} {mode}: {s * 1e3:.1f} ms per step, "
              f"peak memory {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB")
        del model, opt
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    return 0


if __name__ == "__main__":
    sys.exit(main())
