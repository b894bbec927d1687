#!/usr/bin/env python3
"""Loads a checkpoint Tegula wrote (GptModel::save, `tegula-gpt train --save`)
into Hugging Face's GPT2LMHeadModel - strictly: every tensor present, every
shape right - and prints HF's greedy continuation of a byte-level prompt, to
compare with `tegula-gpt generate --temperature 0` on the same checkpoint.

    /tmp/hf/bin/python models/gpt/parity/check_hf_loads_tegula.py model.safetensors \\
        --layers 1 --heads 2 --embd 32 --ctx 64 --prompt "the quick" --tokens 20
"""
import argparse

import torch
from safetensors.torch import load_file
from transformers import GPT2Config, GPT2LMHeadModel


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--layers", type=int, required=True)
    parser.add_argument("--heads", type=int, required=True)
    parser.add_argument("--embd", type=int, required=True)
    parser.add_argument("--ctx", type=int, default=64)
    parser.add_argument("--vocab", type=int, default=256)
    parser.add_argument("--prompt", required=True)
    parser.add_argument("--tokens", type=int, default=20)
    args = parser.parse_args()
    config = GPT2Config(n_layer=args.layers, n_head=args.heads, n_embd=args.embd, vocab_size=args.vocab,
                        n_positions=args.ctx, activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0,
                        attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(config).eval()
    state = {f"transformer.{k}": v for k, v in load_file(args.checkpoint).items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if m != "lm_head.weight"]  # tied to wte
    assert not missing and not unexpected, (missing, unexpected)
    model.tie_weights()
    prompt = torch.tensor([list(args.prompt.encode())])
    with torch.no_grad():
        out = model.generate(prompt, max_new_tokens=args.tokens, do_sample=False, pad_token_id=0,
                             attention_mask=torch.ones_like(prompt))
    print(bytes(out[0].tolist()).decode(errors="replace"))


if __name__ == "__main__":
    main()
