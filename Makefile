# Mithril-MLIR: the two commands of the quick start are `make demo` and
# `make check`. Everything else here is a step of those two.

BUILD   ?= build
PYTHON  ?= /usr/bin/python3
JOBS    ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps configure build demo check check-lit check-unit check-python docs \
        check-conformance check-install check-isa bench bench-lowprecision bench-distributed bench-rows bench-peers sanitize fuzz fuzz-diff clean help

all: build

help:
	@echo "make demo    install what is missing, build, and run the example models"
	@echo "make check   build and run every test suite"
	@echo "make check-isa TARGET_CPU=haswell  the Python suite on code for another x86-64 CPU"
	@echo "make bench   measure against numpy (OpenBLAS) and torch into bench/results.md"
	@echo "             (BENCH_ARGS=--max-isa=avx2: all on AVX2 code, into bench/results-avx2.md)"
	@echo "make bench-lowprecision  bf16/f16/int8 against our f32 into bench/lowprecision.md"
	@echo "make bench-distributed   MLP training step on 2 MPI ranks against one process"
	@echo "make bench-rows  softmax, log-softmax, layer norm against torch into bench/rows.md"
	@echo "make bench-peers  against ONNX Runtime, OpenVINO, JAX, IREE, torch inductor (a venv) into bench/peers.md"

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

# The Python suite with every model compiled for TARGET_CPU (a CPU this host can
# run the code of): the AVX2 kernels on an AVX-512 host, say. Not part of
# `make check` (it doubles the Python suite's time).
TARGET_CPU ?= haswell
check-isa: build
	@PYTEST_ADDOPTS="--target-cpu=$(TARGET_CPU) $${PYTEST_ADDOPTS:-}" bash scripts/check.sh $(BUILD) python

bench: build
	@MITHRIL_WITH_BENCH=1 bash scripts/install-deps.sh
	@bash bench/run.sh $(BUILD) $(BENCH_ARGS)

bench-peers: build
	@bash scripts/bench-peers.sh

bench-lowprecision: build
	@cd bench && PYTHONPATH=$(abspath $(BUILD))/python_packages $(PYTHON) lowprecision.py

bench-distributed: build
	@PYTHONPATH=$(abspath $(BUILD))/python_packages $(PYTHON) bench/distributed.py

# Softmax, log-softmax and layer norm against torch's CPU kernels (bench/rows.md;
# BENCH_ARGS="--threads 2" or "--max-isa avx2").
bench-rows: build
	@PYTHONPATH=$(abspath $(BUILD))/python_packages $(PYTHON) bench/rows.py $(BENCH_ARGS)

docs: build
	ninja -C $(BUILD) mithril-docs

# Sanitizers: the project built with clang, ASan and UBSan (with LeakSanitizer),
# then the lit, GoogleTest and pytest suites under them. The Python extension
# gets the shared ASan runtime preloaded into /usr/bin/python3; lit leaves its
# Python-authored tests to that run (the tools link the static runtime, and
# the two cannot share a process). allow_user_poisoning=0 in both: LLVM's
# headers poison allocator slabs when compiled under ASan, but Debian's
# libMLIR is not, and the two disagree about the same memory.
SAN_BUILD ?= build-asan
SAN_FLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
SAN_RUNTIME = $(shell clang -print-file-name=libclang_rt.asan-x86_64.so)
sanitize: deps
	cmake -G Ninja -S . -B $(SAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
	  -DCMAKE_CXX_FLAGS="$(SAN_FLAGS)" -DCMAKE_C_FLAGS="$(SAN_FLAGS)" \
	  -DCMAKE_EXE_LINKER_FLAGS="$(SAN_FLAGS)" -DCMAKE_SHARED_LINKER_FLAGS="$(SAN_FLAGS)" \
	  -DMITHRIL_ENABLE_PYTHON=ON -DMITHRIL_ENABLE_CUDA_RUNTIME=OFF \
	  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit
	ninja -C $(SAN_BUILD) mithril-opt mithril-run MithrilUnitTests _mithril mithril-python-sources
	LIT_OPTS="--param python_bindings=0" ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:allow_user_poisoning=0 \
	  ninja -C $(SAN_BUILD) check-mithril-lit check-mithril-unit
	LD_PRELOAD=$(SAN_RUNTIME) PYTHONPATH=$(SAN_BUILD)/python_packages \
	  ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1:allow_user_poisoning=0 \
	  /usr/bin/python3 -m pytest -q -p no:cacheprovider python/tests

# Fuzzing: libFuzzer targets for the .npy/.npz readers and for IR through the
# pipeline's front half, each run for FUZZ_RUNS inputs from the seed corpora.
FUZZ_BUILD ?= build-fuzz
FUZZ_RUNS ?= 100000
FUZZ_FLAGS = -fsanitize=address,undefined,fuzzer-no-link -fno-omit-frame-pointer
fuzz: build
	cmake -G Ninja -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
	  -DCMAKE_CXX_FLAGS="$(FUZZ_FLAGS)" -DCMAKE_C_FLAGS="$(FUZZ_FLAGS)" \
	  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
	  -DMITHRIL_ENABLE_PYTHON=OFF -DMITHRIL_ENABLE_FUZZERS=ON -DMITHRIL_ENABLE_CUDA_RUNTIME=OFF \
	  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit
	ninja -C $(FUZZ_BUILD) npy_fuzzer ir_fuzzer
	mkdir -p $(FUZZ_BUILD)/corpus/npy $(FUZZ_BUILD)/corpus/ir
	$(FUZZ_BUILD)/bin/npy_fuzzer -runs=$(FUZZ_RUNS) -max_len=4096 $(FUZZ_BUILD)/corpus/npy fuzz/corpus/npy
	$(FUZZ_BUILD)/bin/ir_fuzzer -runs=$(FUZZ_RUNS) -max_len=2048 -dict=fuzz/mlir.dict \
	  $(FUZZ_BUILD)/corpus/ir fuzz/corpus/ir
	ninja -C $(BUILD) mithril-python-sources _mithril
	PYTHONPATH=$(BUILD)/python_packages /usr/bin/python3 fuzz/model_dict_fuzz.py --runs=$(FUZZ_RUNS)

# Differential fuzzing: FUZZ_DIFF_COUNT random model graphs built with the
# Python API, compiled with ml.MlirBackend and compared with torch, outputs
# and gradients (fuzz/diff_fuzz.py). Reduced reproducers go to fuzz/findings/.
FUZZ_DIFF_COUNT ?= 100000
FUZZ_DIFF_SEED ?= 0
fuzz-diff: build
	PYTHONPATH=$(BUILD)/python_packages $(PYTHON) fuzz/diff_fuzz.py --seed $(FUZZ_DIFF_SEED) \
	  --count $(FUZZ_DIFF_COUNT) --jobs $(JOBS)

clean:
	rm -rf $(BUILD)
