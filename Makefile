# ckopt: two commands do everything on a fresh Debian 12 machine with Rust.
#   make demo   installs what is missing, builds release, runs the main job
#   make test   cargo tests of the whole workspace, the lit suite and the
#               Python package's pytest suite
SHELL := /bin/bash
export PATH := $(HOME)/.local/bin:$(PATH)
CARGO ?= cargo
LIT ?= uvx --from lit==18.1.8 lit
# Property tests run from a fixed seed so CI is reproducible; override it
# (or unset it) to explore other random graphs.
export PROPTEST_RNG_SEED ?= 20261130
# The cpu/cuda backends and ckopt-translate link LLVM/MLIR statically: they
# are behind ckopt-tools' `lower` feature, which every target here enables.
FEATURES ?= --features ckopt-tools/lower
# The Python package (python/, crate ckopt-python) is built by maturin, not
# by cargo's workspace commands: its cdylib links no libpython.
NOPY := --exclude ckopt-python
# make py: a venv under target/ made with uv; the package built once per
# run (maturin develop, dev profile: the workspace's debug artifacts), then
# pytest against the debug tools.
PY_VENV ?= target/py-venv
PY_VENV_ABS = $(abspath $(PY_VENV))
# ptxas and libdevice from the PyPI wheel nvidia-cuda-nvcc-cu12 (fetched by
# scripts/setup.sh when possible): PTX validation tests and cuda math.
CUDA_TOOLS_DIR ?= $(HOME)/.cache/ckopt/cuda-nvcc
export CKOPT_PTXAS ?= $(wildcard $(CUDA_TOOLS_DIR)/nvidia/cuda_nvcc/bin/ptxas)
export CKOPT_LIBDEVICE ?= $(wildcard $(CUDA_TOOLS_DIR)/nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc)

.PHONY: setup build build-debug test unit lit py py-env py-torch demo clean

setup:
	@./scripts/setup.sh

build: setup
	$(CARGO) build --release --workspace $(NOPY) $(FEATURES)

build-debug: setup
	$(CARGO) build --workspace $(NOPY) $(FEATURES)

unit: setup
	$(CARGO) test --workspace $(NOPY) $(FEATURES)

lit: build-debug
	$(LIT) -sv test

py-env: setup
	uv venv -q --allow-existing --python python3 $(PY_VENV)
	VIRTUAL_ENV=$(PY_VENV_ABS) uv pip install -q "maturin>=1.9.4,<2" "numpy>=1.22" "pytest>=8"

py: build-debug py-env
	VIRTUAL_ENV=$(PY_VENV_ABS) $(PY_VENV)/bin/maturin develop --uv -q -m python/Cargo.toml
	cd python && CKOPT_BIN=$(abspath target/debug) $(PY_VENV_ABS)/bin/python -m pytest -q

# make py-torch: the PyTorch frontend's tests (python/tests_torch) in the
# same venv, with torch from PyPI added (about 5 GB the first time, then
# uv's cache: seconds). Only this target installs torch.
TORCH_SPEC ?= torch==2.15.*
py-torch: py
	VIRTUAL_ENV=$(PY_VENV_ABS) uv pip install -q "$(TORCH_SPEC)"
	cd python/tests_torch && CKOPT_BIN=$(abspath target/debug) $(PY_VENV_ABS)/bin/python -m pytest -q -p no:cacheprovider .

test: unit lit py py-torch

demo: build
	@./scripts/demo.sh

clean:
	$(CARGO) clean
