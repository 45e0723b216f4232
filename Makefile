# ckopt: two commands do everything on a fresh Debian 12 machine with Rust.
#   make demo   installs what is missing, builds release, runs the main job
#   make test   cargo tests of the whole workspace and the lit suite
SHELL := /bin/bash
export PATH := $(HOME)/.local/bin:$(PATH)
CARGO ?= cargo
LIT ?= uvx --from lit==18.1.8 lit

.PHONY: setup build build-debug test unit lit demo clean

setup:
	@./scripts/setup.sh

build: setup
	$(CARGO) build --release --workspace

build-debug: setup
	$(CARGO) build --workspace

unit: setup
	$(CARGO) test --workspace

lit: build-debug
	$(LIT) -sv test

test: unit lit

demo: build
	@./scripts/demo.sh

clean:
	$(CARGO) clean
