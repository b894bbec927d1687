#!/usr/bin/env python3
"""Builds the BPE tokenizer fixture for Tegula's GPT-2 tokenizer
(models/gpt/Tokenizer): a small byte-level BPE in GPT-2's format (vocab.json +
merges.txt), trained by Hugging Face's `tokenizers` on a fixed corpus, and the
ids Hugging Face's tokenizers gives a set of test strings (cases.json) - its
ByteLevel pre-tokenizer is GPT-2's regex and byte-to-unicode map, its BPE GPT-2's
merges by rank: the algorithm of GPT2Tokenizer.

    python3 -m venv /tmp/hf && /tmp/hf/bin/pip install tokenizers
    /tmp/hf/bin/python models/gpt/tokenizer/make_fixture.py
"""
import json
import pathlib

import tokenizers
from tokenizers import ByteLevelBPETokenizer

HERE = pathlib.Path(__file__).parent / "fixture"
CORPUS = [
    "The quick brown fox jumps over the lazy dog. It's 2026, and we'll train GPT-2 in C++!",
    "Tegula compiles tile programs: program_id, arange, load, store, dot and reductions.",
    "Numbers like 3.14159, 42 and 1,000,000 appear; so do   multiple   spaces\nand new lines.",
    "Café, naïve, résumé, Zürich — über 100 € — 東京 and Москва are words too.",
    "They've said I'd go, you're sure they'll see what it's like; don't they?",
] * 20
CASES = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "It's 2026, and we'll train GPT-2 in C++!",
    "multiple   spaces  here \n\n and\ttabs",
    "trailing spaces   ",
    "Café naïve résumé — 東京 Москва 42€",
    "They've I'd you're they'll it's don't DON'T",
    "numbers 3.14159 1,000,000 007",
    "emoji 🙂 and symbols @#$%^&*()",
    "",
]


def main():
    HERE.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(CORPUS, vocab_size=420, min_frequency=2, special_tokens=["<|endoftext|>"])
    bpe.save_model(str(HERE))
    gpt2 = ByteLevelBPETokenizer(str(HERE / "vocab.json"), str(HERE / "merges.txt"))
    cases = []
    for t in CASES:
        ids = gpt2.encode(t).ids
        assert gpt2.decode(ids) == t, t
        cases.append({"text": t, "ids": ids})
    (HERE / "cases.json").write_text(json.dumps(cases, ensure_ascii=False, indent=1) + "\n")
    print(f"wrote {HERE}: {gpt2.get_vocab_size()} tokens, {len(cases)} cases (tokenizers {tokenizers.__version__})")


if __name__ == "__main__":
    main()
