#!/usr/bin/env bash
# A C++ project of its own against Tegula: install the SDK into a fresh
# prefix, configure examples/standalone with find_package(Tegula), build it
# and run it (interpreter, simulator, PTX); build it again with pkg-config's
# flags from a moved prefix; the installed tegulac compiles.
# Usage: standalone-project-test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" --component sdk >"$work/install.log"
for f in lib/libtegula.so include/tegula/tegula.h include/tegula/tl.h bin/tegulac bin/tegula-opt \
         lib/cmake/Tegula/TegulaConfig.cmake lib/cmake/Tegula/TegulaConfigVersion.cmake lib/cmake/Tegula/TegulaTargets.cmake \
         lib/pkgconfig/tegula.pc; do
  [[ -e "$work/prefix/$f" ]] || { echo "FAIL: the install lacks $f"; cat "$work/install.log"; exit 1; }
done
echo "installed: $(wc -l <"$work/install.log") files under the prefix"
# Without the compiler launcher Tegula's build uses (ccache may be absent).
cmake -S "$src/examples/standalone" -B "$work/app" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DTegula_DIR="$work/prefix/lib/cmake/Tegula" >"$work/configure.log" ||
  { cat "$work/configure.log"; exit 1; }
cmake --build "$work/app" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
# The installed library, not the build tree's, is the one that runs.
if ldd "$work/app/rms_norm" | grep -q "$build/lib/libtegula.so"; then
  echo "FAIL: the program loads the build tree's libtegula.so"; ldd "$work/app/rms_norm"; exit 1
fi
TEGULA_CACHE_DIR="$work/cache" "$work/app/rms_norm"
# A version the package does not offer is refused.
mkdir -p "$work/old" && cat >"$work/old/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(wants_newer LANGUAGES CXX)
find_package(Tegula 9.0 REQUIRED)
CMAKE
if cmake -S "$work/old" -B "$work/old/build" -DTegula_DIR="$work/prefix/lib/cmake/Tegula" >"$work/old.log" 2>&1; then
  echo "FAIL: find_package(Tegula 9.0) was satisfied"; exit 1
fi
grep -q "not compatible with requested version\|version" "$work/old.log" || { cat "$work/old.log"; exit 1; }
# Without CMake: pkg-config's flags build the same program, from a moved prefix too.
mv "$work/prefix" "$work/moved"
flags=$(PKG_CONFIG_PATH="$work/moved/lib/pkgconfig" pkg-config --cflags --libs tegula) ||
  { echo "FAIL: pkg-config does not know tegula"; exit 1; }
echo "pkg-config tegula (version $(PKG_CONFIG_PATH="$work/moved/lib/pkgconfig" pkg-config --modversion tegula)): $flags"
# shellcheck disable=SC2086 # the flags are words
g++ "$src/examples/standalone/rms_norm.cpp" $flags -o "$work/rms_norm_pc" >"$work/pc.log" 2>&1 ||
  { cat "$work/pc.log"; exit 1; }
if ldd "$work/rms_norm_pc" | grep -q "$build/lib/libtegula.so"; then
  echo "FAIL: the pkg-config build loads the build tree's libtegula.so"; ldd "$work/rms_norm_pc"; exit 1
fi
TEGULA_CACHE_DIR="$work/cache" "$work/rms_norm_pc" >/dev/null
mv "$work/moved" "$work/prefix"
"$work/prefix/bin/tegulac" --version | grep "Tegula [0-9]" || { echo "FAIL: tegulac --version names no Tegula version"; exit 1; }
echo "PASS: a project of its own builds and runs against the installed Tegula"
