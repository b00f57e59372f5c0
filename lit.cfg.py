# lit configuration: runs test/**/*.mlir with relax-opt, FileCheck, not and upstream mlir-opt.
import os
import shutil
import sys
import sysconfig

import lit.formats

config.name = "relax-mlir"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["Inputs", "Output"]

root = os.path.dirname(os.path.abspath(__file__))
bindir = os.path.dirname(sys.executable)                     # .venv/bin: relax-opt, python
site = sysconfig.get_paths()["purelib"]
mlir_bin = os.path.join(site, "mlir", "bin")                 # mlir-opt, mlir-translate
llvm_bin = os.path.join(site, "llvm", "bin")                 # FileCheck, not, count

# relax-opt runs relax_mlir from THIS checkout (also a git worktree beside the venv's own):
# a wrapper first on PATH pins it, since lit's builtin commands reset PYTHONPATH.
wrapper_dir = os.path.join(root, "test", "Output", "bin")
os.makedirs(wrapper_dir, exist_ok=True)
wrapper = os.path.join(wrapper_dir, "relax-opt")
launcher = "import sys; sys.argv[0] = 'relax-opt'; from relax_mlir.tools.relax_opt import main; sys.exit(main())"
with open(wrapper, "w") as f:
    f.write(f'#!/bin/sh\nPYTHONPATH="{root}" exec "{sys.executable}" -c "{launcher}" "$@"\n')
os.chmod(wrapper, 0o755)
config.environment["PATH"] = os.pathsep.join([wrapper_dir, bindir, mlir_bin, llvm_bin, config.environment.get("PATH", "")])
config.environment["PYTHONPATH"] = root
# The IR a schedule prints must not depend on the machine's core count (the default thread
# count is every core): lit tests see one thread unless a RUN line sets another.
config.environment["RELAX_MLIR_NUM_THREADS"] = "1"
# Nor on whether a cuBLAS library is installed: the cuda pipeline's cuBLAS dispatch is off
# unless a RUN line asks for it (cuda{cublas=on}, relax-cuda-dispatch-library).
config.environment["RELAX_MLIR_CUBLAS"] = "off"
for var in ("HOME", "TMPDIR"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

def tool(path):
    if not os.path.exists(path):
        lit_config.fatal(f"missing tool {path}: run `make setup`")
    return path

config.substitutions.append(("%relax-opt", tool(wrapper)))
config.substitutions.append(("%mlir-opt", tool(os.path.join(mlir_bin, "mlir-opt"))))
config.substitutions.append(("%irdl", os.path.join(root, "relax_mlir", "dialects", "relax.irdl.mlir")))
config.substitutions.append(("%python", sys.executable))
