#!/usr/bin/env bash
# benchmark-args-test.sh BIN_DIR BENCHMARK... - every benchmark's command
# line (benchmarks/BenchArgs.h): --help prints its usage and exits 0; an
# unknown option, a missing value or a malformed number exits 2 naming it,
# before anything runs (a misspelt flag used to run the whole benchmark).
set -u
bin=$1
shift
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
for b in "$@"; do
  out=$("$bin/$b" --help 2>&1) && rc=0 || rc=$?
  ((rc == 0)) || fail "$b --help exited $rc"
  [[ $out == *"usage: $b [options]"* && $out == *"--help"* ]] || fail "$b --help printed no usage: $out"
  out=$("$bin/$b" --no-such-option 1 2>&1) && rc=0 || rc=$?
  ((rc == 2)) || fail "$b --no-such-option exited $rc"
  [[ $out == *"$b: unknown option '--no-such-option'"* ]] || fail "$b did not name the unknown option: $out"
  echo "ok: $b"
done
# Values: a number that is not one, and an option without its value.
out=$("$bin/gemm" --iters 10x 2>&1) && rc=0 || rc=$?
((rc == 2)) && [[ $out == *"--iters takes an integer, not '10x'"* ]] || fail "gemm --iters 10x: rc $rc: $out"
out=$("$bin/gpt2-train" --steps 2>&1) && rc=0 || rc=$?
((rc == 2)) && [[ $out == *"--steps needs a value"* ]] || fail "gpt2-train --steps: rc $rc: $out"
out=$("$bin/gpt2-train" --batch 0 2>&1) && rc=0 || rc=$?
((rc == 2)) && [[ $out == *"--batch is at least 1, not 0"* ]] || fail "gpt2-train --batch 0: rc $rc: $out"
for b in gemm attention gpt2-layers gpt2-linear gpt2-attention bandwidth; do
  out=$("$bin/$b" --iters 0 2>&1) && rc=0 || rc=$?
  ((rc == 2)) && [[ $out == *"--iters is at least 1, not 0"* ]] || fail "$b --iters 0: rc $rc: $out"
done
# Choices: gemm's types and shapes, gpt2-train's dtype; a misspelt tile field.
out=$("$bin/gemm" --dtypes bf16,fp16 2>&1) && rc=0 || rc=$?
((rc == 2)) && [[ $out == *"not 'fp16'"* ]] || fail "gemm --dtypes bf16,fp16: rc $rc: $out"
out=$("$bin/gemm" --shapes square 2>&1) && rc=0 || rc=$?
((rc == 2)) && [[ $out == *"not 'square'"* ]] || fail "gemm --shapes square: rc $rc: $out"
out=$("$bin/gpt2-train" --dtype fp32 2>&1) && rc=0 || rc=$?
((rc == 2)) && [[ $out == *"not 'fp32'"* ]] || fail "gpt2-train --dtype fp32: rc $rc: $out"
out=$("$bin/gpt2-linear" --tiles dw_bm=256 2>&1) && rc=0 || rc=$?
((rc == 2)) && [[ $out == *"no field 'dw_bm'"* ]] || fail "gpt2-linear --tiles dw_bm=256: rc $rc: $out"
out=$("$bin/bandwidth" --rows 0 2>&1) && rc=0 || rc=$?
((rc == 2)) && [[ $out == *"at least 1"* ]] || fail "bandwidth --rows 0: rc $rc: $out"
((failures == 0)) && echo "all benchmark command lines behave" || exit 1
