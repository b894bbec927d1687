#!/usr/bin/env bash
# GPU checks for a session that is lent a GPU machine (the device tool).
#
# The GPU machine has no LLVM/MLIR, so the binaries are built HERE and carried
# there with the shared libraries they need, in an ignored folder that the
# device tool's `carry` takes along (64 MiB for the whole working tree).
#
#   here:   bash scripts/gpu-check.sh pack        # build, collect, compress, measure
#   there:  run(command="bash scripts/gpu-check.sh run", carry=[".gpu-carry"])
#
# `pack` builds the GPU test binaries and the bandwidth benchmark in
# $BUILD_DIR (default build), copies them stripped, with their ldd closure
# (everything but glibc itself), into .gpu-carry/, xz-compresses it and
# refuses when the result would not fit. `run` unpacks into /tmp, runs
# device_test, gpu_test, compiled_kernels_test, runtime_test and bandwidth
# with LD_LIBRARY_PATH pointing there (the binaries' RUNPATH yields to it),
# writes the logs under $OUT (when set) and prints a short table last.
# Measured sizes and the fallbacks: docs/runtime.md, "Running on a GPU machine".
set -uo pipefail
cd "$(dirname "$0")/.."
CARRY=.gpu-carry
BINARIES=(device_test gpu_test compiled_kernels_test runtime_test bandwidth)
# The device tool's limit on what travels (tracked + untracked files + carry).
LIMIT=$((64 * 1024 * 1024))

pack() {
  set -e
  local build=${BUILD_DIR:-build}
  if [[ ! -f "$build/build.ninja" ]]; then
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE:-RelWithDebInfo}
  fi
  ninja -C "$build" -j "${TEGULA_JOBS:-$(nproc)}" "${BINARIES[@]}"
  grep -qsx "/$CARRY/" .git/info/exclude || { mkdir -p .git/info; echo "/$CARRY/" >>.git/info/exclude; }
  rm -rf "$CARRY" && mkdir -p "$CARRY/bin" "$CARRY/lib"
  local paths=()
  for b in "${BINARIES[@]}"; do
    local p=$build/bin/$b
    [[ -x $p ]] || p=$build/test/$b # GoogleTest binaries live in test/
    paths+=("$p")
    # No debug info there: it is most of an unstripped binary.
    strip -o "$CARRY/bin/$b" "$p"
  done
  # The closure of shared libraries, less glibc (the GPU machine's own is
  # newer: Ubuntu 24.04, glibc 2.39 >= this machine's 2.36).
  ldd "${paths[@]}" | awk '$3 ~ /^\// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*)\.so' |
    while read -r lib; do cp -L "$lib" "$CARRY/lib/"; done
  echo "raw sizes:"
  du -b "$CARRY"/bin/* "$CARRY"/lib/* | sort -n | awk '{printf "  %10.1f MiB  %s\n", $1 / 1048576, $2}'
  echo "compressing (xz -9) ..."
  tar -C "$CARRY" -cf - bin lib | xz -9 -T"${TEGULA_JOBS:-$(nproc)}" >"$CARRY.tar.xz.tmp"
  rm -rf "$CARRY"/bin "$CARRY"/lib
  mv "$CARRY.tar.xz.tmp" "$CARRY/payload.tar.xz"
  # The GPU machine gets no .git: say here what was built.
  echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . && echo '' || echo ' (+ working tree)')" \
    >"$CARRY/commit.txt"
  local payload tree total
  payload=$(stat -c %s "$CARRY/payload.tar.xz")
  tree=$(git ls-files -co --exclude-standard -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
  total=$((payload + tree))
  printf 'payload %.1f MiB + working tree %.1f MiB = %.1f MiB (limit %d MiB)\n' \
    "$(bc -l <<<"$payload/1048576")" "$(bc -l <<<"$tree/1048576")" \
    "$(bc -l <<<"$total/1048576")" $((LIMIT / 1048576))
  if ((total > LIMIT)); then
    echo "does NOT fit: carry a static build or AOT-compiled kernels instead (docs/runtime.md)" >&2
    exit 2
  fi
  echo "fits: run(command=\"bash scripts/gpu-check.sh run\", carry=[\"$CARRY\"])"
}

run() {
  local out=${OUT:-/tmp/tegula-gpu-out} root=/tmp/tegula-carry
  mkdir -p "$out" "$root"
  tar -C "$root" -xJf "$CARRY/payload.tar.xz" || { echo "no $CARRY/payload.tar.xz: run pack first"; exit 1; }
  export LD_LIBRARY_PATH="$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export TEGULA_CACHE_DIR=/tmp/tegula-kernel-cache
  # ptxas and libdevice come from the image's toolkit (CUDA_HOME, default
  # /usr/local/cuda); without ptxas the driver JIT-compiles the PTX.
  if [[ -z ${CUDA_HOME:-} && ! -d /usr/local/cuda ]] && command -v nvcc >/dev/null; then
    export CUDA_HOME=$(dirname "$(dirname "$(command -v nvcc)")")
  fi
  export PATH="$PATH:${CUDA_HOME:-/usr/local/cuda}/bin"
  echo "toolkit: ${CUDA_HOME:-/usr/local/cuda} ($(ptxas --version 2>/dev/null | tail -1 || echo 'no ptxas'))"
  echo "libraries resolve to: $(ldd "$root/bin/bandwidth" | grep -c "$root/lib") from $root/lib," \
    "missing: $(ldd "$root/bin/bandwidth" | grep -c 'not found')"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  local rows=() status=0
  for t in device_test gpu_test compiled_kernels_test runtime_test; do
    local s=0
    "$root/bin/$t" --gtest_color=no 2>&1 | tee "$out/$t.log" || s=$?
    rows+=("$(printf '%-22s rc=%-3s %s' "$t" "$s" "$(awk '
      /^\[  PASSED  \] [0-9]+ test/ {p = $4} /^\[  SKIPPED \] [0-9]+ test/ {k = $4}
      /^\[  FAILED  \] [0-9]+ test/ {f = $4}
      END {printf "passed %d, skipped %d, failed %d", p, k, f}' "$out/$t.log")")")
    ((s == 0)) || status=1
  done
  local s=0
  {
    echo "commit: $(cat "$CARRY/commit.txt" 2>/dev/null || echo unknown)"
    "$root/bin/bandwidth" "$@"
  } 2>&1 | tee "$out/bandwidth.log" || s=$?
  ((s == 0)) || status=1
  echo
  echo "== summary =="
  printf '%s\n' "${rows[@]}"
  echo "bandwidth              rc=$s   (log: $out/bandwidth.log; commit it under benchmarks/results/)"
  grep -E '^(vector_add|softmax|layernorm) ' "$out/bandwidth.log" || true
  exit $status
}

case "${1:-}" in
  pack) shift; pack "$@" ;;
  run) shift; run "$@" ;;
  *) echo "usage: $0 pack | run [bandwidth options]" >&2; exit 64 ;;
esac
