#!/usr/bin/env python3
"""Builds the Hugging Face parity fixture for Tegula's GPT-2 (models/gpt).

A small seeded random GPT-2 (2 layers, 4 heads, 128 dims, vocabulary 512,
context 64; dropout off) from PyPI's transformers, run by torch on the CPU in
float32. Writes, under --out (default: models/gpt/parity/fixture):

  model.safetensors   the parameters, as GPT2LMHeadModel.save_pretrained names
                      them ("transformer.h.0.attn.c_attn.weight", ...; Conv1D
                      weights [in, out]); the tied lm_head is not stored
  io.safetensors      tokens and targets [B, T] (I64), the residual stream after
                      each block but the last ("block.{i}", before ln_f), the
                      logits [B, T, V], the mean cross-entropy "loss" [1], and
                      greedy decoding: "greedy.prompt" (5 tokens) and the 12
                      tokens generate(do_sample=False) appends ("greedy.tokens"),
                      by the model with its 2-D parameters scaled by 10
  grads.safetensors   d loss / d parameter, HF names
  step.safetensors    the parameters after one torch.optim.AdamW step (lr 1e-3,
                      betas 0.9/0.95, eps 1e-8, weight decay 0.1 on 2-D tensors)

Regenerate (needs torch and transformers; CI does not install them):

  python3 -m venv /tmp/hf && /tmp/hf/bin/pip install torch transformers safetensors
  /tmp/hf/bin/python models/gpt/parity/make_fixture.py
"""
import argparse
import pathlib

import torch
from safetensors.torch import save_file
from transformers import GPT2Config, GPT2LMHeadModel

B, T = 2, 16


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(pathlib.Path(__file__).parent / "fixture"))
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    torch.manual_seed(1234)
    config = GPT2Config(n_layer=2, n_head=4, n_embd=128, vocab_size=512, n_positions=64,
                        activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0,
                        attn_pdrop=0.0, layer_norm_epsilon=1e-5,
                        bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(config).float().eval()
    params = {f"transformer.{k}": v.detach().clone().contiguous()
              for k, v in model.transformer.named_parameters()}
    save_file(params, str(out / "model.safetensors"), metadata={"format": "pt"})

    gen = torch.Generator().manual_seed(99)
    tokens = torch.randint(0, config.vocab_size, (B, T), generator=gen)
    targets = torch.randint(0, config.vocab_size, (B, T), generator=gen)
    result = model(tokens, output_hidden_states=True)
    logits = result.logits
    loss = torch.nn.functional.cross_entropy(logits.view(-1, config.vocab_size), targets.view(-1))
    io = {"tokens": tokens, "targets": targets, "logits": logits.detach().contiguous(),
          "loss": loss.detach().reshape(1)}
    # hidden_states: the embeddings, then each block's output - except that
    # the last one has ln_f applied.
    for i in range(config.n_layer - 1):
        io[f"block.{i}"] = result.hidden_states[i + 1].detach().contiguous()
    # Greedy decoding: 12 new tokens after the first 5 of the batch's first
    # row, by the same model with its matrices (2-D parameters) scaled by 10 -
    # at GPT-2's initial scale a random model repeats one token.
    with torch.no_grad():
        sharp = GPT2LMHeadModel(config).float().eval()
        for name, p in sharp.transformer.named_parameters():
            p.copy_(params[f"transformer.{name}"] * (10.0 if p.dim() >= 2 else 1.0))
        prompt = tokens[:1, :5]
        greedy = sharp.generate(prompt, max_new_tokens=12, do_sample=False, pad_token_id=0,
                                attention_mask=torch.ones_like(prompt))
    io["greedy.prompt"] = prompt[0].clone()
    io["greedy.tokens"] = greedy[0, 5:].clone()
    save_file(io, str(out / "io.safetensors"))

    loss.backward()
    grads = {f"transformer.{k}": v.grad.detach().clone().contiguous()
             for k, v in model.transformer.named_parameters()}
    save_file(grads, str(out / "grads.safetensors"))

    decay = [p for p in model.transformer.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.transformer.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    opt.step()
    stepped = {f"transformer.{k}": v.detach().clone().contiguous()
               for k, v in model.transformer.named_parameters()}
    save_file(stepped, str(out / "step.safetensors"))
    print(f"wrote {out}: loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
