# strata: build, set-up, tests. `make run` and `make test` are the two commands of the README.
# Sources are found by wildcard: adding a .c under src/ or a tests/test_*.c needs no edit here.
CC      ?= gcc
BUILD   ?= build
OPT     ?= -O2
WERROR  ?= 0
PY      ?= python3
CACHE   ?= $(if $(STRATA_CACHE_DIR),$(STRATA_CACHE_DIR),$(if $(XDG_CACHE_HOME),$(XDG_CACHE_HOME),$(HOME)/.cache)/strata)
MODEL   ?= $(CACHE)/SmolLM2-135M-Instruct.Q4_1.gguf
PROMPT  ?= What is the capital of France? Answer in one sentence.

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

LIB_SRCS  := $(shell find src -name '*.c' ! -path 'src/cli/*' | sort)
CLI_SRCS  := $(shell find src/cli -name '*.c' | sort)
TEST_SRCS := $(wildcard tests/test_*.c)
LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/%.o)
CLI_OBJS  := $(CLI_SRCS:%.c=$(BUILD)/%.o)
TEST_BINS := $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%)
LIB       := $(BUILD)/libstrata.a
BIN       := $(BUILD)/strata

.PHONY: all setup setup-sys setup-py model run test test-asan bench clean fuzz test-gpu
all: $(BIN)

# files named *_avx2.c get the AVX2/FMA/F16C flags; dispatch picks them at run time
$(BUILD)/%_avx2.o: %_avx2.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -mavx2 -mfma -mf16c -c $< -o $@
$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^
$(BIN): $(CLI_OBJS) $(LIB)
	$(CC) $(CFLAGS) -o $@ $(CLI_OBJS) $(LIB) $(LDLIBS)
$(BUILD)/tests/%: tests/%.c $(LIB) tests/test.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests -o $@ $< $(LIB) $(LDLIBS)

# ---- set-up: what a fresh Debian 12 machine lacks ------------------------------------
APT_PKGS = build-essential pkg-config libmicrohttpd-dev libjansson-dev clang unzip
setup-sys:
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing) >/dev/null || \
	  { echo "apt-get install failed for:$$missing" >&2; exit 1; }; fi
setup-py:
	@$(PY) -c "import gguf, numpy, jinja2" 2>/dev/null || $(PY) -m pip install -q gguf numpy jinja2
model: $(MODEL)
$(MODEL):
	@sh tools/fetch_model.sh "$(CACHE)"
setup: setup-sys setup-py model

run: setup-sys model
	@$(MAKE) --no-print-directory $(BIN)
	$(BIN) run -m "$(MODEL)" --chat -p "$(PROMPT)" -n 96

test: setup
	@$(MAKE) --no-print-directory $(BIN) $(TEST_BINS)
	@STRATA_MODEL="$(MODEL)" BUILD=$(BUILD) PY=$(PY) sh tests/run.sh $(TEST_BINS)

test-asan:
	@$(MAKE) --no-print-directory test BUILD=build-asan OPT=-O1 \
	  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"

bench: $(BIN) model
	$(BIN) bench -m "$(MODEL)"

clean:
	rm -rf build build-asan build-fuzz

-include $(LIB_OBJS:.o=.d) $(CLI_OBJS:.o=.d)

# ---- server end-to-end (src/server): the openai client against `strata serve` -----------
.PHONY: test-server
test-server: setup
	@$(MAKE) --no-print-directory $(BIN)
	@$(PY) -c "import openai" 2>/dev/null || $(PY) -m pip install -q openai
	STRATA_MODEL="$(MODEL)" $(PY) tests/server/test_openai.py --bin $(BIN) --model "$(MODEL)"
