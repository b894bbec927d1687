"""tegula.gpt: GPT-2 (models/gpt) from Python against Hugging Face's run of the
committed fixture (models/gpt/parity/make_fixture.py: a seeded random 2-layer
model), training, generation, checkpoints, tokenizers and the errors."""
import json
import math
import os
import shutil

import numpy as np
import pytest

import tegula
from tegula import gpt

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURE = os.path.join(ROOT, "models", "gpt", "parity", "fixture")
TOKENIZER = os.path.join(ROOT, "models", "gpt", "tokenizer", "fixture")


def fixture(name):
    return gpt.read_safetensors(os.path.join(FIXTURE, name + ".safetensors"))


def fixture_config():
    return gpt.Config(n_layer=2, n_head=4, n_embd=128, vocab=512, n_ctx=64)


def rel_error(got, want):
    assert not np.isnan(got).any(), "NaN in the result"
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


@pytest.fixture(scope="module")
def io():
    return fixture("io")


@pytest.mark.parametrize("backend", ["interp", "sim"])
def test_forward_matches_hugging_face(io, backend):
    model = gpt.GPT.from_pretrained(os.path.join(FIXTURE, "model.safetensors"), n_head=4, backend=backend)
    assert model.config.n_layer == 2 and model.config.n_embd == 128 and model.config.vocab == 512
    assert model.backend == backend
    loss = model.forward(io["tokens"], targets=io["targets"])
    err = rel_error(model.block_output(0), io["block.0"])
    print(f"[gpt] {backend}: block.0 rel {err:.2e}, loss {loss:.6f} vs Hugging Face {io['loss'][0]:.6f}")
    assert err < 1e-5
    assert model.logits().shape == io["logits"].shape
    assert rel_error(model.logits(), io["logits"]) < 1e-5
    assert loss == pytest.approx(float(io["loss"][0]), rel=1e-5)


def test_gradients_and_one_adamw_step_match_hugging_face(io):
    grads, stepped = fixture("grads"), fixture("step")
    model = gpt.GPT.from_pretrained(os.path.join(FIXTURE, "model.safetensors"), n_head=4)
    model.forward(io["tokens"], io["targets"])
    model.zero_grad()
    model.backward()
    ours = {name: model.gradient(name) for name in model.parameter_shapes()}
    for name, g in ours.items():
        assert rel_error(g, grads["transformer." + name]) < 2e-5, name
    # The weight gradients one program a tile instead of stream-K (the
    # default): the same gradients up to the order of the additions.
    model.set_stream_k_weight_gradients(False)
    model.forward(io["tokens"], io["targets"])
    model.zero_grad()
    model.backward()
    for name, g in ours.items():
        assert rel_error(model.gradient(name), g) < 1e-6, name
    # Other attention tiles by name: the same gradients up to rounding.
    own = model.tiles()
    assert "attention_bwd_block=32," in model.override_tiles("attention_bwd_block=32,attention_bwd_step=16")
    model.forward(io["tokens"], io["targets"])
    model.zero_grad()
    model.backward()
    for name, g in ours.items():
        assert rel_error(model.gradient(name), g) < 1e-5, name
    with pytest.raises(tegula.Error, match="no field 'attention_block'"):
        model.override_tiles("attention_block=32")
    assert model.override_tiles(own) == own
    model.set_stream_k_weight_gradients(True)
    model.forward(io["tokens"], io["targets"])
    model.zero_grad()
    model.backward()
    model.step(lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    for name, g in ours.items():
        want, theirs = stepped["transformer." + name], grads["transformer." + name]
        # AdamW's first step moves by lr * g / (|g| + eps): where |g| ~ 0 that
        # is rounding noise on both sides (see test/gpt/ParityTest.cpp).
        noise = (np.maximum(np.abs(g), np.abs(theirs)) < 1e-6) & ~((g == 0) & (theirs == 0))
        worst = np.abs(model.parameter(name) - want)[~noise].max(initial=0.0)
        assert worst < 2e-6, name


def test_bf16_forward_stays_close_to_hugging_face(io):
    model = gpt.GPT.from_pretrained(os.path.join(FIXTURE, "model.safetensors"), n_head=4, dtype="bfloat16")
    assert model.dtype == "bfloat16"
    loss = model.forward(io["tokens"], io["targets"])
    assert rel_error(model.logits(), io["logits"]) < 1.5e-2
    assert loss == pytest.approx(float(io["loss"][0]), rel=2e-3)
    # A step with the bf16 copy rounded stochastically learns this batch as
    # well as one rounded to nearest (within a percent of its loss).
    model.backward()
    model.step(lr=1e-4, stochastic_rounding=True)
    stochastic = model.forward(io["tokens"], io["targets"])
    nearest = gpt.GPT.from_pretrained(os.path.join(FIXTURE, "model.safetensors"), n_head=4, dtype="bfloat16")
    nearest.forward(io["tokens"], io["targets"])
    nearest.backward()
    nearest.step(lr=1e-4)
    nearest_loss = nearest.forward(io["tokens"], io["targets"])
    assert stochastic < loss
    assert stochastic == pytest.approx(nearest_loss, rel=1e-2)
    assert stochastic != nearest_loss  # the copies were rounded differently


def test_greedy_generation_matches_hugging_face(io):
    model = gpt.GPT.from_pretrained(os.path.join(FIXTURE, "model.safetensors"), n_head=4)
    for name, shape in model.parameter_shapes().items():  # as make_fixture.py scales them
        if len(shape) >= 2:
            model.set_parameter(name, model.parameter(name) * 10)
    new = model.generate(io["greedy.prompt"], len(io["greedy.tokens"]))
    assert new.dtype == np.int32
    np.testing.assert_array_equal(new, io["greedy.tokens"])
    # Sampling is seeded: the same seed, the same tokens.
    a = model.generate([1, 2, 3], 8, temperature=0.8, top_k=40, top_p=0.9, seed=5)
    b = model.generate([1, 2, 3], 8, temperature=0.8, top_k=40, top_p=0.9, seed=5)
    np.testing.assert_array_equal(a, b)
    assert ((a >= 0) & (a < 512)).all()


def test_from_pretrained_reads_config_json_and_save_load_is_bit_exact(tmp_path, rng):
    directory = tmp_path / "hf"
    directory.mkdir()
    shutil.copy(os.path.join(FIXTURE, "model.safetensors"), directory / "model.safetensors")
    (directory / "config.json").write_text(json.dumps({"n_head": 4, "n_layer": 2, "n_embd": 128}))
    model = gpt.GPT.from_pretrained(directory)
    assert model.config.n_head == 4
    model.set_parameter("ln_f.bias", rng.standard_normal(128).astype(np.float32))
    model.save(tmp_path / "saved.safetensors", metadata={"step": "7"})
    again = gpt.GPT(fixture_config())
    again.load(tmp_path / "saved.safetensors")
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(again.parameter(name), value, err_msg=name)
    # Tegula's checkpoints name their heads in the metadata.
    assert gpt.GPT.from_pretrained(tmp_path / "saved.safetensors").config.n_head == 4
    third = gpt.GPT(fixture_config())
    third.load_state_dict(model.state_dict())
    np.testing.assert_array_equal(third.parameter("h.1.mlp.c_fc.weight"), model.parameter("h.1.mlp.c_fc.weight"))
    # The file is a safetensors file with Hugging Face's names.
    tensors = gpt.read_safetensors(tmp_path / "saved.safetensors")
    assert tensors["ln_f.bias"].shape == (128,) and tensors["wte.weight"].shape == (512, 128)


def test_loss_falls_training_on_a_repetitive_corpus():
    text = "the quick brown fox jumps over the lazy dog. " * 40
    tokenizer = gpt.Tokenizer.bytes()
    data = np.array(tokenizer.encode(text), dtype=np.int32)
    model = gpt.GPT(gpt.Config(n_layer=2, n_head=2, n_embd=64, vocab=tokenizer.vocab_size, n_ctx=32))
    model.init_random(seed=3)
    B, T, steps = 4, 32, 25
    losses = []
    for step in range(steps):
        starts = (np.arange(B) * 37 + step * 11) % (len(data) - T - 1)
        batch = np.stack([data[s:s + T + 1] for s in starts])
        loss = model.forward(batch[:, :-1], batch[:, 1:])
        model.zero_grad()
        model.backward()
        norm = model.clip_grad_norm(1.0)
        assert math.isfinite(norm) and norm > 0
        model.step(lr=gpt.learning_rate(step=step, warmup=3, total=steps, max_lr=3e-3, min_lr=3e-4))
        losses.append(loss)
    print(f"[gpt] loss {losses[0]:.3f} -> {losses[-1]:.3f} in {steps} steps")
    assert losses[0] == pytest.approx(math.log(256), rel=0.1)
    assert losses[-1] < 0.6 * losses[0]
    memory = model.memory()
    assert memory["total"] == (memory["parameters"] + memory["gradients"] + memory["optimizer"]
                               + memory["activations"] + memory["scratch"])
    assert memory["optimizer"] == 2 * memory["gradients"] and memory["peak"] >= memory["total"]


def _train_steps(model, data, steps, first=0):
    for step in range(first, first + steps):
        starts = (np.arange(2) * 13 + step * 5) % (len(data) - 17)
        batch = np.stack([data[s:s + 17] for s in starts])
        model.forward(batch[:, :-1], batch[:, 1:])
        model.zero_grad()
        model.backward()
        model.clip_grad_norm(1.0)
        model.step(lr=1e-2)


def test_training_resumes_exactly_from_the_saved_optimizer_state(tmp_path):
    data = np.array(gpt.Tokenizer.bytes().encode("resume me, please. " * 20), dtype=np.int32)
    config = gpt.Config(n_layer=1, n_head=2, n_embd=32, vocab=256, n_ctx=16)
    first = gpt.GPT(config)
    first.init_random(seed=4)
    _train_steps(first, data, 2)
    first.save(tmp_path / "m.safetensors")
    first.save_optimizer(tmp_path / "m.state.safetensors", metadata={"step": "2"})
    resumed = gpt.GPT(config)
    resumed.load(tmp_path / "m.safetensors")
    assert resumed.load_optimizer(tmp_path / "m.state.safetensors")["step"] == "2"
    assert resumed.optimizer_steps == 2
    _train_steps(first, data, 2, first=2)
    _train_steps(resumed, data, 2, first=2)
    for name, value in first.state_dict().items():
        np.testing.assert_array_equal(resumed.parameter(name), value, err_msg=name)
    other = gpt.GPT(gpt.Config(n_layer=2, n_head=2, n_embd=32, vocab=256, n_ctx=16))
    with pytest.raises(tegula.Error, match="saved for n_layer 1, this model has 2"):
        other.load_optimizer(tmp_path / "m.state.safetensors")
    assert other.optimizer_steps == 0


def test_generation_ends_at_the_eos_token():
    # Every logit 0 but token 7's: ln_f's output is its bias (1s) and wte's
    # row 7 alone is not zero, so greedy decoding picks 7 at every step.
    model = gpt.GPT(gpt.Config(n_layer=1, n_head=2, n_embd=32, vocab=64, n_ctx=16))
    for name, shape in model.parameter_shapes().items():
        value = np.zeros(shape, np.float32)
        if name == "ln_f.bias":
            value[:] = 1
        if name == "wte.weight":
            value[7] = 1
        model.set_parameter(name, value)
    np.testing.assert_array_equal(model.generate([1, 2], 4), [7, 7, 7, 7])
    np.testing.assert_array_equal(model.generate([1, 2], 4, eos_token_id=7), [7])
    np.testing.assert_array_equal(model.generate([1, 2], 4, eos_token_id=[3, 7]), [7])  # several, as HF's
    assert model.memory()["gradients"] == 0  # generating allocates none
    for bad in (64, 10**12, -1):
        with pytest.raises(ValueError, match=f"eos_token_id {bad} is not a token of the vocabulary \\[0, 64\\)"):
            model.generate([1, 2], 4, eos_token_id=bad)
    with pytest.raises(TypeError, match="eos_token_id takes token ids"):
        model.generate([1, 2], 4, eos_token_id="7")


def test_wte_without_its_padding_rows_and_safetensors_round_trip(tmp_path, rng):
    # vocab 300 pads to 384 inside the model; Python, checkpoints and Hugging
    # Face see [300, n_embd].
    model = gpt.GPT(gpt.Config(n_layer=1, n_head=2, n_embd=64, vocab=300, n_ctx=16), matmul="ieee")
    assert model.config.vocab_padded == 384 and model.matmul == "ieee"
    model.init_random(seed=4)
    assert model.parameter_shapes()["wte.weight"] == (300, 64)
    wte = rng.standard_normal((300, 64)).astype(np.float32)
    model.set_parameter("wte.weight", wte)
    np.testing.assert_array_equal(model.parameter("wte.weight"), wte)
    model.save(tmp_path / "m.safetensors")
    other = gpt.GPT(model.config)
    other.load_state_dict(gpt.read_safetensors(tmp_path / "m.safetensors"))
    np.testing.assert_array_equal(other.parameter("wte.weight"), wte)
    tokens = [[1, 299, 5, 7]]
    logits, _ = model(tokens)
    assert logits.shape == (1, 4, 300)
    np.testing.assert_array_equal(other(tokens)[0], logits)
    model.forward(tokens, [[299, 5, 7, 1]])
    model.zero_grad()
    model.backward()
    assert model.gradient("wte.weight").shape == (300, 64)
    with pytest.raises(KeyError, match="missing"):
        other.load_state_dict({"wte.weight": wte})
    # write_safetensors: bf16 rounds to nearest even, f32 is exact.
    x = rng.standard_normal((3, 5)).astype(np.float32)
    gpt.write_safetensors(tmp_path / "t.safetensors", {"x": x}, metadata={"k": "v"}, dtype="BF16")
    back = gpt.read_safetensors(tmp_path / "t.safetensors")["x"]
    assert back.shape == (3, 5) and np.abs(back - x).max() <= np.abs(x).max() * 2**-8
    gpt.write_safetensors(tmp_path / "t.safetensors", {"x": x})
    np.testing.assert_array_equal(gpt.read_safetensors(tmp_path / "t.safetensors")["x"], x)


class _TorchLikeBf16:
    """Enough of a torch tensor (detach / float / cpu / numpy) for load_state_dict:
    numpy has no bf16, so such a tensor must be converted through torch."""

    def __init__(self, values):
        self._values = values

    def detach(self):
        return self

    def float(self):
        return self

    def cpu(self):
        return self

    def numpy(self):
        return self._values

    def __array__(self, *args, **kwargs):
        raise TypeError("Got unsupported ScalarType BFloat16")


def test_load_state_dict_takes_hugging_face_state_dicts_and_is_strict(rng):
    config = gpt.Config(n_layer=2, n_head=2, n_embd=32, vocab=64, n_ctx=16)
    source = gpt.GPT(config)
    source.init_random(seed=7)
    ours = source.state_dict()
    # As GPT2LMHeadModel.state_dict() has it: prefixed, the mask buffers, the tied head.
    hf = {"transformer." + name: value for name, value in ours.items()}
    for layer in range(2):
        hf[f"transformer.h.{layer}.attn.bias"] = np.tril(np.ones((1, 1, 16, 16), np.float32))
        hf[f"transformer.h.{layer}.attn.masked_bias"] = np.array(-1e4, np.float32)
    hf["lm_head.weight"] = ours["wte.weight"]
    hf["transformer.ln_f.weight"] = _TorchLikeBf16(ours["ln_f.weight"])
    model = gpt.GPT(config)
    assert model.load_state_dict(hf) == gpt.IncompatibleKeys([], [])
    for name, value in ours.items():
        np.testing.assert_array_equal(model.parameter(name), value, err_msg=name)
    tokens = [[1, 5, 9, 63]]
    np.testing.assert_array_equal(model(tokens)[0], source(tokens)[0])

    # strict: nothing is set when a name is missing or unknown, and each is named.
    fresh = gpt.GPT(config)
    with pytest.raises(KeyError, match=r"missing h\.1\.mlp\.c_proj\.bias; unexpected h\.1\.mlp\.c_proj\.biass"):
        fresh.load_state_dict({**{k: v for k, v in ours.items() if k != "h.1.mlp.c_proj.bias"},
                               "h.1.mlp.c_proj.biass": ours["h.1.mlp.c_proj.bias"]})
    with pytest.raises(tegula.Error, match="were never set"):
        fresh.forward(tokens)
    # Not strict: the given ones are set, the rest reported.
    keys = fresh.load_state_dict({"wte.weight": ours["wte.weight"], "extra": np.zeros(2)}, strict=False)
    assert keys.unexpected_keys == ["extra"] and "wte.weight" not in keys.missing_keys
    assert len(keys.missing_keys) == len(ours) - 1
    np.testing.assert_array_equal(fresh.parameter("wte.weight"), ours["wte.weight"])

    # What cannot be loaded is refused before anything moves.
    untied = dict(hf, **{"lm_head.weight": ours["wte.weight"] + 1})
    with pytest.raises(ValueError, match="'lm_head.weight' differs from wte.weight"):
        gpt.GPT(config).load_state_dict(untied)
    with pytest.raises(ValueError, match=r"parameter 'wpe\.weight' is \[16, 32\], got an array of shape \[8, 32\]"):
        gpt.GPT(config).load_state_dict(dict(ours, **{"wpe.weight": ours["wpe.weight"][:8]}))
    with pytest.raises(ValueError, match="'wte.weight' is given twice"):
        gpt.GPT(config).load_state_dict(dict(ours, **{"transformer.wte.weight": ours["wte.weight"]}))
    with pytest.raises(TypeError, match="parameter 'ln_f.bias': expected an array of numbers, got object"):
        gpt.GPT(config).load_state_dict(dict(ours, **{"ln_f.bias": object()}))


def test_a_model_nobody_initialised_refuses_to_run():
    # It ran on zeros before: a loss of exactly ln(vocab), plausible and wrong.
    model = gpt.GPT(gpt.Config(n_layer=1, n_head=2, n_embd=32, vocab=64, n_ctx=16))
    with pytest.raises(tegula.Error, match=r"GPT forward: \d+ of the model's \d+ parameters were never set "
                                           r"\(wte\.weight, wpe\.weight, h\.0\.ln_1\.weight, \.\.\.\): "
                                           r"call init_random\(seed\), load a checkpoint"):
        model.forward([[1, 2, 3]], [[2, 3, 4]])
    with pytest.raises(tegula.Error, match="GPT generate: .* never set"):
        model.generate([1, 2], 3)
    model.init_random(seed=1)
    assert math.isfinite(model.forward([[1, 2, 3]], [[2, 3, 4]]))


def test_learning_rate_schedule():
    assert gpt.learning_rate(step=0, warmup=10, total=100, max_lr=1.0, min_lr=0.1) == pytest.approx(0.1)
    assert gpt.learning_rate(step=9, warmup=10, total=100, max_lr=1.0, min_lr=0.1) == pytest.approx(1.0)
    assert gpt.learning_rate(step=100, warmup=10, total=100, max_lr=1.0, min_lr=0.1) == pytest.approx(0.1)


def test_tokenizers_round_trip():
    t = gpt.Tokenizer.bytes()
    assert t.encode("héllo") == list("héllo".encode())
    assert t.decode(t.encode("héllo")) == "héllo"
    assert t.decode([0xC3]) == "\ufffd"  # half a character
    assert t.decode(np.array([104, 105])) == "hi"  # numpy integers are ids
    with pytest.raises(TypeError, match="token ids must be integers, got float 1.7"):
        t.decode([104, 1.7])  # not cut to 1
    bpe = gpt.Tokenizer.gpt2(os.path.join(TOKENIZER, "vocab.json"), os.path.join(TOKENIZER, "merges.txt"))
    assert bpe.vocab_size == 420
    with open(os.path.join(TOKENIZER, "cases.json")) as f:
        cases = json.load(f)
    for case in cases:
        assert bpe.encode(case["text"]) == case["ids"], case["text"]
        assert bpe.decode(case["ids"]) == case["text"]


def test_each_error_names_the_problem(tmp_path, io):
    model = gpt.GPT(fixture_config())
    model.init_random(1)
    with pytest.raises(TypeError, match="token ids must be integers"):
        model.forward(np.zeros((1, 4), dtype=np.float32))
    with pytest.raises(tegula.Error, match="token 512 is outside the vocabulary"):
        model.forward([[1, 2, 512]])
    with pytest.raises(ValueError, match="not a vocabulary index"):
        model.forward([[1, -2]])
    with pytest.raises(ValueError, match="token id 9223372036854775808 at flat index 1 is not"):
        model.forward(np.array([[1, 2**63]], dtype=np.uint64))  # not negative
    with pytest.raises(ValueError, match="must match"):
        model.forward(np.zeros((2, 4), dtype=np.int64), np.zeros((2, 3), dtype=np.int64))
    with pytest.raises(tegula.Error, match="n_ctx"):
        model.forward(np.zeros((1, 65), dtype=np.int32))
    with pytest.raises(tegula.Error, match="backward: run forward"):
        model.forward([[1, 2, 3]])
        model.backward()
    model.forward([[1, 2, 3]], [[2, 3, 4]])
    model.backward()
    with pytest.raises(tegula.Error, match="once per forward"):
        model.backward()
    with pytest.raises(tegula.Error, match=r"logits\(\) after backward\(\)"):
        model.logits()
    with pytest.raises(tegula.Error, match="no parameter 'h.9.attn.c_attn.weight'"):
        model.parameter("h.9.attn.c_attn.weight")
    with pytest.raises(ValueError, match=r"parameter 'ln_f.bias' is \[128\], got an array of shape \[3\]"):
        model.set_parameter("ln_f.bias", np.zeros(3))
    with pytest.raises(ValueError, match="dtype is 'float32' or 'bfloat16'"):
        gpt.GPT(fixture_config(), dtype="float16")
    with pytest.raises(tegula.Error, match="unknown backend 'tpu'"):
        gpt.GPT(fixture_config(), backend="tpu")
    with pytest.raises(tegula.Error, match="n_embd"):
        gpt.Config(n_layer=2, n_head=3, n_embd=128, vocab=512)
    # Tiles from a file, as tegula-gpt tune writes it.
    tiles = tmp_path / "tiles.txt"
    tiles.write_text("# tuned\nln_fwd_rows=2  # rows\nrow_warps=1\n")
    assert "row_warps=1," in model.override_tiles(f"@{tiles}")
    assert "ln_fwd_rows=2," in model.tiles()
    with pytest.raises(tegula.Error, match="cannot read the tiles file"):
        model.override_tiles(f"@{tmp_path / 'none.txt'}")
    with pytest.raises(tegula.Error, match="number of heads is not in the weights"):
        gpt.GPT.from_pretrained(os.path.join(FIXTURE, "model.safetensors"))
    with pytest.raises(FileNotFoundError):
        gpt.GPT.from_pretrained(tmp_path / "missing")
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}")
    with pytest.raises(tegula.Error, match="bad.safetensors"):
        model.load(bad)
    with pytest.raises(tegula.Error, match="prompt is empty"):
        model.generate([], 3)
    # Sampling and optimizer settings that used to pass silently: greedy
    # decoding for a negative or NaN temperature, every parameter NaN after
    # a step at a NaN learning rate, clipping that flipped the update.
    for kwargs, message in [(dict(temperature=-1.0), "temperature is 0 .greedy. or a positive number, not -1"),
                            (dict(temperature=float("nan")), "temperature"),
                            (dict(temperature=1.0, top_k=-5), "top_k is 0 .all tokens. or a positive count"),
                            (dict(temperature=1.0, top_p=0.0), r"top_p is in \(0, 1\], not 0"),
                            (dict(temperature=1.0, top_p=2.0), "top_p is in"),
                            (dict(temperature=1.0, top_p=float("nan")), "top_p is in")]:
        with pytest.raises(tegula.Error, match=message):
            model.generate([1], 3, **kwargs)
    before = model.parameter("ln_f.weight").copy()
    for kwargs, message in [(dict(lr=float("nan")), "learning rate is 0 or more, not nan"),
                            (dict(lr=-1.0), "learning rate is 0 or more"),
                            (dict(betas=(1.0, 1.0)), r"betas are in \[0, 1\)"),
                            (dict(weight_decay=-0.1), "eps and weight_decay are 0 or more")]:
        with pytest.raises(tegula.Error, match=message):
            model.step(**kwargs)
    np.testing.assert_array_equal(model.parameter("ln_f.weight"), before)  # refused before anything moved
    with pytest.raises(tegula.Error, match="max_norm is a positive number, not -1"):
        model.clip_grad_norm(-1.0)
    with pytest.raises(tegula.Error, match="each 0 or more"):
        gpt.learning_rate(step=-5, warmup=10, total=100, max_lr=1.0, min_lr=0.1)


@pytest.mark.gpu
def test_forward_and_gradients_on_the_gpu_match_hugging_face(io):
    grads = fixture("grads")
    for dtype, tol in (("float32", 1e-3), ("bfloat16", 3e-2)):
        model = gpt.GPT.from_pretrained(os.path.join(FIXTURE, "model.safetensors"), n_head=4, backend="gpu",
                                        dtype=dtype)
        loss = model.forward(io["tokens"], io["targets"])
        err = rel_error(model.logits(), io["logits"])  # before backward() overwrites them
        model.zero_grad()
        model.backward()
        gerr = rel_error(model.gradient("h.0.attn.c_attn.weight"), grads["transformer.h.0.attn.c_attn.weight"])
        print(f"[gpt] gpu {dtype}: logits rel {err:.2e}, d c_attn rel {gerr:.2e}, loss {loss:.5f}")
        assert err < tol and gerr < 3 * tol
        assert loss == pytest.approx(float(io["loss"][0]), rel=tol)


def test_configs_are_values():
    a, b = fixture_config(), fixture_config()
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != gpt.Config(n_layer=3, n_head=4, n_embd=128, vocab=512, n_ctx=64)
    assert a != "a config" and a != None  # noqa: E711 - other types are not equal, not errors
