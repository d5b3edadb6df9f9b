# Mithril-MLIR: the two commands of the quick start are `make demo` and
# `make check`. Everything else here is a step of those two.

BUILD   ?= build
PYTHON  ?= /usr/bin/python3
JOBS    ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps configure build demo check check-lit check-unit check-python docs \
        check-conformance check-install bench clean help

all: build

help:
	@echo "make demo    install what is missing, build, and run the example models"
	@echo "make check   build and run every test suite"
	@echo "make bench   measure against numpy (OpenBLAS) and torch into bench/results.md"

deps:
	@bash scripts/install-deps.sh

$(BUILD)/build.ninja:
	cmake -G Ninja -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release \
	  -DPython3_EXECUTABLE=$(PYTHON) \
	  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit $(CMAKE_FLAGS)

configure: deps $(BUILD)/build.ninja

build: configure
	ninja -C $(BUILD) -j $(JOBS)

demo: build
	@bash examples/demo.sh $(BUILD)

check: build
	@bash scripts/check.sh $(BUILD)

check-lit: build
	ninja -C $(BUILD) check-mithril-lit

check-unit: build
	ninja -C $(BUILD) check-mithril-unit

check-python: build
	@bash scripts/check.sh $(BUILD) python

check-conformance: build
	@bash scripts/check.sh $(BUILD) conformance

check-install: build
	@bash scripts/check.sh $(BUILD) install

bench: build
	@MITHRIL_WITH_BENCH=1 bash scripts/install-deps.sh
	@bash bench/run.sh $(BUILD)

docs: build
	ninja -C $(BUILD) mithril-docs

clean:
	rm -rf $(BUILD)
