#!/usr/bin/env bash
# scripts/gpu-check.sh's `run` and `collect` on a made-up payload (shell
# scripts standing in for a GoogleTest binary and benchmarks), so the logic
# that a lent GPU machine depends on - sharding, counting, the call's time
# budget, at most 8 files back, the bundle, resuming - is checked here,
# without a GPU: items, counts, a failing test, a benchmark killed at the
# budget, the items left and the command that resumes them.
set -euo pipefail
script=$1 # scripts/gpu-check.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/payload/bin" "$work/payload/lib" "$work/carry"

# Five tests, dealt to the shards as GoogleTest deals them: one skipped, one failing.
cat >"$work/payload/bin/fake_test" <<'TEST'
#!/usr/bin/env bash
total=${GTEST_TOTAL_SHARDS:-1} index=${GTEST_SHARD_INDEX:-0} i=0 rc=0
for t in A.One A.Two A.Three A.Skipped A.Fails; do
  if ((i++ % total == index)); then
    echo "[ RUN      ] $t"
    case $t in
      A.Skipped) echo "[  SKIPPED ] $t (0 ms)" ;;
      A.Fails) echo "[  FAILED  ] $t (3 ms)"; rc=1 ;;
      *) echo "[       OK ] $t (1 ms)" ;;
    esac
  fi
done
exit $rc
TEST
printf '#!/usr/bin/env bash\necho "fake_row 1.0 ms ratio 0.75"\n' >"$work/payload/bin/fake_bench"
printf '#!/usr/bin/env bash\necho "slow: started"\nsleep 600\n' >"$work/payload/bin/slow_bench"
chmod +x "$work/payload/bin/"*
tar -C "$work/payload" -cJf "$work/carry/payload.tar.xz" bin lib
printf 'test fake_test\nbenchmark fake_bench\nbenchmark slow_bench\n' >"$work/carry/programs.txt"
echo "abc1234" >"$work/carry/commit.txt"
export TEGULA_GPU_CARRY=$work/carry OUT=$work/out TEGULA_GPU_CHECK_SHARDS=3

fail() { echo "FAILED: $*"; exit 1; }

# Unknown items are refused before anything runs.
if bash "$script" run tests nosuch >"$work/unknown.log" 2>&1; then fail "an unknown item was accepted"; fi
grep -q "'nosuch' is neither a part" "$work/unknown.log" || fail "no clear error for an unknown item"

# tests + benchmarks with a 9 s budget: the slow benchmark is killed at the
# budget, and the fake benchmark asked for after it is left for the next call.
start=$SECONDS
set +e
TEGULA_GPU_CHECK_SECONDS=9 bash "$script" run tests fake_bench slow_bench fake_bench >"$work/run.log" 2>&1
rc=$?
set -e
cat "$work/run.log"
((SECONDS - start < 30)) || fail "the call ran $((SECONDS - start)) s with a 9 s budget"
((rc == 1)) || fail "rc $rc, not 1 (a test failed)"
summary=$work/out/summary.txt
[[ -f $summary ]] || fail "no summary.txt in \$OUT"
grep -qE '^test +fake_test +rc=1 +passed 3, skipped 1, failed 1$' "$summary" || fail "wrong test counts"
grep -qx '    failed: A.Fails' "$summary" || fail "the failing test is not named"
grep -qE '^benchmark +fake_bench +rc=0' "$summary" || fail "fake_bench did not run"
grep -qE '^benchmark +slow_bench +rc=(124|137) +TIMED OUT' "$summary" || fail "slow_bench was not stopped at the budget"
grep -qx 'resume with: bash scripts/gpu-check.sh run fake_bench' "$summary" || fail "no resume line"
grep -qx 'fake_row 1.0 ms ratio 0.75' "$summary" || fail "the benchmark's result row is missing"
grep -q '^command: bash scripts/gpu-check.sh run tests fake_bench slow_bench fake_bench' "$summary" ||
  fail "the command is not recorded"
# What comes back: at most 8 files, the logs in one bundle.
files=$(find "$work/out" -type f | wc -l)
((files <= 8)) || fail "$files files in \$OUT (the device tool returns 8)"
bundle=$work/out/gpu-check-tests_fake_bench_slow_bench_fake_bench.tar.gz
tar -tzf "$bundle" >"$work/bundle.txt"
for f in environment.log summary.txt fake_test.log fake_bench.log slow_bench.log results.txt; do
  grep -qx "./$f" "$work/bundle.txt" || fail "$f is not in the bundle"
done
grep -q '^slow: started' <(tar -xzOf "$bundle" ./slow_bench.log) || fail "the killed benchmark's output is lost"

# collect: the bundle under a results folder named by date and GPU.
TEGULA_RESULTS_DIR=$work/results bash "$script" collect "$work/out"
dest=$(find "$work/results" -mindepth 2 -maxdepth 2 -type d)
[[ $(basename "$dest") == tests_fake_bench_slow_bench_fake_bench ]] || fail "collect put it in '$dest'"
[[ -f $dest/fake_test.log && -f $dest/summary.txt ]] || fail "collect lost files"
echo "gpu-check.sh run/collect: all checks passed"
