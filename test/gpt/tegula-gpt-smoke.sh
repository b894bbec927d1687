#!/usr/bin/env bash
# tegula-gpt end to end on a tiny corpus: train a few steps (interpreter),
# save, generate from the checkpoint - with byte tokens, and with GPT-2's BPE
# through a token file; bad options are clear errors.
set -euo pipefail
tool=$1
bpe=$2 # models/gpt/tokenizer/fixture
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for i in $(seq 40); do echo "the quick brown fox jumps over the lazy dog $i"; done >"$work/input.txt"
small=(--layers 1 --heads 2 --embd 32 --seq 16)
source "$(dirname "${BASH_SOURCE[0]}")/tegula-gpt-lib.sh" # expect_error, prints, stopped_by
"$tool" train --data "$work/input.txt" --steps 4 --batch 2 --val-every 2 --save "$work/m.safetensors" \
  "${small[@]}" | tee "$work/train.log"
grep -q '^step     4/4  loss' "$work/train.log"
grep -q '^step     3/4  loss .*  eta [0-9]*s$' "$work/train.log" # the time left, but after the last step
if grep -q '^step     4/4  loss .*eta' "$work/train.log"; then echo "an eta after the last step"; exit 1; fi
grep -q '^validation loss' "$work/train.log"
for phase in model 'after optimizer' 'after forward' 'after backward' 'after step'; do
  grep -q "^\[memory\] $phase " "$work/train.log"
done
# generate reads the sizes (and, from the metadata, the heads) from the checkpoint.
"$tool" generate --model "$work/m.safetensors" --prompt "the " --tokens 8 --temperature 0 | tee "$work/gen.log"
[[ $(head -c 4 "$work/gen.log") == "the " ]]
if "$tool" generate --model "$work/m.safetensors" --prompt x --heads 3 2>"$work/err.log"; then exit 1; fi
grep -q "3 heads were asked for (tegula-gpt --heads, Python n_head=), but the file's metadata says n_head 2" \
  "$work/err.log"
if "$tool" generate --model "$work/m.safetensors" --prompt x --layers 2 2>"$work/err.log"; then exit 1; fi
grep -q "unknown option '--layers'" "$work/err.log"
# bf16 mixed precision: trains, and reports the bf16 copy in its memory.
"$tool" train --data "$work/input.txt" --steps 3 --batch 2 --val-every 0 --dtype bf16 --warp-specialize on \
  "${small[@]}" | tee "$work/train-bf16.log"
grep -q 'bf16 (f32 master weights)' "$work/train-bf16.log"
grep -q '^step     3/3  loss' "$work/train-bf16.log"
# ... with the bf16 copy rounded stochastically (and only bf16 has one).
"$tool" train --data "$work/input.txt" --steps 2 --batch 2 --val-every 0 --dtype bf16 --stochastic-rounding on \
  "${small[@]}" | tee "$work/train-sr.log"
grep -q '^step     2/2  loss' "$work/train-sr.log"
if "$tool" train --data "$work/input.txt" --stochastic-rounding on 2>"$work/err.log"; then exit 1; fi
grep -q -- "--stochastic-rounding rounds the bf16 copy of the master weights: give --dtype bf16" "$work/err.log"
if "$tool" train --data "$work/input.txt" --dtype f16 2>"$work/err.log"; then exit 1; fi
grep -q -- "--dtype is f32 or bf16, not 'f16'" "$work/err.log"
if "$tool" train --data "$work/input.txt" --warp-specialize yes 2>"$work/err.log"; then exit 1; fi
grep -q -- "--warp-specialize is on or off, not 'yes'" "$work/err.log"
# The weight gradients one program a tile instead of stream-K: trains too.
"$tool" train --data "$work/input.txt" --steps 2 --batch 2 --val-every 0 --stream-k off "${small[@]}" |
  tee "$work/train-tiles.log"
grep -q '^step     2/2  loss' "$work/train-tiles.log"
if "$tool" train --data "$work/input.txt" --stream-k maybe 2>"$work/err.log"; then exit 1; fi
grep -q -- "--stream-k is on or off, not 'maybe'" "$work/err.log"
# Other tiles by name (GptModel::Tiles::with): trains, and says which.
"$tool" train --data "$work/input.txt" --steps 2 --batch 2 --val-every 0 --tiles attention_fwd_block=32,column_rows=32 \
  "${small[@]}" | tee "$work/train-override.log"
grep -q 'attention_fwd_block=32,' "$work/train-override.log"
grep -q '^step     2/2  loss' "$work/train-override.log"
if "$tool" train --data "$work/input.txt" --tiles attention_block=32 2>"$work/err.log"; then exit 1; fi
grep -q "GPT tiles: no field 'attention_block'" "$work/err.log"
# ... or from a file (tegula-gpt tune writes them): comments, lines.
printf '# tuned\nattention_fwd_block=32  # the queries\ncolumn_rows=32\n' >"$work/tiles.txt"
"$tool" train --data "$work/input.txt" --steps 1 --batch 2 --val-every 0 --tiles "@$work/tiles.txt" \
  "${small[@]}" | tee "$work/train-file.log"
grep -q 'attention_fwd_block=32,' "$work/train-file.log"
grep -q 'column_rows=32,' "$work/train-file.log"
if "$tool" train --data "$work/input.txt" --tiles "@$work/none.txt" 2>"$work/err.log"; then exit 1; fi
grep -q "cannot read the tiles file $work/none.txt" "$work/err.log"
"$tool" tokenize --data "$work/input.txt" --out "$work/tokens.bin" --vocab "$bpe/vocab.json" \
  --merges "$bpe/merges.txt" | tee "$work/tok.log"
grep -q 'vocabulary 420' "$work/tok.log"
"$tool" train --tokens "$work/tokens.bin" --steps 2 --batch 2 --val-every 0 --save "$work/b.safetensors" \
  "${small[@]}" | tee "$work/train-bpe.log"
grep -q 'vocabulary 420 (token file)' "$work/train-bpe.log"
prints '^the quick' generate --model "$work/b.safetensors" --vocab "$bpe/vocab.json" --merges "$bpe/merges.txt" \
  --prompt "the quick" --tokens 4
if "$tool" generate --model "$work/b.safetensors" --prompt x 2>"$work/err.log"; then exit 1; fi
grep -q "a BPE model: give its --vocab and --merges" "$work/err.log"
if "$tool" train --data "$work/input.txt" --stepz 3 2>"$work/err.log"; then exit 1; fi
grep -q "unknown option '--stepz'" "$work/err.log"
if "$tool" generate --model "$work/missing.safetensors" --prompt x 2>"$work/err.log"; then exit 1; fi
grep -q "cannot open" "$work/err.log"
if "$tool" train --tokens "$work/input.txt" 2>"$work/err.log"; then exit 1; fi
grep -q "is not a token file" "$work/err.log"
# Mistakes a user makes, each a clear error before any work (not a crash, a
# wrong count, a run lost at the end or a kernel reading out of bounds):
expect_error "--steps is an integer from 1 to 2147483647, not '1e3'" train --data "$work/input.txt" --steps 1e3
expect_error "--seq is an integer from 1 to 1048576, not '16abc'" train --data "$work/input.txt" --seq 16abc
expect_error "--lr is a finite number from 0 to 1000000, not '-1e-3'" train --data "$work/input.txt" --lr -1e-3
expect_error "--batch 1048576 x --seq 65536 is 68719476736 tokens a step" train --data "$work/input.txt" \
  --batch 1048576 --seq 65536
expect_error "--save $work is a directory" train --data "$work/input.txt" --save "$work"
expect_error "--save $work/none/m.safetensors: cannot create a file there: No such file or directory" \
  train --data "$work/input.txt" --save "$work/none/m.safetensors"
expect_error "$work is a directory; give a regular file" train --data "$work"
expect_error "only --vocab is given" tokenize --data "$work/input.txt" --out "$work/t.bin" --vocab "$bpe/vocab.json"
expect_error "is the --data file; it would be overwritten" tokenize --data "$work/input.txt" --out "$work/input.txt"
# The context is the trained window (--seq 16): no position past it.
expect_error "the prompt is 17 tokens and the model's context 16: give a prompt of at most 15 tokens" \
  generate --model "$work/m.safetensors" --prompt "$(printf 'a%.0s' {1..17})"
expect_error "--tokens is an integer from 0 to 2147483647, not '-5'" generate --model "$work/m.safetensors" \
  --prompt x --tokens -5
[[ $("$tool" generate --model "$work/m.safetensors" --prompt "the " --tokens 0) == "the " ]]
expect_error "--top-p is a probability mass in (0, 1] (1: no cut), not '0'" generate --model "$work/m.safetensors" \
  --prompt x --top-p 0
# An output is never one of the inputs (it would be destroyed).
expect_error "--save $work/input.txt is the --data file; it would be overwritten" train --data "$work/input.txt" \
  --save "$work/input.txt"
cp "$bpe/merges.txt" "$work/merges.txt"
expect_error "--out $work/merges.txt is the --merges file" tokenize --data "$work/input.txt" \
  --out "$work/merges.txt" --vocab "$bpe/vocab.json" --merges "$work/merges.txt"
# Options: each once, each with its value; --help lists them with defaults.
expect_error "option '--save' needs a value, and the next word '--steps' is an option" train \
  --data "$work/input.txt" --save --steps 3
expect_error "option '--heads' is given twice ('3' and '2')" train --data "$work/input.txt" --heads 3 --heads 2
prints "--lr .*peak learning rate \[1e-3\]" train --help
prints "--top-p .*(0, 1\] \[0.95\]" generate --help
prints "tegula-gpt train (--data FILE | --tokens FILE)" --help
prints '^-h$' generate --model "$work/m.safetensors" --prompt -h --tokens 0  # a value, not --help
if "$tool" >/dev/null 2>&1; then exit 1; fi
expect_error "no subcommand 'trian'" trian --data x
prints '^step     1/1' train --data="$work/input.txt" --steps=1 --batch=2 --val-every=0 "${small[@]}"
# A token file's ids are checked when it is opened, and so is its length.
tokfile() { # tokfile PATH COUNT ID...: a token file of vocabulary 256
  local path=$1 count=$2
  shift 2
  python3 -c 'import struct,sys; p,c,*ids=sys.argv[1:]; open(p,"wb").write(b"TGTK"+struct.pack("<3I",1,256,int(c))+struct.pack(f"<{len(ids)}i",*map(int,ids)))' \
    "$path" "$count" "$@"
}
tokfile "$work/bad.bin" 0 $(seq 1 40) 300 $(seq 1 40)
expect_error "$work/bad.bin: token 40 (of 81) is 300, outside its vocabulary [0, 256)" train --tokens "$work/bad.bin"
tokfile "$work/short.bin" 90 $(seq 1 80)
expect_error "$work/short.bin: its header says 90 tokens, the file holds 80: it was cut short" \
  train --tokens "$work/short.bin"
# Ctrl-C: the step in flight finishes, the model is saved, the log is whole.
stopped_by INT 130 "$work/int.log" train --data "$work/input.txt" --steps 100000 --batch 2 --val-every 0 \
  --save "$work/int.safetensors" "${small[@]}"
grep -q "^interrupted after step [0-9]* of 100000: saved $work/int.safetensors" "$work/int.log"
prints '^the ' generate --model "$work/int.safetensors" --prompt "the " --tokens 2 --temperature 0
if compgen -G "$work/*.tmp*" >/dev/null; then echo "a temporary file was left:"; ls "$work"; exit 1; fi
# A run that diverges stops, saying so, and saves nothing.
expect_error "training diverged at step" train --data "$work/input.txt" --steps 6 --batch 2 --val-every 0 \
  --lr 1e6 --warmup 0 --save "$work/nan.safetensors" "${small[@]}"
[[ ! -e "$work/nan.safetensors" ]]
echo "tegula-gpt smoke test passed"
