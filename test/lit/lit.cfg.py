# lit configuration for Tegula's FileCheck tests. CMake runs lit on each
# source file with --param tegula_bin_dir=<build>/bin; by hand:
#   /usr/lib/llvm-22/bin/lit -v --param tegula_bin_dir=build/bin test/lit
import os
import lit.formats

config.name = "Tegula"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)

bin_dir = lit_config.params.get("tegula_bin_dir")
if not bin_dir:
    lit_config.fatal("pass --param tegula_bin_dir=<build>/bin (the folder with tegula-opt)")
bin_dir = os.path.abspath(bin_dir)
config.test_exec_root = os.path.join(os.path.dirname(bin_dir), "test", "lit")
llvm_tools = lit_config.params.get("llvm_tools_dir", "/usr/lib/llvm-22/bin")

# tegula-opt from the build; FileCheck and not from LLVM's tools.
config.environment["PATH"] = os.pathsep.join(
    [bin_dir, llvm_tools, config.environment.get("PATH", "")])

# Tests that run ptxas need the CUDA toolkit.
import shutil
cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
if shutil.which("ptxas") or os.access(os.path.join(cuda_home, "bin", "ptxas"), os.X_OK):
    config.available_features.add("ptxas")
else:
    lit_config.note("ptxas not found: tests that REQUIRE ptxas are reported UNSUPPORTED")

# ptxas and nvlink by hand (relocatable code linked into one image).
for tool in ("ptxas", "nvlink"):
    path = shutil.which(tool) or os.path.join(cuda_home, "bin", tool)
    if os.access(path, os.X_OK):
        config.substitutions.append(("%" + tool, path))
        config.available_features.add(tool + "-tool")

# tegulac --sass needs nvdisasm: the one the build found (CMake passes
# --param nvdisasm=PATH), $TEGULA_NVDISASM, or one in CUDA_HOME or PATH.
nvdisasm = lit_config.params.get("nvdisasm") or os.environ.get("TEGULA_NVDISASM", "")
if (nvdisasm and os.access(nvdisasm, os.X_OK)) or shutil.which("nvdisasm") or \
        os.access(os.path.join(cuda_home, "bin", "nvdisasm"), os.X_OK):
    config.available_features.add("nvdisasm")
    # What made the feature available is what tegulac finds: lit runs the
    # commands in its own environment.
    if nvdisasm:
        config.environment["TEGULA_NVDISASM"] = nvdisasm
    if "CUDA_HOME" in os.environ:
        config.environment["CUDA_HOME"] = os.environ["CUDA_HOME"]
else:
    lit_config.note("nvdisasm not found (scripts/setup.sh installs it): tests that REQUIRE it are UNSUPPORTED")
