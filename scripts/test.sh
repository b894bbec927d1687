#!/usr/bin/env bash
# Sets up, builds and runs every test: GoogleTest suites and lit/FileCheck
# tests, each listed by ctest as it runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
cd "${TEGULA_BUILD_DIR:-build}"
ctest --output-on-failure -j "${TEGULA_JOBS:-$(nproc)}" "$@"
