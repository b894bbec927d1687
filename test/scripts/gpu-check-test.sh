#!/usr/bin/env bash
# scripts/gpu-check.sh's `run` and `collect` on a made-up payload (shell
# scripts standing in for a GoogleTest binary and benchmarks), so the logic
# that a lent GPU machine depends on - sharding, counting, the call's time
# budget, stalls and crashes, at most 8 files back, the bundle, resuming -
# is checked here, without a GPU.
set -euo pipefail
script=$1 # scripts/gpu-check.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/payload/bin" "$work/payload/lib" "$work/carry"

# A GoogleTest binary as the script sees it: --gtest_list_tests, a filter of
# exact names, tests run in registration order; one skipped, one failing,
# one that hangs (no output), one that crashes and one that fails unless it
# runs alone (as after a CUDA error that broke the process's context), one
# that passes only with TEGULA_TMA=0 (a broken TMA path).
cat >"$work/payload/bin/fake_test" <<'TEST'
#!/usr/bin/env bash
all="One Two Hangs Three Skipped Crashes Fails After Sticky NeedsTmaOff"
if [[ ${1:-} == --gtest_list_tests ]]; then
  echo "Running main() from gtest_main.cc"
  echo "A."
  pattern=${2#--gtest_filter=} # one glob here (GoogleTest takes a list)
  for t in $all; do [[ A.$t == ${pattern:-*} ]] && echo "  $t"; done
  exit 0
fi
names=" ${2#--gtest_filter=} " rc=0
names=${names//:/ }
for t in $all; do
  [[ $names == *" A.$t "* ]] || continue
  echo "[ RUN      ] A.$t"
  case $t in
    Skipped) echo "[  SKIPPED ] A.$t (0 ms)" ;;
    Fails) echo "fake_test.cpp:12: Failure"; echo "[  FAILED  ] A.$t (3 ms)"; rc=1 ;;
    Hangs) sleep 600 ;;
    NeedsTmaOff) if [[ ${TEGULA_TMA:-} == 0 ]]; then echo "[       OK ] A.$t (1 ms)"; else
      echo "[  FAILED  ] A.$t (1 ms)"; rc=1; fi ;;
    Crashes) kill -SEGV $$ ;;
    Sticky) if [[ $names == " A.Sticky " ]]; then echo "[       OK ] A.$t (1 ms)"; else
      echo "[  FAILED  ] A.$t (1 ms)"; rc=1; fi ;;
    *) echo "[       OK ] A.$t (1 ms)" ;;
  esac
done
exit $rc
TEST
printf '#!/usr/bin/env bash\necho "fake_row 1.0 ms ratio 0.75"\necho "args: $*"\n' >"$work/payload/bin/fake_bench"
printf '#!/usr/bin/env bash\necho "quiet: started"\nsleep 600\n' >"$work/payload/bin/quiet_bench"
printf '#!/usr/bin/env bash\nwhile :; do echo "slow: still going"; sleep 0.5; done\n' >"$work/payload/bin/slow_bench"
# The GEMM benchmark: one type a call (--dtypes), its CSV in TEGULA_BENCH_OUT.
printf '#!/usr/bin/env bash\necho "gemm_$2 1.0 ms ratio 0.5"\necho "$1 $2" >"$TEGULA_BENCH_OUT/gemm.csv"\n' \
  >"$work/payload/bin/gemm"
chmod +x "$work/payload/bin/"*
tar -C "$work/payload" -cJf "$work/carry/payload.tar.xz" bin lib
printf 'test fake_test\nbenchmark fake_bench\nbenchmark quiet_bench\nbenchmark slow_bench\nbenchmark gemm\n' \
  >"$work/carry/programs.txt"
echo "abc1234" >"$work/carry/commit.txt"
mkdir -p "$work/tmp"
export TEGULA_GPU_CARRY=$work/carry OUT=$work/out TEGULA_GPU_CHECK_SHARDS=2 TEGULA_GPU_CHECK_STALL=2 \
  TEGULA_GPU_CHECK_TMP=$work/tmp TEGULA_GPU_CHECK_BISECT=1 # as on a Hopper GPU

fail() { echo "FAILED: $*"; exit 1; }

# Unknown items are refused before anything runs.
if bash "$script" run tests nosuch >"$work/unknown.log" 2>&1; then fail "an unknown item was accepted"; fi
grep -q "'nosuch' is neither a part" "$work/unknown.log" || fail "no clear error for an unknown item"

# tests + benchmarks with a 28 s budget: the test that hangs and the one that
# crashes are lost and the rest of their shares run again without them; the
# quiet benchmark is killed when it stalls, the slow one at the budget, and
# the fake benchmark asked for after it is left for the next call. (The
# bisection gets a quarter of what is left after the tests, and the hanging
# test's four runs take two 2 s rounds on two shards: 18 s left too little
# on a loaded machine.)
start=$SECONDS
set +e
TEGULA_ARGS_fake_bench='--tiles a=1,b=2 --variants ws' TEGULA_GPU_CHECK_SECONDS=28 \
  bash "$script" run tests fake_bench quiet_bench slow_bench fake_bench >"$work/run.log" 2>&1
rc=$?
set -e
cat "$work/run.log"
((SECONDS - start < 50)) || fail "the call ran $((SECONDS - start)) s with a 28 s budget"
((rc == 1)) || fail "rc $rc, not 1 (a test failed)"
summary=$work/out/summary.txt
[[ -f $summary ]] || fail "no summary.txt in \$OUT"
grep -qE '^test +fake_test +passed 4, skipped 1, failed 3, lost 2, not run 0 of 10$' "$summary" ||
  fail "wrong test counts"
grep -qx '    failed: A.Fails' "$summary" || fail "the failing test is not named"
grep -qx "    failed: A.Sticky (passed alone: an earlier test broke its process's context)" "$summary" ||
  fail "the test that passes alone is not told apart"
grep -qx '    lost: A.Hangs (no output for 2 s: killed)' "$summary" || fail "the hanging test is not named"
grep -qx '    lost: A.Crashes (exit status 139)' "$summary" || fail "the crashing test is not named"
# Each test that failed on its own or was lost runs again with the softmax overlap off,
# TMA off and wgmma off: the summary says which switch makes it pass.
grep -A1 -x '    failed: A.NeedsTmaOff' "$summary" | grep -qx '    \[TEGULA_OVERLAP_DOTS=0 fails, TEGULA_TMA=0 passes, TEGULA_WGMMA=0 fails\]' ||
  fail "the switch that mends A.NeedsTmaOff is not named"
grep -A1 -x '    failed: A.Fails' "$summary" |
  grep -qx '    \[TEGULA_OVERLAP_DOTS=0 fails at fake_test.cpp:12, TEGULA_TMA=0 fails at fake_test.cpp:12, TEGULA_WGMMA=0 fails at fake_test.cpp:12\]' ||
  fail "A.Fails was not tried with the switches"
grep -A1 -x '    lost: A.Crashes (exit status 139)' "$summary" |
  grep -qx '    \[TEGULA_OVERLAP_DOTS=0 crashes (exit status 139), TEGULA_TMA=0 crashes (exit status 139), TEGULA_WGMMA=0 crashes (exit status 139)\]' ||
  fail "A.Crashes was not tried with the switches"
grep -A1 -x '    lost: A.Hangs (no output for 2 s: killed)' "$summary" |
  grep -qx '    \[TEGULA_OVERLAP_DOTS=0 does not finish, TEGULA_TMA=0 does not finish, TEGULA_WGMMA=0 does not finish\]' ||
  fail "A.Hangs was not tried with the switches"
grep -qE '^benchmark +fake_bench +rc=0' "$summary" || fail "fake_bench did not run"
grep -qE '^benchmark +quiet_bench +rc=[0-9]+ +STALLED \(no output for 2 s: killed\)' "$summary" ||
  fail "quiet_bench was not stopped when it stalled"
grep -qE '^benchmark +slow_bench +rc=(124|137) +TIMED OUT' "$summary" || fail "slow_bench was not stopped at the budget"
grep -qx 'resume with: bash scripts/gpu-check.sh run fake_bench' "$summary" || fail "no resume line"
grep -qx 'fake_row 1.0 ms ratio 0.75' "$summary" || fail "the benchmark's result row is missing"
grep -q '^command: bash scripts/gpu-check.sh run tests fake_bench quiet_bench slow_bench fake_bench' "$summary" ||
  fail "the command is not recorded"
# What comes back: at most 8 files, the logs in one bundle.
files=$(find "$work/out" -type f | wc -l)
((files <= 8)) || fail "$files files in \$OUT (the device tool returns 8)"
bundle=$work/out/gpu-check-tests_fake_bench_quiet_bench_slow_bench_fake_bench.tar.gz
tar -tzf "$bundle" >"$work/bundle.txt"
for f in environment.log summary.txt fake_test.log fake_bench.log quiet_bench.log slow_bench.log results.txt; do
  grep -qx "./$f" "$work/bundle.txt" || fail "$f is not in the bundle"
done
grep -q '^slow: still going' <(tar -xzOf "$bundle" ./slow_bench.log) || fail "the killed benchmark's output is lost"
grep -qx 'args: --tiles a=1,b=2 --variants ws' <(tar -xzOf "$bundle" ./fake_bench.log) ||
  fail "TEGULA_ARGS_fake_bench did not reach the benchmark"
grep -q '^\[ RUN      \] A.After' <(tar -xzOf "$bundle" ./fake_test.log) || fail "A.After never ran"

# TEGULA_GPU_CHECK_FILTER: only the tests a filter selects (two of ten here).
OUT=$work/out3 TEGULA_GPU_CHECK_FILTER='A.T*' bash "$script" run fake_test >"$work/filter.log" 2>&1 ||
  fail "the filtered run failed: $(cat "$work/filter.log")"
grep -qE '^test +fake_test +passed 2, skipped 0, failed 0, lost 0, not run 0 of 2$' "$work/out3/summary.txt" ||
  fail "TEGULA_GPU_CHECK_FILTER did not select A.Two and A.Three: $(cat "$work/out3/summary.txt")"

# `benchmarks` runs the GEMM benchmark one type an item (with no time left,
# the resume line lists them), and such an item passes --dtypes and keeps
# its CSV apart; an unknown type is refused.
set +e
OUT=$work/out2 TEGULA_GPU_CHECK_SECONDS=1 bash "$script" run benchmarks >"$work/none.log" 2>&1
rc=$?
set -e
((rc == 3)) || fail "rc $rc, not 3 (items left) with no time to run any"
grep -qx 'resume with: bash scripts/gpu-check.sh run fake_bench quiet_bench slow_bench gemm-bf16 gemm-f16 gemm-tf32 gemm-tf32tn gemm-fp8 gemm-i8 attention-mma-sync' \
  "$work/out2/summary.txt" || fail "benchmarks did not split the GEMM benchmark by type"
OUT=$work/out2 bash "$script" run gemm-bf16 gemm-fp8 >"$work/gemm.log" 2>&1 || fail "the GEMM items failed: $(cat "$work/gemm.log")"
grep -qE '^benchmark +gemm-bf16 +rc=0' "$work/out2/summary.txt" || fail "gemm-bf16 did not run"
grep -qx 'gemm_bf16 1.0 ms ratio 0.5' "$work/out2/summary.txt" || fail "gemm-bf16's row is missing"
grep -qx 'gemm_fp8 1.0 ms ratio 0.5' "$work/out2/summary.txt" || fail "gemm-fp8's row is missing"
[[ $(tar -xzOf "$work/out2/gpu-check-gemm-bf16_gemm-fp8.tar.gz" ./gemm-fp8/gemm.csv) == "--dtypes fp8" ]] ||
  fail "gemm-fp8's CSV is not its own"
if OUT=$work/out2 bash "$script" run gemm-f64 >"$work/unknown-gemm.log" 2>&1; then fail "gemm-f64 was accepted"; fi
grep -q "'gemm-f64' is neither" "$work/unknown-gemm.log" || fail "no clear error for an unknown GEMM type"

# collect: the bundle under a results folder named by date and GPU.
TEGULA_RESULTS_DIR=$work/results bash "$script" collect "$work/out"
dest=$(find "$work/results" -mindepth 2 -maxdepth 2 -type d)
[[ $(basename "$dest") == tests_fake_bench_quiet_bench_slow_bench_fake_bench ]] || fail "collect put it in '$dest'"
[[ -f $dest/fake_test.log && -f $dest/summary.txt ]] || fail "collect lost files"
echo "gpu-check.sh run/collect: all checks passed"
