"""GPT-2 written in Tegula's DSL (``models/gpt``), run from Python.

The same C++ model as ``tegula-gpt``: every layer forward and backward as tile
kernels, fused AdamW, gradient clipping, a KV-cache generator and Hugging
Face-compatible safetensors checkpoints. Tokens and results are numpy arrays;
parameters and activations stay in the model (host memory for the interpreter
and the simulator, device memory on the GPU)::

    import numpy as np
    from tegula import gpt

    model = gpt.GPT(gpt.Config(n_layer=2, n_head=4, n_embd=128, vocab=512, n_ctx=64))
    model.init_random(seed=1)
    tokens = np.random.randint(0, 512, size=(2, 16))
    loss = model.forward(tokens[:, :-1], targets=tokens[:, 1:])
    model.zero_grad(); model.backward(); model.clip_grad_norm(1.0); model.step(lr=1e-3)

``GPT.from_pretrained(directory)`` loads a Hugging Face GPT-2 checkpoint
(``model.safetensors`` and ``config.json``). ``backend`` is "interp", "sim" or
"gpu" (default: ``$TEGULA_BACKEND``, else "interp"); on the CPU backends only
small configurations are practical (every GPU thread runs on the CPU).
"""
from __future__ import annotations

import operator
import os
from typing import Iterable, List, Mapping, NamedTuple, Optional, Sequence, Union

import numpy as np

from . import _tegula  # noqa: F401  (tegula.Error's translation)
from ._gpt import BpeTokenizer, Config, learning_rate
from . import _gpt

__all__ = ["GPT", "Config", "IncompatibleKeys", "Tokenizer", "learning_rate", "read_safetensors", "write_safetensors"]

PathLike = Union[str, "os.PathLike[str]"]


def read_safetensors(path: PathLike) -> dict:
    """Every tensor of a ``.safetensors`` file as a numpy array - F32, F16, BF16
    and F64 as float32, I32 and I64 as int32 (other types raise tegula.Error) -
    read and validated by Tegula's reader."""
    return _gpt.read_safetensors(os.fspath(path))


def write_safetensors(path: PathLike, tensors: Mapping[str, np.ndarray],
                      metadata: Optional[Mapping[str, str]] = None, dtype: str = "F32") -> None:
    """Writes ``tensors`` (name -> array of numbers) as ``dtype`` ("F32", "BF16" or
    "F16", rounded to nearest even), with string ``metadata``."""
    _gpt.write_safetensors(os.fspath(path), dict(tensors), dict(metadata or {}), dtype)


def _default_backend(backend: Optional[str]) -> str:
    return backend or os.environ.get("TEGULA_BACKEND") or "interp"


def _default_matmul(backend: str, matmul: Optional[str]) -> str:
    return matmul or ("tf32" if backend in ("gpu", "cuda") else "ieee")


class GPT:
    """GPT-2 for next-token prediction on one backend.

    ``dtype``: "float32", or "bfloat16" for mixed precision (bf16 weights and
    activations; f32 master weights, gradients and AdamW state). ``matmul``:
    the precision of f32 dots - "ieee" (exact), "tf32" (tensor cores, as
    torch's allow_tf32) or "tf32x3"; default "tf32" on the GPU, else "ieee".
    """

    def __init__(self, config: Optional[Config] = None, *, backend: Optional[str] = None,
                 dtype: str = "float32", matmul: Optional[str] = None):
        backend = _default_backend(backend)
        self._m = _gpt.Model(config if config is not None else Config(), backend, dtype,
                             _default_matmul(backend, matmul))

    @classmethod
    def from_pretrained(cls, path: PathLike, *, n_head: Optional[int] = None, backend: Optional[str] = None,
                        dtype: str = "float32", matmul: Optional[str] = None) -> "GPT":
        """A model loaded from a GPT-2 checkpoint with Hugging Face's names:
        ``path`` is a directory holding ``model.safetensors`` or the file
        itself. The layer count, width, vocabulary and context come from the
        tensors' shapes; the number of heads (not in the weights) from
        ``n_head``, else the file's metadata (what :meth:`save` writes), else
        Hugging Face's ``config.json`` beside the file."""
        path = os.fspath(path)
        file = os.path.join(path, "model.safetensors") if os.path.isdir(path) else path
        if not os.path.isfile(file):
            raise FileNotFoundError(f"{file}: no such checkpoint")
        config_json = os.path.join(os.path.dirname(file), "config.json")
        backend = _default_backend(backend)
        model = cls.__new__(cls)
        model._m = _gpt.Model.from_pretrained(file, n_head or 0, config_json, backend, dtype,
                                              _default_matmul(backend, matmul))
        return model

    # What the model is.
    @property
    def config(self) -> Config:
        return self._m.config

    @property
    def backend(self) -> str:
        return self._m.backend

    @property
    def dtype(self) -> str:
        return self._m.dtype

    @property
    def matmul(self) -> str:
        """The precision of f32 dots: "ieee", "tf32" or "tf32x3"."""
        return self._m.matmul

    @property
    def num_parameters(self) -> int:
        """Parameters (wte's padding rows included, the tied LM head once)."""
        return self._m.num_parameters

    def parameter_shapes(self) -> dict:
        """Parameter name (Hugging Face's, without "transformer.") -> shape, in the
        arena's order (wte as ``[vocab, n_embd]``: its padding rows stay inside)."""
        return self._m.parameter_shapes

    def __repr__(self) -> str:
        return f"<tegula.gpt.GPT {self.config!r}, {self.num_parameters:,} parameters, {self.dtype}, {self.backend}>"

    # Parameters and checkpoints.
    def init_random(self, seed: int = 0) -> None:
        """GPT-2's initialisation: normal(0, 0.02), residual projections scaled
        by 1/sqrt(2 n_layer), LayerNorm weights 1 and biases 0."""
        self._m.init_random(seed)

    def load(self, path: PathLike) -> None:
        """Sets every parameter from a safetensors checkpoint with Hugging Face's names."""
        self._m.load(os.fspath(path))

    def save(self, path: PathLike, metadata: Optional[Mapping[str, str]] = None) -> None:
        """Writes every parameter under Hugging Face's names (loadable by transformers)."""
        self._m.save(os.fspath(path), dict(metadata or {}))

    def save_optimizer(self, path: PathLike, metadata: Optional[Mapping[str, str]] = None) -> None:
        """Writes AdamW's state (each parameter's moments, the steps taken, the
        stochastic-rounding seed) as safetensors, so that training continues
        where it stopped: :meth:`save` the weights beside it, and
        :meth:`load` + :meth:`load_optimizer` them into a model of the same
        configuration. ``metadata`` (str -> str) is kept in the file."""
        self._m.save_optimizer(os.fspath(path), dict(metadata or {}))

    def load_optimizer(self, path: PathLike) -> dict:
        """Restores what :meth:`save_optimizer` wrote (a file of another
        configuration is a tegula.Error, and nothing changes); returns the file's
        metadata."""
        return self._m.load_optimizer(os.fspath(path))

    @property
    def optimizer_steps(self) -> int:
        """AdamW steps taken (bias correction counts them)."""
        return self._m.optimizer_steps

    def parameter(self, name: str) -> np.ndarray:
        """A copy of parameter ``name`` (float32, its shape; Conv1D weights [in, out])."""
        return self._m.parameter(name)

    def set_parameter(self, name: str, value: np.ndarray) -> None:
        self._m.set_parameter(name, value)

    def state_dict(self) -> dict:
        """Every parameter by name, as numpy arrays."""
        return {name: self.parameter(name) for name in self.parameter_shapes()}

    def load_state_dict(self, tensors: Mapping[str, object], strict: bool = True) -> "IncompatibleKeys":
        """Sets parameters from ``tensors`` (name -> numpy array, or a torch
        tensor of any dtype and device). Names are Tegula's (:meth:`state_dict`)
        or Hugging Face's as ``GPT2LMHeadModel.state_dict()`` gives them: the
        "transformer." prefix, the causal-mask buffers ``attn.bias`` and
        ``attn.masked_bias`` (skipped) and ``lm_head.weight``, which must equal
        ``wte.weight`` (the head is tied to it; an untied one is a ValueError).
        ``strict``: every parameter given and no other name, else KeyError
        naming them before anything is set. Returns the ``(missing_keys,
        unexpected_keys)`` - with ``strict=False`` the given parameters are
        set and those listed left as they were."""
        shapes = self.parameter_shapes()
        given: dict = {}
        unexpected = []
        lm_head = None
        for key, value in tensors.items():
            name = key[len("transformer."):] if key.startswith("transformer.") else key
            if name in given:
                raise ValueError(f"load_state_dict: '{name}' is given twice (with and without 'transformer.')")
            if name == "lm_head.weight":
                lm_head = (key, value)
            elif name in shapes:
                given[name] = value
            elif not _is_causal_mask_buffer(name):
                unexpected.append(key)
        missing = [n for n in shapes if n not in given]
        if strict and (missing or unexpected):
            problems = [f"{what} {', '.join(names[:5])}{' ...' if len(names) > 5 else ''}"
                        for what, names in (("missing", missing), ("unexpected", unexpected)) if names]
            raise KeyError(f"load_state_dict: {'; '.join(problems)} (strict=False sets the rest)")
        arrays = {name: _as_float32(value, name) for name, value in given.items()}
        for name, array in arrays.items():  # all checked before any is set
            if array.shape != tuple(shapes[name]):
                raise ValueError(f"load_state_dict: parameter '{name}' is {list(shapes[name])}, "
                                 f"got an array of shape {list(array.shape)}")
        if lm_head is not None:
            key, value = lm_head
            wte = arrays["wte.weight"] if "wte.weight" in arrays else self.parameter("wte.weight")
            head = _as_float32(value, key)
            if head.shape != wte.shape or not np.array_equal(head, wte):
                raise ValueError(f"load_state_dict: '{key}' differs from wte.weight; Tegula's GPT ties the LM head "
                                 "to the token embedding (tie_word_embeddings), so an untied head cannot be loaded")
        for name, value in arrays.items():
            self.set_parameter(name, value)
        return IncompatibleKeys(missing, unexpected)

    def gradient(self, name: str) -> np.ndarray:
        """The accumulated gradient of parameter ``name``."""
        return self._m.gradient(name)

    # Training.
    def forward(self, tokens, targets=None) -> Optional[float]:
        """Runs the model on token ids ``[B, T]`` (or ``[T]``); with ``targets``
        of the same shape returns the mean cross-entropy, else None. The
        logits stay in the model: :meth:`logits`."""
        loss = self._m.forward(tokens, targets)
        return None if targets is None else loss

    def __call__(self, tokens, targets=None):
        """``(logits, loss)`` as a torch module returns them."""
        loss = self.forward(tokens, targets)
        return self.logits(), loss

    def logits(self) -> np.ndarray:
        """The last forward's logits, ``[B, T, vocab]`` float32 - before
        :meth:`backward`, which writes their gradient over them."""
        return self._m.logits()

    def block_output(self, layer: int) -> np.ndarray:
        """The residual stream after block ``layer`` of the last forward, ``[B, T, n_embd]``."""
        return self._m.block_output(layer)

    def zero_grad(self) -> None:
        self._m.zero_grad()

    def backward(self) -> None:
        """Adds the gradients of the last forward's loss (it needs targets) to
        the accumulated ones: zero_grad() first, or not, to accumulate. Once
        per forward (it overwrites the logits with their gradient)."""
        self._m.backward()

    def clip_grad_norm(self, max_norm: float = 1.0) -> float:
        """The gradients' global L2 norm; above ``max_norm`` the next step scales them by max_norm / norm."""
        return self._m.clip_grad_norm(max_norm)

    def step(self, lr: float = 3e-4, betas: Sequence[float] = (0.9, 0.95), eps: float = 1e-8,
             weight_decay: float = 0.1, *, stochastic_rounding: bool = False) -> None:
        """One fused AdamW step (weight decay on matrices only, bias-corrected).
        ``stochastic_rounding``: with bf16 storage, round the f32 master weights
        into their bf16 copy stochastically (unbiased; deterministic for the
        model's seed and step) instead of to nearest even."""
        beta1, beta2 = betas
        self._m.step(lr, beta1, beta2, eps, weight_decay, stochastic_rounding)

    # Generation.
    def generate(self, prompt, max_new_tokens: int, *, temperature: float = 0.0, top_k: int = 0,
                 top_p: float = 1.0, seed: int = 1,
                 eos_token_id: Union[None, int, Sequence[int]] = None) -> np.ndarray:
        """Up to ``max_new_tokens`` tokens after ``prompt`` (one sequence of ids)
        with a KV cache: greedy at temperature 0, else sampled from
        softmax(logits / temperature) within the ``top_k`` most likely (0: all)
        and the smallest set reaching probability ``top_p``; generation ends
        after ``eos_token_id`` (a token id, or several) where given (GPT-2's
        <|endoftext|> is 50256), as Hugging Face's does. Returns the new
        tokens (int32), the end token included where it ended them."""
        ids = [] if eos_token_id is None else (
            [eos_token_id] if isinstance(eos_token_id, (int, np.integer)) else list(eos_token_id))
        for t in ids:
            if isinstance(t, bool) or not isinstance(t, (int, np.integer)):
                raise TypeError(f"eos_token_id takes token ids (ints), got {t!r}")
            if not 0 <= int(t) < self.config.vocab:
                raise ValueError(f"eos_token_id {int(t)} is not a token of the vocabulary [0, {self.config.vocab})")
        return self._m.generate(prompt, max_new_tokens, temperature, top_k, top_p, seed, [int(t) for t in ids])

    # Performance.
    def memory(self) -> dict:
        """Bytes allocated: parameters, gradients, optimizer, activations (and
        per layer), scratch, total, and the peak so far."""
        return self._m.memory()

    def training_flops_per_token(self, T: int) -> float:
        """6 N + 12 n_layer n_embd T: what MFU figures divide by."""
        return self._m.training_flops_per_token(T)

    def set_warp_specialize(self, on: bool) -> None:
        """sm_90a: producer warpgroups and persistent GEMMs (on by default)."""
        self._m.set_warp_specialize(on)

    def set_overlap_weight_gradients(self, on: bool) -> None:
        """GPU: the blocks' weight gradients on a stream of their own (on by default)."""
        self._m.set_overlap_weight_gradients(on)

    def set_stream_k_weight_gradients(self, on: bool) -> None:
        """The blocks' weight gradients as stream-K GEMMs, one program an SM
        (on by default; deterministic); off: one program a tile."""
        self._m.set_stream_k_weight_gradients(on)

    def override_tiles(self, overrides: str) -> str:
        """Sets tile sizes, warps and switches by name - "name=value,..."
        (e.g. ``"attention_fwd_block=64,attention_fwd_warps=4"``; the fields of
        GptModel::Tiles, docs/gpt.md) - and returns every field's value.
        ``"@tiles.txt"`` reads them from the file ``tegula-gpt tune --out``
        writes. Raises tegula.Error naming the fields for an unknown one."""
        return self._m.override_tiles(overrides)

    def use_tuned_tiles(self, batch: int, seq: int) -> str:
        """GPU only: the tiles ``tegula-gpt tune`` kept for this GPU, model,
        dtype, precision, warp specialisation and stream-K at ``batch`` x
        ``seq`` (``tegula-gpt train --tiles auto``; docs/gpt.md), every field;
        where none were kept, or they cannot be used, the tiles stay as they
        are. Returns what it found: the kept file and where it differs from
        the defaults, or the ``tegula-gpt tune`` command that would keep one.
        Raises tegula.Error on the CPU backends."""
        return self._m.use_tuned_tiles(batch, seq)

    def tiles(self) -> str:
        """Every tile field's value, "name=value,..."."""
        return self._m.tiles()


class IncompatibleKeys(NamedTuple):
    """What :meth:`GPT.load_state_dict` did not set, and the names it did not know."""
    missing_keys: List[str]
    unexpected_keys: List[str]


def _is_causal_mask_buffer(name: str) -> bool:
    """Hugging Face's GPT-2 attention buffers (h.N.attn.bias / masked_bias), not parameters."""
    parts = name.split(".")
    return len(parts) == 4 and parts[0] == "h" and parts[2] == "attn" and parts[3] in ("bias", "masked_bias")


def _as_float32(value, name: str) -> np.ndarray:
    """A parameter's value as a float32 numpy array; torch tensors (bf16, on a
    GPU, needing grad) converted as ``tensor.detach().float().cpu()``."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):
        value = value.detach().float().cpu().numpy()
    try:
        return np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise TypeError(f"parameter '{name}': expected an array of numbers, got {type(value).__name__}") from e


def _token_id(i) -> int:
    """A token id: an int (or numpy integer), never a float cut to one."""
    try:
        return operator.index(i)
    except TypeError:
        raise TypeError(f"token ids must be integers, got {type(i).__name__} {i!r}") from None


class Tokenizer:
    """Text to token ids: GPT-2's byte-level BPE (:meth:`gpt2`) or plain
    bytes (:meth:`bytes`, vocabulary 256)."""

    def __init__(self, bpe: Optional[BpeTokenizer]):
        self._bpe = bpe

    @classmethod
    def gpt2(cls, vocab_json: PathLike, merges_txt: PathLike) -> "Tokenizer":
        """GPT-2's tokenizer from its ``vocab.json`` and ``merges.txt``."""
        return cls(BpeTokenizer.load(os.fspath(vocab_json), os.fspath(merges_txt)))

    @classmethod
    def bytes(cls) -> "Tokenizer":
        """Each UTF-8 byte a token."""
        return cls(None)

    @property
    def vocab_size(self) -> int:
        return self._bpe.vocab_size if self._bpe else 256

    def encode(self, text: str) -> list:
        return self._bpe.encode(text) if self._bpe else _gpt.byte_encode(text)

    def decode(self, ids: Iterable[int], errors: str = "replace") -> str:
        """The text of ``ids``; bytes that are not UTF-8 (a cut multi-byte
        character) per ``errors``, as bytes.decode takes it."""
        ids = [_token_id(i) for i in ids]
        raw = self._bpe.decode(ids) if self._bpe else _gpt.byte_decode(ids)
        return raw.decode("utf-8", errors=errors)
