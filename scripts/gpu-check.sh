#!/usr/bin/env bash
# GPU checks for a session that is lent a GPU machine (the device tool).
#
# The GPU machine has no LLVM/MLIR, so the programs are built HERE, against
# libtegula.so (LLVM and MLIR linked in statically: TEGULA_STATIC_LLVM), and
# carried there in an ignored folder that the device tool's `carry` takes
# along (64 MiB for the whole working tree).
#
#   here:   bash scripts/gpu-check.sh pack        # build, collect, compress, measure
#   there:  run(command="bash scripts/gpu-check.sh run tests", carry=[".gpu-carry"])
#           then "... run benchmarks", then "... run python" (one call cannot hold them all)
#   here:   bash scripts/gpu-check.sh collect DIR...   # the returned files -> benchmarks/results/
#
# Which programs: those the build marks as having GPU cases (test binaries
# declared with tegula_gtest(... GPU), benchmarks with tegula_benchmark(...
# GPU)), read from $BUILD_DIR/gpu-programs.txt - no list is kept here.
# `pack` copies them stripped, with their shared-library closure (less
# glibc), into one xz payload and refuses, with the measured size, when it
# would not fit. `run` unpacks into /tmp, runs what it is asked for (test
# binaries sharded across the cores, benchmarks one at a time, the Python
# steps) with LD_LIBRARY_PATH pointing there, inside the device call's limits
# (10 minutes, 8 files back), and ends with a one-screen summary.
# Sizes and what to do when it does not fit: docs/runtime.md.
set -uo pipefail
cd "$(dirname "$0")/.."
CARRY=${TEGULA_GPU_CARRY:-.gpu-carry} # another folder: test/scripts/gpu-check-test.sh
# The device tool's limit on what travels (tracked + untracked files + carry).
LIMIT=$((64 * 1024 * 1024))
mib() { bc -l <<<"scale=1; $1 / 1048576"; }

pack() {
  set -e
  local build=${BUILD_DIR:-build}
  if [[ ! -f "$build/build.ninja" ]]; then
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE:-RelWithDebInfo}
  fi
  if ! grep -qx 'TEGULA_STATIC_LLVM:BOOL=ON' "$build/CMakeCache.txt"; then
    echo "pack: $build is configured with TEGULA_STATIC_LLVM=OFF: its programs need Debian's" \
      "libLLVM/libMLIR (~60 MiB compressed), which do not fit; reconfigure with -DTEGULA_STATIC_LLVM=ON" >&2
    exit 2
  fi
  ninja -C "$build" -j "${TEGULA_JOBS:-$(nproc)}" gpu-programs
  grep -qsx "/$CARRY/" .git/info/exclude || { mkdir -p .git/info; echo "/$CARRY/" >>.git/info/exclude; }
  rm -rf "$CARRY" && mkdir -p "$CARRY/bin" "$CARRY/lib"
  local paths=() kind path
  while read -r kind path; do
    [[ -n $kind ]] || continue
    paths+=("$path")
    # No debug info there: it is most of an unstripped binary.
    strip -o "$CARRY/bin/$(basename "$path")" "$path"
    echo "$kind $(basename "$path")" >>"$CARRY/programs.txt"
  done <"$build/gpu-programs.txt"
  # The closure of shared libraries, less glibc (the GPU machine's own is
  # newer: Ubuntu 24.04, glibc 2.39 >= this machine's 2.36).
  ldd "${paths[@]}" | awk '$3 ~ /^\// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*)\.so' |
    while read -r lib; do strip --strip-unneeded -o "$CARRY/lib/$(basename "$lib")" "$lib"; done
  # fmt's headers: `run` builds the Python extensions there when the
  # carried ones do not match that machine's Python (they include fmt).
  mkdir -p "$CARRY/include" && cp -r /usr/include/fmt "$CARRY/include/"
  # The Python package (its extensions find libtegula.so through
  # LD_LIBRARY_PATH there): the launch-overhead script and pytest use it.
  local parts=(bin lib include)
  if [[ -d $build/python/tegula ]]; then
    ninja -C "$build" _tegula examples _gpt tegula_python_files
    mkdir -p "$CARRY/python/tegula"
    # GPT-2's model code, for a tegula._gpt built there (python_package).
    strip --strip-debug -o "$CARRY/lib/libTegulaGpt.a" "$build/models/gpt/libTegulaGpt.a"
    cp "$build"/python/tegula/*.py "$CARRY/python/tegula/"
    for so in "$build"/python/tegula/*.so; do strip --strip-unneeded -o "$CARRY/python/tegula/$(basename "$so")" "$so"; done
    parts+=(python)
  fi
  echo "programs: $(tr '\n' ' ' <"$CARRY/programs.txt")"
  echo "raw sizes (stripped):"
  du -b "$CARRY"/bin/* "$CARRY"/lib/* | sort -n | awk '{printf "  %6.1f MiB  %s\n", $1 / 1048576, $2}'
  echo "compressing (xz -9) ..."
  tar -C "$CARRY" -cf - "${parts[@]}" | xz -9 -T"${TEGULA_JOBS:-$(nproc)}" >"$CARRY.tar.xz.tmp"
  rm -rf "$CARRY"/bin "$CARRY"/lib "$CARRY"/python "$CARRY"/include
  mv "$CARRY.tar.xz.tmp" "$CARRY/payload.tar.xz"
  # The GPU machine gets no .git: say here what was built.
  echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . && echo '' || echo ' (+ working tree)')" \
    >"$CARRY/commit.txt"
  local payload tree total
  payload=$(stat -c %s "$CARRY/payload.tar.xz")
  tree=$(git ls-files -co --exclude-standard -z | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
  total=$((payload + tree))
  echo "payload $(mib "$payload") MiB + working tree $(mib "$tree") MiB = $(mib "$total") MiB" \
    "(limit $((LIMIT / 1048576)) MiB)"
  if ((total > LIMIT)); then
    echo "pack: does NOT fit by $(mib $((total - LIMIT))) MiB: carry fewer programs" \
      "(docs/runtime.md, \"Running on a GPU machine\")" >&2
    exit 2
  fi
  echo "fits: run(command=\"bash scripts/gpu-check.sh run tests\", carry=[\"$CARRY\"]), then run benchmarks, then run python"
}

# python_package ROOT: prints the PYTHONPATH under which `import tegula`
# works with this machine's python3 - the carried package when its
# extensions match this Python, else the package built here from the tree
# (python/src) against the carried libtegula.so: C++ compiler, pybind11 and
# Python's headers from this machine, fmt's headers carried. The build's
# log is ROOT/python-build.log. Prints nothing when neither works.
# module_sources NAME - the sources of the Python extension NAME, as
# python/CMakeLists.txt's tegula_add_python_module(NAME ...) lists them (one
# list to keep: a source added there is compiled here too).
module_sources() {
  local sources
  sources=$(sed -n "s/^tegula_add_python_module($1 \\(.*\\) OUTPUT_DIRECTORY.*/\\1/p" python/CMakeLists.txt)
  [[ -n $sources ]] || { echo "module_sources: no tegula_add_python_module($1 ...) in python/CMakeLists.txt" >&2; return 1; }
  printf 'python/%s\n' $sources
}

python_package() {
  local root=$1
  if PYTHONPATH="$root/python" python3 -c "import tegula.examples" 2>/dev/null; then
    echo "$root/python"
    return
  fi
  local py=$root/python-here log=$root/python-build.log
  rm -rf "$py" && mkdir -p "$py/tegula" "$root/pylib"
  {
    # Only Tegula's libraries: the extensions built here use this machine's
    # libstdc++, which is newer than the carried one.
    ln -sf "$root"/lib/libtegula.so "$root"/lib/libfmt.so* "$root/pylib/"
    local fmt=$(cd "$root/pylib" && ls libfmt.so.* | head -1)
    ln -sf "$fmt" "$root/pylib/libfmt.so"
    cp python/tegula/*.py python/tegula/*.pyi python/tegula/py.typed "$py/tegula/"
    local suffix flags
    suffix=$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))') &&
      flags="-O2 -std=c++20 -shared -fPIC -fvisibility=hidden -DFMT_SHARED -Iinclude -I. -I$root/include $(python3 -m pybind11 --includes)" &&
      { c++ $flags $(module_sources _tegula) -L"$root/pylib" -ltegula -lfmt \
          -o "$py/tegula/_tegula$suffix" & local core=$!
        c++ $flags $(module_sources _gpt) "$root/lib/libTegulaGpt.a" -L"$root/pylib" -ltegula -lfmt \
          -o "$py/tegula/_gpt$suffix" & local gpt=$!
        c++ $flags $(module_sources examples) -L"$root/pylib" -ltegula -lfmt -o "$py/tegula/examples$suffix"
        local examples=$?
        wait $core && wait $gpt && ((examples == 0)); } &&
      cat >"$py/tegula/_build_config.py" <<CONFIG
# Written by scripts/gpu-check.sh: tegula.load on the GPU machine.
import sysconfig as _sysconfig
import pybind11 as _pybind11
CXX = "$(command -v c++)"
CXX_STANDARD = "c++20"
INCLUDE_DIRS = ["$PWD/include", "$PWD", "$root/include", _pybind11.get_include(), _sysconfig.get_paths()["include"]]
LIBRARY_DIR = "$root/pylib"
LIBRARIES = ["tegula", "fmt"]
CUDA_INCLUDE_DIRS = []
CONFIG
  } >"$log" 2>&1 || return 0
  LD_LIBRARY_PATH="$root/pylib" PYTHONPATH="$py" python3 -c "import tegula.examples" >>"$log" 2>&1 &&
    echo "$py"
}

# What `run` can be asked for: a part names several items, an item is one
# program (a carried test binary or benchmark) or one Python step.
PYTHON_ITEMS="torch-reference gpt2-torch python-launch-overhead python-gpt2-train pytest"
# The GEMM benchmark's types (benchmarks/gemm.cpp's --dtypes): in `benchmarks`
# it runs one type an item (gemm-bf16, ...), since all of them together
# outgrow a call; `run gemm` still runs it whole. TEGULA_GEMM_CONFIGS (e.g.
# 'sk,c2,pers s4') narrows each to the configurations named so.
GEMM_DTYPES="bf16 f16 tf32 tf32tn fp8 i8"
# A benchmark's own arguments: TEGULA_ARGS_<item, - as _> (word-split), e.g.
# TEGULA_ARGS_gpt2_train='--dtype bf16 --variants ws --tiles attention_fwd_ws=0'.
items_of() {
  case $1 in
    all) items_of tests && items_of benchmarks && items_of python ;;
    tests) awk '$1 == "test" {print $2}' "$CARRY/programs.txt" ;;
    benchmarks) awk '$1 == "benchmark" {print $2}' "$CARRY/programs.txt" | while read -r b; do
        if [[ $b == gemm ]]; then printf 'gemm-%s\n' $GEMM_DTYPES; else echo "$b"; fi
      done
      echo attention-mma-sync ;;
    python) printf '%s\n' $PYTHON_ITEMS ;;
    attention-mma-sync) echo "$1" ;;
    *) if awk -v n="$1" '$2 == n {found = 1} END {exit !found}' "$CARRY/programs.txt" ||
         [[ " $PYTHON_ITEMS " == *" $1 "* ]] ||
         [[ $1 == gemm-* && " $GEMM_DTYPES " == *" ${1#gemm-} "* ]]; then echo "$1"
       else
         echo "run: '$1' is neither a part (all, tests, benchmarks, python) nor a program of the payload" \
           "($(awk '{printf "%s ", $2}' "$CARRY/programs.txt")) nor a GEMM type" \
           "($(printf 'gemm-%s ' $GEMM_DTYPES)) nor a Python step ($PYTHON_ITEMS)" >&2
         return 1
       fi ;;
  esac
}

# run [PART|ITEM ...] - on the GPU machine (default: all). One device call
# may run 10 minutes and bring back 8 files, so: the call stops starting
# items when TEGULA_GPU_CHECK_SECONDS (default 540) are spent, kills one that
# outruns them, and says which items are left ("resume with: ..."); $OUT
# holds three files - summary.txt, gpu-check-LABEL.tar.gz (every log and
# CSV so far, re-made after each item) and running.log (the item running
# now, so a call killed from outside still returns its output).
run() {
  SECONDS=0 # the budget counts from here: unpacking is part of the call
  # TEGULA_GPU_CHECK_TMP: where the payload and the logs go (two runs at
  # once need two; test/scripts/gpu-check-test.sh gives each its own).
  local tmp=${TEGULA_GPU_CHECK_TMP:-/tmp}
  local out=${OUT:-$tmp/tegula-gpu-out} root=$tmp/tegula-carry system_libs=${LD_LIBRARY_PATH:-}
  local budget=${TEGULA_GPU_CHECK_SECONDS:-540}
  # Of 540 s: 18 kept for the summary and the bundle; no item starts with
  # less than 21 left.
  local reserve=$((budget / 30)) least=$((budget / 25 > 2 ? budget / 25 : 2))
  [[ -f $CARRY/payload.tar.xz ]] || { echo "no $CARRY/payload.tar.xz: run 'gpu-check.sh pack' first"; exit 1; }
  (($# > 0)) || set -- all
  local items=() arg
  for arg; do
    local more
    more=$(items_of "$arg") || exit 64
    mapfile -t -O ${#items[@]} items <<<"$more"
  done
  local label
  label=$(IFS=_; echo "$*")
  ((${#label} <= 60)) || label=selection
  local logs=$tmp/tegula-gpu-logs bundle=$out/gpu-check-$label.tar.gz
  rm -rf "$root" "$logs" # nothing left from an earlier payload on a warm machine
  mkdir -p "$out" "$root" "$logs"
  tar -C "$root" -xJf "$CARRY/payload.tar.xz"
  export LD_LIBRARY_PATH="$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export TEGULA_CACHE_DIR=$tmp/tegula-kernel-cache
  export TEGULA_BENCH_OUT=$logs # benchmarks write their CSVs beside the logs
  # ptxas and libdevice come from the image's toolkit (CUDA_HOME, default
  # /usr/local/cuda); without ptxas the driver JIT-compiles the PTX.
  if [[ -z ${CUDA_HOME:-} && ! -d /usr/local/cuda ]] && command -v nvcc >/dev/null; then
    export CUDA_HOME=$(dirname "$(dirname "$(command -v nvcc)")")
  fi
  export PATH="$PATH:${CUDA_HOME:-/usr/local/cuda}/bin"
  local hopper=0
  nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | grep -q '^9\.0' && hopper=1
  {
    echo "commit: $(cat "$CARRY/commit.txt" 2>/dev/null || echo unknown)"
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "command: bash scripts/gpu-check.sh run $* (budget ${budget} s)"
    echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null ||
      echo 'none found (no nvidia-smi)')"
    echo "toolkit: ${CUDA_HOME:-/usr/local/cuda} ($(ptxas --version 2>/dev/null | tail -1 || echo 'no ptxas'))"
    echo "cpus: $(nproc); unresolved libraries: $(for b in "$root"/bin/*; do ldd "$b" 2>/dev/null; done | grep -c "not found")"
    echo "items: ${items[*]}"
  } | tee "$logs/environment.log"

  local rows=() notrun=() status=0 pypath= pytried=0
  left() { echo $((budget - SECONDS - reserve)); }
  save() { # the summary and the bundle, after every item
    {
      cat "$logs/environment.log"
      echo
      printf '%s\n' "${rows[@]}"
      ((${#notrun[@]} == 0)) || {
        echo "not run (the call's ${budget} s were spent): ${notrun[*]}"
        echo "resume with: bash scripts/gpu-check.sh run ${notrun[*]}"
      }
    } >"$logs/summary.txt"
    cp "$logs/summary.txt" "$out/summary.txt"
    tar -C "$logs" -czf "$bundle.tmp" . && mv "$bundle.tmp" "$bundle"
  }
  # stream NAME CMD...: runs CMD with the time left, its output in
  # $OUT/running.log (so a call killed from outside still returns it), then
  # in $logs/NAME.log, its last lines on the screen; sets rc and why.
  stream() {
    local name=$1 log=$out/running.log
    shift
    run_watched "$log" "$logs/stalled" "$@"
    rc=$?
    why=
    if [[ -f $logs/stalled ]]; then
      why="STALLED (no output for ${TEGULA_GPU_CHECK_STALL:-120} s: killed) "
      rm "$logs/stalled"
    elif ((rc == 124 || rc == 137)); then
      why="TIMED OUT (the call's budget) "
    fi
    tail -n 5 "$log"
    mv "$log" "$logs/$name.log"
  }
  # The Python package for this machine's Python, built on first use; sets
  # pypath (empty when it does not import).
  python_path() {
    ((pytried)) && return
    pytried=1
    pypath=$(python_package "$root")
    if [[ -n $pypath ]]; then
      echo "tegula imports with $(python3 --version 2>&1) from $pypath"
    else
      echo "the tegula package does not import with $(python3 --version 2>&1):"
      cat "$root/python-build.log"
    fi | tee "$logs/python_package.log"
  }

  local item rc kind why
  for item in "${items[@]}"; do
    if (($(left) < least)); then
      notrun+=("$item")
      continue
    fi
    kind=$(awk -v n="$item" '$2 == n {print $1}' "$CARRY/programs.txt")
    echo "== $item ($(left) s left)"
    rc=0
    case $kind:$item in
      test:*) run_test_binary "$item" ;;
      benchmark:*)
        local argsVar="TEGULA_ARGS_${item//-/_}"
        # shellcheck disable=SC2086 # the arguments are words
        stream "$item" "$root/bin/$item" ${!argsVar:-}
        rows+=("$(printf '%-9s %-24s rc=%-3s %s' benchmark "$item" "$rc" "$why")")
        grep -hE '^[a-z][a-z0-9_]* +.*[0-9]\.[0-9]+$' "$logs/$item.log" >>"$logs/results.txt" ;;
      :gemm-*)
        # One type of the GEMM benchmark, its CSV in a folder of its own.
        mkdir -p "$logs/$item"
        TEGULA_BENCH_OUT=$logs/$item stream "$item" "$root/bin/gemm" --dtypes "${item#gemm-}"
        rows+=("$(printf '%-9s %-24s rc=%-3s %s' benchmark "$item" "$rc" "$why")")
        grep -hE '^[a-z][a-z0-9_]* +.*[0-9]\.[0-9]+$' "$logs/$item.log" >>"$logs/results.txt" ;;
      :attention-mma-sync)
        # Hopper: attention runs on wgmma in `attention`; again on mma.sync
        # for the comparison in the same session (gemm compares both itself).
        if ((!hopper)) || [[ ! -x $root/bin/attention ]]; then
          rows+=("$(printf '%-9s %-24s skipped: not a Hopper GPU' extra "$item")")
        else
          mkdir -p "$logs/mma-sync"
          TEGULA_WGMMA=0 TEGULA_BENCH_OUT=$logs/mma-sync stream "$item" "$root/bin/attention"
          rows+=("$(printf '%-9s %-24s rc=%-3s %s' extra "$item" "$rc" "$why")")
          grep -hE '^[a-z][a-z0-9_]* +.*[0-9]\.[0-9]+$' "$logs/$item.log" | sed 's/^/mma.sync: /' >>"$logs/results.txt"
        fi ;;
      :torch-reference | :gpt2-torch)
        # torch on the same shapes in the same session, where the image has it.
        PYTHONUNBUFFERED=1 stream "$item" python3 "benchmarks/${item//-/_}.py"
        rows+=("$(printf '%-9s %-24s rc=%-3s %s' reference "$item" "$rc" "$why")")
        grep -hE '^(torch|gpt2)_' "$logs/$item.log" >>"$logs/results.txt"
        rc=0 ;; # torch missing or failing is reported, not a Tegula failure
      :python-launch-overhead | :python-gpt2-train | :pytest)
        local py libs
        python_path
        py=$pypath
        # The extensions built here link this machine's libstdc++: only
        # Tegula's libraries ahead of it.
        libs="$root/pylib${system_libs:+:$system_libs}"
        [[ $py == "$root/python" ]] && libs=$LD_LIBRARY_PATH
        if [[ -z $py ]]; then
          rc=1
          rows+=("$(printf '%-9s %-24s FAILED: the tegula package does not import (python_package.log)' python "$item")")
        elif [[ $item == pytest ]] && ! python3 -c "import pytest" 2>/dev/null; then
          rows+=("$(printf '%-9s %-24s skipped: no pytest for %s' python "$item" "$(python3 --version 2>&1)")")
        elif [[ $item == pytest ]]; then
          LD_LIBRARY_PATH=$libs PYTHONPATH=$py stream "$item" python3 -m pytest -q -rs python/tests
          rows+=("$(printf '%-9s %-24s rc=%-3s %s' python "$item" "$rc" "$why$(tail -1 "$logs/$item.log")")")
        elif [[ $item == python-gpt2-train ]]; then
          LD_LIBRARY_PATH=$libs PYTHONPATH=$py PYTHONUNBUFFERED=1 stream "$item" python3 benchmarks/gpt2_train.py
          rows+=("$(printf '%-9s %-24s rc=%-3s %s' python "$item" "$rc" "$why")")
          grep -hE '^gpt2_python_' "$logs/$item.log" >>"$logs/results.txt"
        else
          LD_LIBRARY_PATH=$libs PYTHONPATH=$py PYTHONUNBUFFERED=1 stream "$item" python3 benchmarks/launch_overhead.py
          rows+=("$(printf '%-9s %-24s rc=%-3s %s' python "$item" "$rc" "$why")")
          grep -hE '^launch_overhead_' "$logs/$item.log" >>"$logs/results.txt"
          rc=0
        fi ;;
    esac
    ((rc == 0)) || status=1
    save
  done
  [[ -f $logs/results.txt ]] && rows+=("" "results:" "$(cat "$logs/results.txt")")
  save
  echo
  echo "== summary =="
  sed 1,/^$/d "$logs/summary.txt"
  echo "logs: $out (gpu-check.sh collect DIR here puts them under benchmarks/results/)"
  # 1: something failed; 3: nothing failed, but items are left for another call.
  ((status == 0 && ${#notrun[@]} > 0)) && status=3
  exit $status
}


# A GoogleTest line that ends a test; "LOST" is ours: a test during which
# its process stalled (no output for TEGULA_GPU_CHECK_STALL s: a hung
# kernel), crashed or was killed at the budget.
TEST_END='^\[ +(OK|FAILED|SKIPPED|LOST) +\] [A-Za-z][^ ]*'

# watch_stall PID LOG MARKER: kills PID (a `timeout`, which passes the
# signal on) once LOG has not grown for TEGULA_GPU_CHECK_STALL seconds
# (default 120: no test or benchmark row takes that long), and creates MARKER.
watch_stall() {
  local pid=$1 log=$2 marker=$3 limit=${TEGULA_GPU_CHECK_STALL:-120} size last=-1 quiet=0
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    size=$(stat -c %s "$log" 2>/dev/null || echo 0)
    if ((size == last)); then quiet=$((quiet + 1)); else quiet=0 last=$size; fi
    if ((quiet >= limit)); then
      touch "$marker"
      kill -TERM "$pid" 2>/dev/null
      return
    fi
  done
}

# run_watched LOG MARKER CMD...: CMD with the call's time left, its output
# in LOG, stopped (and MARKER created) when it stalls; returns its status.
run_watched() {
  local log=$1 marker=$2
  shift 2
  timeout -k 10 "$(left)" "$@" </dev/null >"$log" 2>&1 &
  local pid=$!
  watch_stall "$pid" "$log" "$marker" &
  local watcher=$!
  wait "$pid"
  local s=$?
  kill "$watcher" 2>/dev/null
  wait "$watcher" 2>/dev/null
  return $s
}

# run_tests NAME LOG TESTS...: runs TESTS of binary NAME (by name, in one
# process), appending to LOG; when the process ends inside a test - stalled,
# crashed, killed - that test is marked LOST and the rest run again without it.
run_tests() {
  local name=$1 log=$2
  shift 2
  local todo=("$@") attempt=0 s
  while ((${#todo[@]} > 0)); do
    local part=$log.$attempt
    rm -f "$part.stalled"
    run_watched "$part" "$part.stalled" "$root/bin/$name" --gtest_color=no \
      --gtest_filter="$(IFS=:; echo "${todo[*]}")"
    s=$?
    cat "$part" >>"$log"
    local ran lost
    ran=$(grep -E "$TEST_END" "$part" | sed -E 's/^\[ +[A-Z]+ +\] ([^ ,]+).*/\1/')
    lost=$(grep -E '^\[ RUN +\] ' "$part" | sed -E 's/^\[ RUN +\] //' | grep -vxF -f <(echo "$ran") | tail -1)
    local why="exit status $s"
    [[ -f $part.stalled ]] && why="no output for ${TEGULA_GPU_CHECK_STALL:-120} s: killed"
    ((s == 124 || s == 137)) && [[ ! -f $part.stalled ]] && why="killed at the call's budget"
    rm -f "$part" "$part.stalled"
    [[ -n $lost ]] || break # it ended between tests: whatever is left failed to start, not ours to retry
    echo "[   LOST   ] $lost ($why)" >>"$log"
    [[ $why == "killed at the call's budget" ]] && break
    mapfile -t todo < <(printf '%s\n' "${todo[@]}" | grep -vxF -f <(printf '%s\n' $ran "$lost"))
    [[ -n ${todo[0]:-} ]] || todo=()
    ((${#todo[@]} == 0)) || echo "---- again without $lost: ${#todo[@]} test(s) left" >>"$log"
    attempt=$((attempt + 1))
    (($(left) >= least)) || break
  done
  return 0
}

# bisect_failures: run_test_binary's last step, with its NAME, failed,
# alone, ended and shards in scope; fills its `verdicts` ("test|verdict").
# Which Hopper path a failure depends on (the likeliest first-contact
# failures are new TMA / mbarrier / wgmma code): on a Hopper GPU each test
# that failed on its own, or was lost, runs again with attention's
# softmax overlap off (the newest code), TMA off, then wgmma off (sm_80's
# code; the warpgroups' turns are off by default),
# each within the stall limit, all within a
# quarter of the time left. A test that checks the generated code fails
# under a switch for that reason too: the verdict names the first failing
# line.
BISECT_SWITCHES="TEGULA_OVERLAP_DOTS=0 TEGULA_TMA=0 TEGULA_WGMMA=0"
bisect_failures() {
  local suspects=() sw t i
  for t in "${failed[@]}"; do [[ " ${alone[*]} " == *" $t "* ]] || suspects+=("$t"); done
  mapfile -t -O "${#suspects[@]}" suspects < <(awk '$1 == "LOST" {print $2}' <<<"$ended")
  if ((hopper || ${TEGULA_GPU_CHECK_BISECT:-0})) && ((${#suspects[@]} > 0 && ${#suspects[@]} <= 16)) &&
    (($(left) >= least)); then
    local deadline=$((SECONDS + $(left) / 4)) limit
    for ((i = 0; i < ${#suspects[@]}; i++)); do
      for sw in $BISECT_SWITCHES; do
        while (($(jobs -rp | wc -l) >= shards)); do wait -n; done
        limit=$((deadline - SECONDS))
        ((limit > ${TEGULA_GPU_CHECK_STALL:-120})) && limit=${TEGULA_GPU_CHECK_STALL:-120}
        ((limit > 0)) || break 2
        local f=$logs/$name.bisect$i.${sw%%=*}.log
        { env "$sw" timeout -k 5 "$limit" "$root/bin/$name" --gtest_color=no --gtest_filter="${suspects[$i]}" \
            </dev/null >"$f" 2>&1; echo $? >"$f.status"; } &
      done
    done
    wait
    for ((i = 0; i < ${#suspects[@]}; i++)); do
      local verdict=""
      for sw in $BISECT_SWITCHES; do
        local f=$logs/$name.bisect$i.${sw%%=*}.log outcome="not run"
        if [[ -f $f ]]; then
          # ", where GetParam() = ..." follows a parameterised test's name.
          if grep -qE "^\[ +OK +\] ${suspects[$i]}[ ,]" "$f"; then outcome=passes
          elif grep -qE "^\[ +SKIPPED +\] ${suspects[$i]}[ ,]" "$f"; then outcome=skips
          elif grep -qE "^\[ +FAILED +\] ${suspects[$i]}[ ,]" "$f"; then
            local at
            at=$(grep -m1 -oE '[^ /:]+\.(cpp|h):[0-9]+: Failure' "$f" | sed 's/: Failure$//')
            outcome="fails${at:+ at $at}"
          else
            local status
            status=$(cat "$f.status" 2>/dev/null)
            case $status in
              124 | 137) outcome="does not finish" ;;
              0) outcome="ends without a result" ;;
              *) outcome="crashes (exit status ${status:-unknown})" ;;
            esac
          fi
          { echo "---- ${suspects[$i]} again with $sw: $outcome"; cat "$f"; } >>"$logs/$name.log"
          rm -f "$f" "$f.status"
        fi
        verdict+="${verdict:+, }$sw $outcome"
      done
      verdicts+=("${suspects[$i]}|$verdict")
    done
  fi
}

# run_test_binary NAME: the binary's tests dealt across the machine's cores
# (each share a process with its own CUDA context), one log for all of them;
# a test that hangs or crashes loses itself, not the rest of its share.
# Sets rc and adds a row. TEGULA_GPU_CHECK_FILTER (a GoogleTest filter,
# e.g. '*/gpu:Gpu/TensorDescriptor.*') runs only the tests it selects, in
# every test binary of the call (a re-run of a few after a fix).
run_test_binary() {
  local name=$1 shards=${TEGULA_GPU_CHECK_SHARDS:-$(nproc)} i
  ((shards > 12)) && shards=12 # 12 CUDA contexts of ~0.5 GiB; compiles and simulations in parallel
  local tests=()
  mapfile -t tests < <("$root/bin/$name" --gtest_list_tests \
    ${TEGULA_GPU_CHECK_FILTER:+"--gtest_filter=$TEGULA_GPU_CHECK_FILTER"} 2>/dev/null |
    awk '/^[^ ].*\.$/ {suite = $1; next} /^  [^ ]/ {print suite $1}')
  ((shards > ${#tests[@]})) && shards=${#tests[@]}
  for ((i = 0; i < shards; i++)); do
    local share=()
    for ((j = i; j < ${#tests[@]}; j += shards)); do share+=("${tests[$j]}"); done
    : >"$logs/$name.shard$i.log"
    run_tests "$name" "$logs/$name.shard$i.log" "${share[@]}" &
  done
  wait
  for ((i = 0; i < shards; i++)); do
    echo "---- share $i of $shards"
    cat "$logs/$name.shard$i.log"
    rm "$logs/$name.shard$i.log"
  done >"$logs/$name.log"
  # Counted test by test (GoogleTest's totals are per process).
  local ended
  ended=$(grep -E "$TEST_END" "$logs/$name.log" | sed -E 's/^\[ +([A-Z]+) +\] ([^ ,]+).*/\1 \2/' | sort -u -k2)
  local counts
  counts=$(awk -v total=${#tests[@]} '{n[$1]++} END {
      printf "passed %d, skipped %d, failed %d, lost %d, not run %d of %d",
        n["OK"], n["SKIPPED"], n["FAILED"], n["LOST"], total - NR, total}' <<<"$ended")
  [[ -n $ended ]] || counts="passed 0 ... nothing ran (${#tests[@]} listed)"
  rc=0
  [[ $counts == *", failed 0, lost 0, not run 0 of"* ]] || rc=1
  rows+=("$(printf '%-9s %-24s %s' test "$name" "$counts")")
  # A failed CUDA call (an illegal address, say) leaves its context broken,
  # and every later test of that process fails with it: each failed test
  # runs again alone, so the log says which failed on its own.
  local failed=() alone=()
  mapfile -t failed < <(awk '$1 == "FAILED" {print $2}' <<<"$ended")
  if ((${#failed[@]} > 0 && ${#failed[@]} <= 64)) && (($(left) >= least)); then
    for ((i = 0; i < ${#failed[@]}; i++)); do
      while (($(jobs -rp | wc -l) >= shards)); do wait -n; done
      timeout -k 10 "$(left)" "$root/bin/$name" --gtest_color=no --gtest_filter="${failed[$i]}" \
        </dev/null >"$logs/$name.alone$i.log" 2>&1 &
    done
    wait
    for ((i = 0; i < ${#failed[@]}; i++)); do
      if grep -qE "^\[ +OK +\] ${failed[$i]}[ ,]" "$logs/$name.alone$i.log"; then
        alone+=("${failed[$i]}")
      fi
      { echo "---- ${failed[$i]} again, alone"; cat "$logs/$name.alone$i.log"; } >>"$logs/$name.log"
      rm "$logs/$name.alone$i.log"
    done
  fi
  local verdicts=() t
  bisect_failures
  local bad
  bad=$(grep -E '^\[ +(FAILED|LOST) +\] [A-Za-z][^ ]*.*\)$' "$logs/$name.log" |
    sed -E 's/^\[ +FAILED +\] ([^ ,]+).*/    failed: \1/; s/^\[ +LOST +\] ([^ ,]+) \((.*)\)$/    lost: \1 (\2)/' | sort -u)
  for t in "${alone[@]}"; do
    bad=$(sed "s|^    failed: $t\$|    failed: $t (passed alone: an earlier test broke its process's context)|" <<<"$bad")
  done
  local v
  for v in "${verdicts[@]}"; do
    bad=$(awk -v t="${v%%|*}" -v note="    [${v#*|}]" '{print} $2 == t {print note}' <<<"$bad")
  done
  [[ -z $bad ]] || { rows+=("$bad"); echo "$bad"; }
}

# collect DIR...: here, after a device call - the bundles it brought back
# (files_at) unpacked under benchmarks/results/DATE-GPU/LABEL/, where
# they are committed beside a README that reads them.
collect() {
  (($# > 0)) || { echo "usage: $0 collect DIR... (the folders the device tool returned)" >&2; exit 64; }
  local dir bundle n=0
  for dir; do
    for bundle in "$dir"/gpu-check-*.tar.gz; do
      [[ -f $bundle ]] || continue
      local tmp label date gpu dest
      tmp=$(mktemp -d)
      tar -C "$tmp" -xzf "$bundle"
      label=$(basename "$bundle" .tar.gz)
      label=${label#gpu-check-}
      date=$(awk '/^date:/ {print $2}' "$tmp/environment.log")
      gpu=$(awk -F': ' '/^gpu:/ {split($2, f, ","); print f[1]}' "$tmp/environment.log" |
        tr 'A-Z' 'a-z' | sed -E 's/nvidia //; s/[^a-z0-9]+/-/g; s/^-|-$//g')
      dest=${TEGULA_RESULTS_DIR:-benchmarks/results}/${date:-undated}-${gpu:-gpu}/$label
      mkdir -p "$dest"
      cp -r "$tmp"/. "$dest"/
      # A call killed from outside left the item it was running here.
      [[ -f $dir/running.log ]] && cp "$dir/running.log" "$dest/killed-while-running.log"
      # summary.txt beside the bundle is newer than the one inside it.
      [[ -f $dir/summary.txt ]] && cp "$dir/summary.txt" "$dest/summary.txt"
      rm -rf "$tmp"
      echo "$bundle -> $dest"
      n=$((n + 1))
    done
  done
  ((n > 0)) || { echo "collect: no gpu-check-*.tar.gz in $*" >&2; exit 1; }
}

case "${1:-}" in
  pack) shift; pack "$@" ;;
  python-package) shift; python_package "$@" ;; # ROOT: what `run` does for Python, alone
  run) shift; run "$@" ;;
  collect) shift; collect "$@" ;;
  *) echo "usage: $0 pack | run [all|tests|benchmarks|python|ITEM ...] | collect DIR..." >&2; exit 64 ;;
esac
