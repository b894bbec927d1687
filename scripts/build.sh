#!/usr/bin/env bash
# Configures and builds Tegula into ./build (Ninja, ccache when present).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${TEGULA_BUILD_DIR:-build}
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE:-RelWithDebInfo}
fi
cmake --build "$BUILD_DIR" -j "${TEGULA_JOBS:-$(nproc)}"
