# lit configuration for Tegula's FileCheck tests.
import os
import lit.formats

config.name = "Tegula"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tegula_binary_dir, "test", "lit")
config.excludes = ["lit.cfg.py", "lit.site.cfg.py"]

# tegula-opt from the build, FileCheck/not from LLVM's tools.
config.environment["PATH"] = os.pathsep.join(
    [config.tegula_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
