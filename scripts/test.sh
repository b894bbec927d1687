#!/usr/bin/env bash
# Sets up, builds and runs every test: GoogleTest suites and lit/FileCheck
# tests, each listed by ctest as it runs (skipped ones listed with their
# reasons), then the Python package's pytest suite against the same build.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
root=$PWD
cd "${TEGULA_BUILD_DIR:-build}"
# The tests choose their own backends, caches and dumps: a TEGULA_* setting
# left in the caller's environment must not change what they check.
for v in TEGULA_BACKEND TEGULA_CACHE_DIR TEGULA_DUMP TEGULA_TIMING TEGULA_LAUNCH_BLOCKING \
         TEGULA_DEVICE TEGULA_PTXAS TEGULA_LIBDEVICE TEGULA_SIM_CHIP TEGULA_WGMMA TEGULA_TMA TEGULA_OVERLAP_DOTS TEGULA_WARPGROUP_TURNS \
         TEGULA_WARP_SPECIALIZE TEGULA_PING_PONG TEGULA_SIM_SCHEDULE; do
  if [[ -n ${!v+x} ]]; then
    echo "[test] ignoring $v=${!v} from the environment"
    unset "$v"
  fi
done
status=0
ctest --output-on-failure -j "${TEGULA_JOBS:-$(nproc)}" "$@" || status=$?
# A skipped test is not a passed one: say which and why.
awk '/^[0-9]+\/[0-9]+ Testing: /{name=$3}
     /: Skipped$/{getline reason; print "[skipped] " name ": " reason}
     /^UNSUPPORTED: /{print "[unsupported] " $0}' Testing/Temporary/LastTest.log || true
# Every simulator test again as Hopper code (sm_90a: dots on wgmma where
# their tiles fit), when the caller runs the whole suite.
if [[ $# -eq 0 ]]; then
  echo "[test] the simulator tests again with TEGULA_SIM_CHIP=sm_90a (Hopper code)"
  TEGULA_SIM_CHIP=sm_90a ctest --output-on-failure -j "${TEGULA_JOBS:-$(nproc)}" -R 'sim|Sim' ||
    status=$?
  # ... and the tensor-descriptor kernels warp specialised (a producer
  # warpgroup fills their TMA rings), the threads run in a shuffled order
  # (seeded): the warps of a warpgroup drift apart too.
  echo "[test] the tensor-descriptor simulator tests again with TEGULA_WARP_SPECIALIZE=1, shuffled thread order"
  TEGULA_SIM_CHIP=sm_90a TEGULA_WARP_SPECIALIZE=1 TEGULA_SIM_SCHEDULE=shuffled:7 \
    ctest --output-on-failure -j "${TEGULA_JOBS:-$(nproc)}" -R 'Sim.*TensorDescriptor' || status=$?
  # ... and ping-pong (two programs per CTA where it applies), run so that
  # the lowest-numbered threads get ahead: the programs, the producer and the
  # consumers drift apart as they may on a GPU.
  echo "[test] the tensor-descriptor simulator tests again with TEGULA_PING_PONG=1, lowest-first thread order"
  TEGULA_SIM_CHIP=sm_90a TEGULA_PING_PONG=1 TEGULA_SIM_SCHEDULE=lowest-first \
    ctest --output-on-failure -j "${TEGULA_JOBS:-$(nproc)}" -R 'Sim.*TensorDescriptor' || status=$?
fi
# The Python package against the same build (pytest fails when it collects
# nothing; -rs lists each skip with its reason).
build=$PWD
cd "$root"
PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}" \
  python3 -m pytest -q -rs python/tests || status=$?
exit $status
