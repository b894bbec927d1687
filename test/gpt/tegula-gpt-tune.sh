#!/usr/bin/env bash
# tegula-gpt tune through the recording fake CUDA driver (an sm_90a, or with
# TEGULA_FAKE_CUDA_ARCH=80 an sm_80, that runs no kernels): every alternative
# of bf16's and f32's choices compiles for sm_90a, and bf16's for sm_80, at
# GPT-2's widths and passes the driver's launch checks (no trial
# ends in an error), the tiles file it writes reads back as --tiles @FILE,
# and bad options are clear errors. The fake's times mean nothing: which
# tiles win is not checked here (test/gpt/TileTunerTest.cpp checks the
# choosing).
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gpt2=(--layers 1 --vocab 1000 --batch 2 --seq 200 --rounds 1 --steps 1) # GPT-2's widths, one block, ragged T
"$tool" tune "${gpt2[@]}" --out "$work/tiles.txt" | tee "$work/tune.log"
if grep -q "error:" "$work/tune.log"; then exit 1; fi
for choice in gelu_ping_pong attention_fwd attention_bwd group_m dw_stream_k ln_bwd ln_bwd_rows ln_bwd_block \
  ln_fwd_rows ln_fwd_block column_sums; do
  grep -q "^  $choice " "$work/tune.log"
done
grep -q "^  ln_bwd  *ln_bwd_tile_rows=4,ln_bwd_warps=8 " "$work/tune.log"
grep -q "^  attention_bwd  *attention_bwd_block=64,attention_warps=4 " "$work/tune.log"
grep -q "^  (start, tuned)  *(as is) " "$work/tune.log"
grep -q '^tuned: ' "$work/tune.log"
grep -q '^# tegula-gpt tune on Tegula fake CUDA driver' "$work/tiles.txt"
[[ $(grep -vc '^#' "$work/tiles.txt") == 1 ]]
# f32 (tf32 dots on sm_90a): its choices run too.
"$tool" tune "${gpt2[@]}" --dtype f32 | tee "$work/tune-f32.log"
if grep -q "error:" "$work/tune-f32.log"; then exit 1; fi
grep -q "^  ln_fwd_rows  *ln_fwd_rows=8 " "$work/tune-f32.log"
grep -q "^  column_sums  *column_sum_rows=64,column_sum_block=32 " "$work/tune-f32.log"
if grep -q "^  gelu_ping_pong" "$work/tune-f32.log"; then exit 1; fi
# sm_80 (mma.sync, cp.async; no ping-pong, no producer): its choices compile and launch.
TEGULA_FAKE_CUDA_ARCH=80 "$tool" tune "${gpt2[@]}" | tee "$work/tune-sm80.log"
if grep -q "error:" "$work/tune-sm80.log"; then exit 1; fi
if grep -q "^  gelu_ping_pong" "$work/tune-sm80.log"; then exit 1; fi
grep -q "^  ln_bwd  *ln_bwd_tile_rows=4,ln_bwd_warps=8 " "$work/tune-sm80.log"
# Starting from a tiles file, one choice: the file's tiles are the start
# and stay in what tune reports.
printf '# made by hand\nln_fwd_rows=4  # four rows\n\nattention_fwd_ws=0\n' >"$work/start.txt"
"$tool" tune "${gpt2[@]}" --choices ln_fwd_rows --tiles "@$work/start.txt" | tee "$work/again.log"
grep -q "1 choices" "$work/again.log"
grep -q "^  ln_fwd_rows  *(as is) " "$work/again.log"
grep -q "^  ln_fwd_rows  *ln_fwd_rows=8 " "$work/again.log"
if grep -q "^  ln_bwd" "$work/again.log"; then exit 1; fi
grep -Eq "^tuned: attention_fwd_ws=0(,ln_fwd_rows=(4|8))? " "$work/again.log"
if "$tool" tune --backend interp 2>"$work/err.log"; then exit 1; fi
grep -q "tune times training steps on a GPU" "$work/err.log"
if "$tool" tune "${gpt2[@]}" --choices ln_fwd_rows,nope 2>"$work/err.log"; then exit 1; fi
grep -q "no choice 'nope' for this model and GPU (its choices: gelu_ping_pong, " "$work/err.log"
if "$tool" tune "${gpt2[@]}" --tiles "@$work/missing.txt" 2>"$work/err.log"; then exit 1; fi
grep -q "cannot read the tiles file $work/missing.txt" "$work/err.log"
echo "tegula-gpt tune test passed"
