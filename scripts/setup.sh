#!/usr/bin/env bash
# Installs Tegula's build dependencies (Debian 12 packages). Idempotent: when
# everything is present it installs nothing and takes well under a second.
set -euo pipefail

PACKAGES=(
  cmake ninja-build g++ ccache
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools libzstd-dev
  libfmt-dev libgtest-dev libgmock-dev nlohmann-json3-dev pkgconf
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

# Python: the bindings' build (pybind11, scikit-build-core for pip install .)
# and their tests (pytest, numpy, ml_dtypes for bfloat16 arrays), from PyPI
# into the python3 on PATH; and NVIDIA's nvdisasm wheel (the toolkit here has
# none): CompiledKernel::sass() and the SASS tests. Pinned, so a fresh machine
# builds what CI built.
PY_PACKAGES=(pybind11==3.1.0 numpy==2.4.6 ml_dtypes==0.6.0 pytest==9.2.0 scikit-build-core==1.1.2
             nvidia-cuda-nvdisasm==13.5.37)
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" - "${PY_PACKAGES[@]}" <<'PY' 2>/dev/null; then
import sys
from importlib.metadata import version
for spec in sys.argv[1:]:
    name, want = spec.split("==")
    if version(name) != want:
        sys.exit(1)
PY
  echo "[setup] installing Python packages: ${PY_PACKAGES[*]}"
  "$PYTHON" -m pip install -q --disable-pip-version-check --root-user-action=ignore "${PY_PACKAGES[@]}"
else
  echo "[setup] Python packages present ($("$PYTHON" --version))"
fi

if [[ -x /usr/local/cuda/bin/ptxas ]]; then
  echo "[setup] CUDA toolkit: $(/usr/local/cuda/bin/ptxas --version | tail -1)"
else
  echo "[setup] CUDA toolkit not found at /usr/local/cuda (needed from the PTX backend on)"
fi
