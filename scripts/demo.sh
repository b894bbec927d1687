#!/usr/bin/env bash
# Sets up, builds and runs the demo: C++ kernels traced to tile IR and run
# in the CPU interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
exec "${TEGULA_BUILD_DIR:-build}/bin/tegula-demo"
