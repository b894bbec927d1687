#!/usr/bin/env bash
# Sets up, builds and runs every test: GoogleTest suites and lit/FileCheck
# tests, each listed by ctest as it runs; skipped tests are listed with
# their reasons at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
cd "${TEGULA_BUILD_DIR:-build}"
status=0
ctest --output-on-failure -j "${TEGULA_JOBS:-$(nproc)}" "$@" || status=$?
# A skipped test is not a passed one: say which and why.
awk '/^[0-9]+\/[0-9]+ Testing: /{name=$3}
     /: Skipped$/{getline reason; print "[skipped] " name ": " reason}
     /^UNSUPPORTED: /{print "[unsupported] " $0}' Testing/Temporary/LastTest.log || true
exit $status
