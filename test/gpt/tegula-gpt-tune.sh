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
export TEGULA_GPT_TILES_DIR=$work/kept # the tunings kept for --tiles auto
gpt2=(--layers 1 --vocab 1000 --batch 2 --seq 200 --rounds 1 --steps 1) # GPT-2's widths, one block, ragged T
"$tool" tune "${gpt2[@]}" --out "$work/tiles.txt" | tee "$work/tune.log"
if grep -q "error:" "$work/tune.log"; then exit 1; fi
for choice in gelu_ping_pong attention_fwd attention_bwd group_m dw_stream_k dw_bn head_dw_bn ln_bwd ln_bwd_rows \
  ln_bwd_block ln_fwd_rows ln_fwd_block column_sums; do
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
# Each tuning is kept for its GPU and setup; train --tiles auto finds it at
# the same setup, and says so where there is none.
ls "$work"/kept/sm_90a-*-bf16-*-L1-H12-C768-V1000-B2-T200.txt
small=(--layers 1 --heads 12 --embd 768 --batch 2 --seq 64 --steps 1)
"$tool" tune "${small[@]}" --vocab 256 --rounds 1 --choices ln_fwd_rows | tee "$work/small.log"
kept=$(sed -n 's/^kept \(.*\) (tegula-gpt train --tiles auto at the same setup)$/\1/p' "$work/small.log")
[[ -f $kept ]]
# Every field kept (a later Tegula's defaults do not change it), the
# differences in a comment.
grep -q '^# differs from the defaults in: ' "$kept"
grep -v '^#' "$kept" | grep -q 'attention_bwd_ws=0,'
printf 'ln_fwd_rows=8\n' >>"$kept" # as if the tuning had chosen it
head -c 20000 "$(dirname "$0")/../../README.md" >"$work/text.txt"
"$tool" train --data "$work/text.txt" --backend gpu --dtype bf16 "${small[@]}" --tiles auto | tee "$work/train.log"
grep -q "^tiles: tuned for this setup ($kept): .*ln_fwd_rows=8" "$work/train.log"
grep -q "^tiles: .*,ln_fwd_rows=8," "$work/train.log"
"$tool" train --data "$work/text.txt" --backend gpu --dtype bf16 --layers 1 --heads 12 --embd 768 --batch 3 --seq 64 --steps 1 \
  --tiles auto | tee "$work/miss.log"
grep -q "^tiles: no tuning kept for .* B=3 T=64; bf16.* - the defaults; \`tegula-gpt tune --layers 1 --heads 12 --embd 768 --vocab 256 --batch 3 --seq 64 --dtype bf16\` keeps one" "$work/miss.log"
"$tool" tune "${small[@]}" --vocab 256 --rounds 1 --choices ln_fwd_rows --tiles auto | tee "$work/resume.log"
grep -q "^tiles: tuned for this setup" "$work/resume.log"
if "$tool" train --data "$work/text.txt" --tiles auto 2>"$work/err.log"; then exit 1; fi
grep -q "tiles auto reads the tiles tegula-gpt tune kept for a GPU: give --backend gpu" "$work/err.log"
echo "tegula-gpt tune test passed"
