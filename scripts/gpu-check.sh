#!/usr/bin/env bash
# GPU checks for a session that is lent a GPU machine (the device tool).
#
# The GPU machine has no LLVM/MLIR, so the programs are built HERE, against
# libtegula.so (LLVM and MLIR linked in statically: TEGULA_STATIC_LLVM), and
# carried there in an ignored folder that the device tool's `carry` takes
# along (64 MiB for the whole working tree).
#
#   here:   bash scripts/gpu-check.sh pack        # build, collect, compress, measure
#   there:  run(command="bash scripts/gpu-check.sh run", carry=[".gpu-carry"])
#
# Which programs: those the build marks as having GPU cases (test binaries
# declared with tegula_gtest(... GPU), benchmarks with tegula_benchmark(...
# GPU)), read from $BUILD_DIR/gpu-programs.txt - no list is kept here.
# `pack` copies them stripped, with their shared-library closure (less
# glibc), into one xz payload and refuses, with the measured size, when it
# would not fit. `run` unpacks into /tmp, runs every test binary and every
# benchmark with LD_LIBRARY_PATH pointing there, writes one log per program
# under $OUT (when set) and ends with a one-screen summary.
# Sizes and what to do when it does not fit: docs/runtime.md.
set -uo pipefail
cd "$(dirname "$0")/.."
CARRY=.gpu-carry
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
    ninja -C "$build" _tegula examples tegula_python_files
    mkdir -p "$CARRY/python/tegula"
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
  echo "fits: run(command=\"bash scripts/gpu-check.sh run\", carry=[\"$CARRY\"])"
}

# python_package ROOT: prints the PYTHONPATH under which `import tegula`
# works with this machine's python3 - the carried package when its
# extensions match this Python, else the package built here from the tree
# (python/src) against the carried libtegula.so: C++ compiler, pybind11 and
# Python's headers from this machine, fmt's headers carried. The build's
# log is ROOT/python-build.log. Prints nothing when neither works.
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
      { c++ $flags python/src/Module.cpp python/src/Arguments.cpp -L"$root/pylib" -ltegula -lfmt \
          -o "$py/tegula/_tegula$suffix" & local core=$!
        c++ $flags python/src/Examples.cpp -L"$root/pylib" -ltegula -lfmt -o "$py/tegula/examples$suffix"
        local examples=$?
        wait $core && ((examples == 0)); } &&
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

run() {
  local out=${OUT:-/tmp/tegula-gpu-out} root=/tmp/tegula-carry system_libs=${LD_LIBRARY_PATH:-}
  [[ -f $CARRY/payload.tar.xz ]] || { echo "no $CARRY/payload.tar.xz: run 'gpu-check.sh pack' first"; exit 1; }
  rm -rf "$root" # nothing left from an earlier payload on a warm machine
  mkdir -p "$out" "$root"
  tar -C "$root" -xJf "$CARRY/payload.tar.xz"
  export LD_LIBRARY_PATH="$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export TEGULA_CACHE_DIR=/tmp/tegula-kernel-cache
  export TEGULA_BENCH_OUT=$out # benchmarks write their CSVs beside the logs
  # ptxas and libdevice come from the image's toolkit (CUDA_HOME, default
  # /usr/local/cuda); without ptxas the driver JIT-compiles the PTX.
  if [[ -z ${CUDA_HOME:-} && ! -d /usr/local/cuda ]] && command -v nvcc >/dev/null; then
    export CUDA_HOME=$(dirname "$(dirname "$(command -v nvcc)")")
  fi
  export PATH="$PATH:${CUDA_HOME:-/usr/local/cuda}/bin"
  {
    echo "commit: $(cat "$CARRY/commit.txt" 2>/dev/null || echo unknown)"
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1)"
    echo "toolkit: ${CUDA_HOME:-/usr/local/cuda} ($(ptxas --version 2>/dev/null | tail -1 || echo 'no ptxas'))"
    echo "unresolved libraries: $(for b in "$root"/bin/*; do ldd "$b"; done | grep -c 'not found')"
  } | tee "$out/environment.log"
  local rows=() status=0 kind name
  while read -r kind name; do
    local s=0 log=$out/$name.log
    echo "== $kind $name"
    if [[ $kind == test ]]; then
      "$root/bin/$name" --gtest_color=no </dev/null 2>&1 | tee "$log" || s=$?
      rows+=("$(printf '%-9s %-22s rc=%-3s %s' "$kind" "$name" "$s" "$(awk '
        /^\[  PASSED  \] [0-9]+ test/ {p = $4} /^\[  SKIPPED \] [0-9]+ test/ {k = $4}
        /^\[  FAILED  \] [0-9]+ test/ {f = $4}
        END {printf "passed %d, skipped %d, failed %d", p, k, f}' "$log")")")
    else
      "$root/bin/$name" </dev/null 2>&1 | tee "$log" || s=$?
      rows+=("$(printf '%-9s %-22s rc=%-3s (log: %s)' "$kind" "$name" "$s" "$log")")
    fi
    ((s == 0)) || status=1
  done <"$CARRY/programs.txt"
  # Hopper: attention runs on wgmma above; again on mma.sync (TEGULA_WGMMA=0)
  # for the comparison in the same session. (gemm compares both itself.)
  if [[ -x $root/bin/attention ]] &&
    nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | grep -q '^9\.0'; then
    echo "== benchmark attention with TEGULA_WGMMA=0 (mma.sync)"
    mkdir -p "$out/mma-sync"
    TEGULA_WGMMA=0 TEGULA_BENCH_OUT=$out/mma-sync "$root/bin/attention" </dev/null 2>&1 |
      tee "$out/attention_mma_sync.log" || status=1
  fi
  # torch on the same shapes in the same session, where the image has it.
  echo "== reference torch_reference.py"
  python3 benchmarks/torch_reference.py </dev/null 2>&1 | tee "$out/torch_reference.log" || true
  echo "== reference gpt2_torch.py"
  python3 benchmarks/gpt2_torch.py </dev/null 2>&1 | tee "$out/gpt2_torch.log" || true
  # Python: the launch overhead, and the pytest suite on the GPU - with the
  # package built for this machine's Python when the carried one does not
  # import (the build's Python is not this one).
  echo "== python package"
  local pypath
  pypath=$(python_package "$root")
  if [[ -n $pypath ]]; then
    echo "tegula imports with $(python3 --version 2>&1) from $pypath" | tee "$out/python_package.log"
  else
    { echo "the tegula package does not import with $(python3 --version 2>&1):"; cat "$root/python-build.log"; } |
      tee "$out/python_package.log"
  fi
  # The extensions built here link this machine's libstdc++: only Tegula's
  # libraries ahead of it.
  local pylibs="$root/pylib${system_libs:+:$system_libs}"
  [[ $pypath == "$root/python" ]] && pylibs=$LD_LIBRARY_PATH
  echo "== python launch_overhead.py"
  LD_LIBRARY_PATH=$pylibs PYTHONPATH="$pypath" python3 benchmarks/launch_overhead.py </dev/null 2>&1 |
    tee "$out/launch_overhead_py.log" || true
  echo "== python pytest"
  if [[ -n $pypath ]] && python3 -c "import pytest" 2>/dev/null; then
    LD_LIBRARY_PATH=$pylibs PYTHONPATH="$pypath" python3 -m pytest -q -rs python/tests </dev/null 2>&1 |
      tee "$out/pytest.log" || status=1
  else
    echo "skipped: tegula or pytest does not import with $(python3 --version 2>&1)" | tee "$out/pytest.log"
  fi
  echo
  echo "== summary ($(cat "$CARRY/commit.txt" 2>/dev/null)) =="
  printf '%s\n' "${rows[@]}"
  # A benchmark's result rows start with a name and end with a number (the
  # ratio to its reference): show them.
  while read -r kind name; do
    [[ $kind == benchmark ]] && grep -hE '^[a-z][a-z0-9_]* +.*[0-9]\.[0-9]+$' "$out/$name.log"
  done <"$CARRY/programs.txt"
  [[ -f $out/attention_mma_sync.log ]] &&
    grep -hE '^[a-z][a-z0-9_]* +.*[0-9]\.[0-9]+$' "$out/attention_mma_sync.log" | sed 's/^/mma.sync: /'  || true
  grep -hE '^torch_' "$out/torch_reference.log" || true
  grep -hE '^gpt2_' "$out/gpt2_torch.log" || true
  grep -hE '^launch_overhead_' "$out/launch_overhead_py.log" || true
  tail -1 "$out/pytest.log"
  echo "logs: $out (commit them under benchmarks/results/)"
  exit $status
}

case "${1:-}" in
  pack) shift; pack "$@" ;;
  python-package) shift; python_package "$@" ;; # ROOT: what `run` does for Python, alone
  run) shift; run "$@" ;;
  *) echo "usage: $0 pack | run" >&2; exit 64 ;;
esac
