#!/usr/bin/env bash
# Installs Tegula's build dependencies (Debian 12 packages). Idempotent: when
# everything is present it installs nothing and takes well under a second.
set -euo pipefail

PACKAGES=(
  cmake ninja-build g++ ccache
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools libzstd-dev
  libfmt-dev libgtest-dev libgmock-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "[setup] installing: ${missing[*]}"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "[setup] all packages present"
fi

if [[ -x /usr/local/cuda/bin/ptxas ]]; then
  echo "[setup] CUDA toolkit: $(/usr/local/cuda/bin/ptxas --version | tail -1)"
else
  echo "[setup] CUDA toolkit not found at /usr/local/cuda (needed from the PTX backend on)"
fi
