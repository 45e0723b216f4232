# ckopt: two commands do everything on a fresh Debian 12 machine with Rust.
#   make demo   installs what is missing, builds release, runs the main job
#   make test   cargo tests of the whole workspace and the lit suite
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
# ptxas and libdevice from the PyPI wheel nvidia-cuda-nvcc-cu12 (fetched by
# scripts/setup.sh when possible): PTX validation tests and cuda math.
CUDA_TOOLS_DIR ?= $(HOME)/.cache/ckopt/cuda-nvcc
export CKOPT_PTXAS ?= $(wildcard $(CUDA_TOOLS_DIR)/nvidia/cuda_nvcc/bin/ptxas)
export CKOPT_LIBDEVICE ?= $(wildcard $(CUDA_TOOLS_DIR)/nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc)

.PHONY: setup build build-debug test unit lit demo clean

setup:
	@./scripts/setup.sh

build: setup
	$(CARGO) build --release --workspace $(FEATURES)

build-debug: setup
	$(CARGO) build --workspace $(FEATURES)

unit: setup
	$(CARGO) test --workspace $(FEATURES)

lit: build-debug
	$(LIT) -sv test

test: unit lit

demo: build
	@./scripts/demo.sh

clean:
	$(CARGO) clean
