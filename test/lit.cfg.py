# lit configuration for ckopt's FileCheck tests.
# Tools come from target/debug (override with CKOPT_BIN_DIR); FileCheck and
# not from LLVM 22 (/usr/lib/llvm-22/bin), mlir-opt-22 for upstream checks.
import os
import lit.formats

config.name = "ckopt"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".ck", ".mlir", ".test"]
config.excludes = ["Inputs", "lit.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.test_source_root, "..", "target", "lit")

root = os.path.abspath(os.path.join(config.test_source_root, ".."))
bin_dir = os.environ.get("CKOPT_BIN_DIR", os.path.join(root, "target", "debug"))
llvm_bin = os.environ.get("LLVM_BIN_DIR", "/usr/lib/llvm-22/bin")

path = os.pathsep.join([bin_dir, llvm_bin, config.environment.get("PATH", os.environ.get("PATH", ""))])
config.environment["PATH"] = path
for var in ["HOME", "TMPDIR", "CKOPT_LIBDEVICE", "LD_LIBRARY_PATH"]:
    if var in os.environ:
        config.environment[var] = os.environ[var]

config.substitutions.append(("%mlir-opt", os.path.join(llvm_bin, "mlir-opt")))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))

# Features: tests that need the LLVM-linked tools or ptxas say REQUIRES: ...
def _ckopt_run_has_lower():
    # ckopt-translate exists only in builds with the `lower` feature, but a
    # later plain `cargo build` replaces ckopt-run: ask ckopt-run itself.
    import subprocess
    try:
        out = subprocess.run([os.path.join(bin_dir, "ckopt-run"), "--help"], capture_output=True, text=True, timeout=60).stdout
    except Exception:
        return False
    return "Backends built: interp, cpu, cuda" in out

if (os.path.exists(os.path.join(bin_dir, "ckopt-translate")) and os.environ.get("CKOPT_HAVE_LOWER", "1") == "1"
        and _ckopt_run_has_lower()):
    config.available_features.add("lower")
if os.environ.get("CKOPT_PTXAS"):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", os.environ["CKOPT_PTXAS"]))
# A CUDA driver on this machine (tests of the no-driver error are UNSUPPORTED then).
import ctypes.util
if ctypes.util.find_library("cuda"):
    config.available_features.add("cuda-driver")
if os.environ.get("CKOPT_LIBDEVICE") and os.path.isfile(os.environ["CKOPT_LIBDEVICE"]):
    config.available_features.add("libdevice")
