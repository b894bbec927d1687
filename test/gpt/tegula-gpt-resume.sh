#!/usr/bin/env bash
# tegula-gpt train --save / --resume / --init / --save-every, and generate's
# stop at <|endoftext|>, end to end in the interpreter: a run stopped and
# resumed ends with the same bytes as one that was not.
set -euo pipefail
tool=$1
bpe=$2 # models/gpt/tokenizer/fixture
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for i in $(seq 60); do echo "the quick brown fox jumps over the lazy dog $i"; done >"$work/input.txt"
small=(--layers 1 --heads 2 --embd 32 --seq 16 --batch 2 --val-every 0)
source "$(dirname "${BASH_SOURCE[0]}")/tegula-gpt-lib.sh" # expect_error, stopped_by

# 6 steps at once, and 3 + 3 resumed: the same model and optimizer state,
# byte for byte - in bf16 with stochastic rounding, whose bf16 copy of the
# weights the state keeps. (All 6 steps are in the warm-up, whose learning
# rate does not depend on --steps: the first run of 3 steps as the 6-step one.)
mixed=(--dtype bf16 --stochastic-rounding on)
"$tool" train --data "$work/input.txt" --steps 6 --warmup 10 --save "$work/whole.safetensors" "${small[@]}" \
  "${mixed[@]}" >"$work/whole.log"
"$tool" train --data "$work/input.txt" --steps 3 --warmup 10 --save "$work/part.safetensors" "${small[@]}" \
  "${mixed[@]}" >"$work/part.log"
[[ -f "$work/part.state.safetensors" ]]
"$tool" train --data "$work/input.txt" --steps 6 --resume "$work/part.safetensors" \
  --save "$work/part.safetensors" | tee "$work/resumed.log"
grep -q "^resuming $work/part.safetensors at step 3 of 6; --steps 6 (the saved run's: 3)" "$work/resumed.log"
grep -q '^step     4/6' "$work/resumed.log"
if grep -q '^step     3/6' "$work/resumed.log"; then echo "a resumed run repeated a step"; exit 1; fi
# (Each save has its own id, which the model and its state share.)
same_but_save_id() {
  python3 - "$1" "$2" <<'EOF2'
import json, struct, sys
def read(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    save_id = header["__metadata__"].pop("train.save_id")
    return header, data[8 + n:], save_id
(a, body_a, id_a), (b, body_b, id_b) = read(sys.argv[1]), read(sys.argv[2])
assert id_a != id_b, "two saves, one id"
assert a == b, f"the headers differ: {sys.argv[1]} {sys.argv[2]}"
assert body_a == body_b, f"the tensors differ: {sys.argv[1]} {sys.argv[2]}"
EOF2
}
same_but_save_id "$work/whole.safetensors" "$work/part.safetensors"
same_but_save_id "$work/whole.state.safetensors" "$work/part.state.safetensors"
# The losses of the resumed steps are the uninterrupted run's.
diff <(grep -o '^step     [456]/6  loss [0-9.]*' "$work/whole.log") \
  <(grep -o '^step     [456]/6  loss [0-9.]*' "$work/resumed.log")

# --save-every: the checkpoint at steps 2 and 4, then at the end.
"$tool" train --data "$work/input.txt" --steps 5 --save-every 2 --save "$work/every.safetensors" "${small[@]}" \
  >"$work/every.log"
grep -q "^saved $work/every.safetensors at step 2$" "$work/every.log"
grep -q "^saved $work/every.safetensors at step 4$" "$work/every.log"
grep -q "^saved $work/every.safetensors$" "$work/every.log"

# Ctrl-C saves where the run stands; --resume finishes it.
stopped_by INT 130 "$work/int.log" train --data "$work/input.txt" --steps 100000 --save "$work/int.safetensors" \
  "${small[@]}"
taken=$(sed -n 's/^interrupted after step \([0-9]*\) of 100000: saved.*--resume.*/\1/p' "$work/int.log")
[[ -n $taken ]] || { echo "no interrupted line:"; cat "$work/int.log"; exit 1; }
"$tool" train --data "$work/input.txt" --resume "$work/int.safetensors" --steps $((taken + 2)) >"$work/int2.log"
grep -q "^resuming $work/int.safetensors at step $taken of $((taken + 2))" "$work/int2.log"
grep -q "^step $(printf '%5d' $((taken + 2)))/$((taken + 2))  loss" "$work/int2.log"

# SIGTERM (kill, timeout, a batch system) saves as Ctrl-C does, and exits 143.
stopped_by TERM 143 "$work/term.log" train --data "$work/input.txt" --steps 100000 --save "$work/term.safetensors" \
  "${small[@]}"
grep -q "^terminated (SIGTERM) after step [0-9]* of 100000: saved $work/term.safetensors" "$work/term.log"

# A save that fails (here the file-size limit stops the optimizer state, the
# model fits) leaves the previous pair as it was: still resumable.
"$tool" train --data "$work/input.txt" --steps 2 --save "$work/keep.safetensors" "${small[@]}" >/dev/null
if (trap '' XFSZ; ulimit -f 120; "$tool" train --data "$work/input.txt" --resume "$work/keep.safetensors" --steps 4 \
  --save "$work/keep.safetensors" >/dev/null 2>"$work/full.log"); then
  echo "a save past the file-size limit succeeded"; exit 1
fi
grep -q "cannot write $work/keep.state.safetensors" "$work/full.log"
"$tool" train --data "$work/input.txt" --resume "$work/keep.safetensors" --steps 4 >"$work/kept.log" 2>/dev/null
grep -q "^resuming $work/keep.safetensors at step 2 of 4" "$work/kept.log"
if compgen -G "$work/keep*.tmp*" >/dev/null; then echo "a temporary file was left:"; ls "$work"; exit 1; fi

# --init: a new run from a checkpoint's weights (and its sizes: its context
# 16 caps --seq's default 64).
"$tool" train --data "$work/input.txt" --steps 2 --batch 2 --val-every 0 --init "$work/whole.safetensors" \
  >"$work/init.log"
grep -q "^starting from the weights of $work/whole.safetensors" "$work/init.log"
grep -q "^GPT: 1 layers, 2 heads, 32 dims, vocabulary 256 (bytes); .* B=2 T=16;" "$work/init.log"

# What cannot be resumed, each a clear error before any work.
expect_error "--resume $work/whole.safetensors: the run has taken 6 steps of --steps 6; give a larger --steps" \
  train --data "$work/input.txt" --resume "$work/whole.safetensors"
expect_error "--resume continues the saved run's random streams" \
  train --data "$work/input.txt" --resume "$work/whole.safetensors" --steps 9 --seed 2
cp "$work/whole.safetensors" "$work/alone.safetensors"
expect_error "--resume $work/alone.safetensors: no optimizer state beside it ($work/alone.state.safetensors" \
  train --data "$work/input.txt" --resume "$work/alone.safetensors" --steps 9
cp "$work/every.state.safetensors" "$work/alone.state.safetensors" # of step 5, the model of step 6
expect_error "the model (step 6) and its optimizer state $work/alone.state.safetensors (step 5) are not of the same save" \
  train --data "$work/input.txt" --resume "$work/alone.safetensors" --steps 9
# ... nor of the same step alone: two runs that saved to one name.
"$tool" train --data "$work/input.txt" --steps 6 --warmup 10 --save "$work/other.safetensors" "${small[@]}" \
  "${mixed[@]}" --seed 2 >/dev/null
cp "$work/whole.safetensors" "$work/mixed.safetensors"
cp "$work/other.state.safetensors" "$work/mixed.state.safetensors"
expect_error "(step 6) are not of the same save (one was cut short, or another run saved over one of them)" \
  train --data "$work/input.txt" --resume "$work/mixed.safetensors" --steps 9
expect_error "--resume $work/whole.state.safetensors: that is an optimizer state; give the model file beside it" \
  train --data "$work/input.txt" --resume "$work/whole.state.safetensors" --steps 9
expect_error "--resume $work/gone.safetensors: no such file" \
  train --data "$work/input.txt" --resume "$work/gone.safetensors" --steps 9
# A damaged setting is the file's, not the user's typo.
python3 - "$work/whole.state.safetensors" "$work/damaged.state.safetensors" <<'EOF2'
import json, struct, sys
data = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
header["__metadata__"]["train.steps"] = "abc"
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(text)) + text + data[8 + n:])
EOF2
cp "$work/whole.safetensors" "$work/damaged.safetensors"
expect_error "--resume $work/damaged.safetensors: the saved run's --steps in $work/damaged.state.safetensors is damaged" \
  train --data "$work/input.txt" --resume "$work/damaged.safetensors"
# Without --save a resumed run is not kept: it says so.
"$tool" train --data "$work/input.txt" --resume "$work/whole.safetensors" --steps 7 >/dev/null 2>"$work/warn.log"
grep -q "warning: no --save: the resumed run's training is not kept" "$work/warn.log"
expect_error "--embd 64: the model in $work/whole.safetensors has 32 (its sizes are the checkpoint's)" \
  train --data "$work/input.txt" --init "$work/whole.safetensors" --embd 64
expect_error "--seq 32 is longer than the context of the model in $work/whole.safetensors (16 positions)" \
  train --data "$work/input.txt" --init "$work/whole.safetensors" --seq 32
expect_error "give --init (weights to start a new run from) or --resume (a run to continue), not both" \
  train --data "$work/input.txt" --init "$work/whole.safetensors" --resume "$work/whole.safetensors"
expect_error "--save-every saves to the --save file: give --save too" train --data "$work/input.txt" --save-every 2
expect_error "--save $work/m.state.safetensors: a name ending in .state.safetensors is an optimizer state's" \
  train --data "$work/input.txt" --save "$work/m.state.safetensors"
expect_error "--save $work/whole.safetensors is the --init file" \
  train --data "$work/input.txt" --init "$work/whole.safetensors" --save "$work/whole.safetensors"

# generate: a BPE model stops at <|endoftext|> (the fixture's id 0) and
# starts from it when the prompt is empty. This model's every logit is 0
# but <|endoftext|>'s (ln_f's output is its bias, 1s; wte's row 0 alone is
# not zero), so greedy decoding chooses it at once.
"$tool" tokenize --data "$work/input.txt" --out "$work/tokens.bin" --vocab "$bpe/vocab.json" \
  --merges "$bpe/merges.txt" >/dev/null
"$tool" train --tokens "$work/tokens.bin" --steps 1 --save "$work/bpe.safetensors" "${small[@]}" >/dev/null
python3 - "$work/bpe.safetensors" <<'EOF'
import json, struct, sys
path = sys.argv[1]
data = open(path, "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
body = bytearray(len(data) - 8 - n)  # every tensor zero
for name, t in header.items():
    if name == "__metadata__":
        continue
    begin, end = t["data_offsets"]
    assert t["dtype"] == "F32"
    if name == "ln_f.bias":
        body[begin:end] = struct.pack(f"<{(end - begin) // 4}f", *[1.0] * ((end - begin) // 4))
    if name == "wte.weight":
        width = t["shape"][1]
        body[begin:begin + 4 * width] = struct.pack(f"<{width}f", *[1.0] * width)
open(path, "wb").write(data[:8 + n] + bytes(body))
EOF
bpeargs=(--model "$work/bpe.safetensors" --vocab "$bpe/vocab.json" --merges "$bpe/merges.txt" --temperature 0)
[[ $("$tool" generate "${bpeargs[@]}" --prompt "the quick" --tokens 5) == "the quick" ]]
[[ $("$tool" generate "${bpeargs[@]}" --tokens 5) == "" ]]
[[ $("$tool" generate "${bpeargs[@]}" --prompt "the" --tokens 2 --stop off) == "the<|endoftext|><|endoftext|>" ]]
expect_error "generate: give a --prompt: a model without --vocab/--merges has no <|endoftext|> token" \
  generate --model "$work/whole.safetensors"
expect_error "--stop on ends at <|endoftext|>, which only a BPE model (--vocab, --merges) has" \
  generate --model "$work/whole.safetensors" --prompt x --stop on
# --ids on: token ids in and out, for a model of any vocabulary (420 here).
[[ $("$tool" generate --model "$work/bpe.safetensors" --ids on --prompt "5, 17 300" --tokens 3 --temperature 0 \
  --stop off) == "5 17 300 0 0 0" ]]
expect_error "--prompt with --ids on: '420' is not a token id of the model's vocabulary [0, 420)" \
  generate --model "$work/bpe.safetensors" --ids on --prompt "1 420"
echo "tegula-gpt resume test passed"
