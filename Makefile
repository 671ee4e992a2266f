# ninfer — one non-recursive GNU Makefile for the library, the commands, the
# CUDA backend, the tests and the demo. `make V=1` shows full commands.

PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
LIBDIR  ?= $(PREFIX)/lib
INCDIR  ?= $(PREFIX)/include/ninfer
MANDIR  ?= $(PREFIX)/share/man
PCDIR   ?= $(LIBDIR)/pkgconfig
DESTDIR ?=

CC      ?= cc
CFLAGS  ?= -O2 -g
# json-c, zstd, libcrypto and libcurl as pkg-config describes them (the plain -l
# flags when pkg-config is missing or the packages are not installed yet);
# libcurl's headers only: nf_http.c loads libcurl.so.4 when a URL is first
# read (dlopen), so the commands start as fast as before
PKG_CONFIG ?= pkg-config
NF_PKGS    := json-c libzstd libcrypto
NF_RT_PKGS := libcurl
PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(NF_PKGS) $(NF_RT_PKGS) 2>/dev/null)
PKG_LIBS   := $(shell $(PKG_CONFIG) --libs $(NF_PKGS) 2>/dev/null)
ifeq ($(strip $(PKG_LIBS)),)
PKG_LIBS   := -ljson-c -lzstd -lcrypto
endif
# The library's folders (common/*/: base, json, container, codec, model,
# convert) and the commands' front end (cli/) are include directories:
# sources say #include "nf_x.h" wherever the header lives.
LIB_DIRS  := $(sort $(dir $(wildcard common/*/*.c)))
NF_INC    := $(patsubst %/,-I%,$(LIB_DIRS)) -Icommon/model -Icli
NF_CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra -pthread $(NF_INC) $(PKG_CFLAGS) -MMD -MP
NF_LIBS := $(PKG_LIBS) -ldl -lpthread -lm

ifeq ($(SANITIZE),1)
NF_CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
NF_LDFLAGS += -fsanitize=address,undefined
BUILD ?= build/san
BIN   ?= build/san/bin
else
BUILD ?= build
BIN   ?= bin
endif

ifeq ($(V),1)
Q :=
else
Q := @
endif

LIB_SRC  := $(sort $(wildcard common/*/*.c common/model/arch/*.c))
LIB_OBJ  := $(patsubst %.c,$(BUILD)/%.o,$(LIB_SRC))
# the public headers `make install` installs: the library's, less its
# internal ones (the front end cli/ is the commands' own, never installed)
LIB_INTERNAL_H := nf_catalog_int.h nf_gemv_int.h nf_pool.h nf_qsearch.h nf_source_int.h nf_export_int.h
LIB_PUBLIC_H := $(filter-out $(addprefix %/,$(LIB_INTERNAL_H)),$(sort $(wildcard common/*/nf_*.h)))
CLI_SRC  := $(sort $(wildcard cli/*.c))
CLI_OBJ  := $(patsubst %.c,$(BUILD)/%.o,$(CLI_SRC))
CLI      := $(BUILD)/libninfer-cli.a
STAGE    := $(BUILD)/stage
CU_SRC   := $(sort $(wildcard cuda/*.cu))
LIB      := $(BUILD)/libninfer.a
CMD_SRC  := $(sort $(wildcard cmd/ninfer-*.c))
CMDS     := $(patsubst cmd/%.c,$(BIN)/%,$(CMD_SRC))
UNIT_SRC := $(sort $(wildcard tests/unit/t_*.c))
UNITS    := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
TOOL_SRC := $(sort $(wildcard tests/tools/*.c))
TOOLS    := $(patsubst tests/tools/%.c,$(BUILD)/tools/%,$(TOOL_SRC))
SHIM_SRC := $(sort $(wildcard tests/shim/*.c))
SHIMS    := $(patsubst tests/shim/%.c,$(BUILD)/tools/lib%.so,$(SHIM_SRC))

# CUDA by detection: no nvcc (or CUDA=0) builds the stub backend.
NVCC ?= $(shell command -v nvcc 2>/dev/null)
ifeq ($(CUDA),0)
NVCC :=
endif
CUDA_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
# line tables in the device code (compute-sanitizer and cuda-gdb name source
# lines; the code is the same)
NVCCFLAGS ?= -lineinfo
ifneq ($(NVCC),)
ifneq ($(CU_SRC),)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(realpath $(NVCC)))
DEV_OBJ  := $(patsubst %.cu,$(BUILD)/%.o,$(CU_SRC))
CUDA_LIBS := -L$(CUDA_HOME)/lib64 -L$(CUDA_HOME)/targets/x86_64-linux/lib -lcudart_static -ldl -lrt -lstdc++
NF_LIBS  += $(CUDA_LIBS)
endif
endif
ifeq ($(DEV_OBJ),)
DEV_OBJ  := $(BUILD)/cuda/nf_device_stub.o
endif
# The device test (tests/gpu): scripts/gpu-check.sh runs it on a GPU; under
# `make test` it runs its host-side checks and skips the rest without one.
GPU_TESTS := $(BUILD)/tests/gpu/t_device
LIB_OBJ  += $(DEV_OBJ)

all: deps-check $(LIB) $(CLI) $(CMDS)

.SECONDARY:

.PHONY: all deps-check test test-long unit bats demo install uninstall clean fuzz bench

# Stop early, with the exact command to run, when a library is missing.
# `make` (building) never installs anything; `make test`, `make demo` and
# `make fuzz` install the missing Debian packages when we may (root, or sudo
# without a password), as .ci/run does.
DEPS_MODE := $(if $(filter test demo fuzz bats unit,$(MAKECMDGOALS)),--check-or-install,--check)
deps-check:
	$(Q)scripts/install-deps.sh $(DEPS_MODE)

# deps-check first, even under -j: nothing compiles before the headers exist
$(BUILD)/%.o: %.c | deps-check
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(NF_CFLAGS) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(BUILD)/cuda/%.o: cuda/%.cu
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  NVCC    $<")
	$(Q)$(NVCC) -O3 -std=c++17 $(CUDA_ARCH) $(NVCCFLAGS) $(NF_INC) -Xcompiler -Wall,-Wextra -MMD -MP -c $< -o $@

# The library remembers its backend: switching between CUDA=0 and an nvcc
# build relinks it (and the commands) even when no object changed.
BACKEND  := $(if $(filter $(BUILD)/cuda/nf_device_stub.o,$(DEV_OBJ)),stub,cuda)
$(BUILD)/backend: FORCE
	@mkdir -p $(dir $@)
	@echo $(BACKEND) | cmp -s - $@ || echo $(BACKEND) > $@

.PHONY: FORCE
FORCE:

$(LIB): $(LIB_OBJ) $(BUILD)/backend
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $(filter %.o,$^)

$(CLI): $(CLI_OBJ)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

# commands, tools and tests link the front end before the library (which
# needs nothing of it: tests/library.bats checks)
LINK_LIBS = $(CLI) $(LIB) $(NF_LIBS)

$(BIN)/%: $(BUILD)/cmd/%.o $(LIB) $(CLI)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(NF_LDFLAGS) $(LDFLAGS) -pthread -o $@ $< $(LINK_LIBS)

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(LIB) $(CLI)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(NF_LDFLAGS) $(LDFLAGS) -pthread -o $@ $< $(LINK_LIBS)

$(BUILD)/tests/gpu/%: $(BUILD)/tests/gpu/%.o $(LIB) $(CLI)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(NF_LDFLAGS) $(LDFLAGS) -pthread -o $@ $< $(LINK_LIBS)

$(BUILD)/tools/%: $(BUILD)/tests/tools/%.o $(LIB) $(CLI)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(NF_LDFLAGS) $(LDFLAGS) -pthread -o $@ $< $(LINK_LIBS)

# LD_PRELOAD fault shims for the writer tests; never sanitized (ASan must come
# first in the preload list, so a shim cannot ride along with it).
$(BUILD)/tools/lib%.so: tests/shim/%.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  SHIM    $@")
	$(Q)$(CC) -std=c11 -D_GNU_SOURCE -Wall -Wextra -O2 -fPIC -shared -o $@ $< -ldl

$(BUILD)/tests/unit/%.o: tests/unit/%.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(NF_CFLAGS) -Itests/unit $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# `make test` builds everything and runs every C unit test and bats suite;
# the last line is "N passed, N failed[, N skipped]". While working on one
# part, `make test T="ninfer-cat writer-race" U=t_catalog` runs only those
# suites (tests/NAME.bats) and unit tests (tests/unit/NAME.c).
RUN_SUITES := $(if $(T)$(U),$(addprefix tests/,$(addsuffix .bats,$(T))),$(sort $(wildcard tests/*.bats)))
RUN_UNITS  := $(if $(T)$(U),$(foreach u,$(U),$(if $(filter t_device,$(u)),$(GPU_TESTS),$(BUILD)/tests/$(u))),$(UNITS) $(GPU_TESTS))
test: all $(UNITS) $(GPU_TESTS) $(TOOLS) $(SHIMS) $(STAGE)/.installed
	$(Q)NF_BIN=$(abspath $(BIN)) NF_TOOLS=$(abspath $(BUILD)/tools) NF_SANITIZE=$(filter 1,$(SANITIZE)) \
	  NF_STAGE=$(abspath $(STAGE))/ninfer \
	  scripts/run-tests.sh $(RUN_UNITS) -- $(RUN_SUITES)

# A `make install` staged under $(BUILD)/stage (PREFIX=/ninfer) for
# tests/library.bats: a program built from the installed headers alone.
$(STAGE)/.installed: $(LIB) $(CMDS) $(LIB_PUBLIC_H) ninfer.pc.in
	@rm -rf $(STAGE)
	@$(if $(Q),echo "  INSTALL $(STAGE)")
	$(Q)$(MAKE) --no-print-directory install DESTDIR=$(abspath $(STAGE)) PREFIX=/ninfer > /dev/null
	@touch $@

# The exhaustive conversions: every one of the 2^32 f32 patterns through each
# encoder (DESIGN 12), about 6 minutes; not part of `make test`.
test-long: $(BUILD)/tests/t_fp
	$(Q)$(BUILD)/tests/t_fp --all

unit: all $(UNITS)
	$(Q)scripts/run-tests.sh $(UNITS) --

demo: all $(TOOLS)
	$(Q)NF_BIN=$(abspath $(BIN)) NF_TOOLS=$(abspath $(BUILD)/tools) scripts/demo.sh

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCDIR) \
	  $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man7 $(DESTDIR)$(PCDIR)
	install -m 755 $(CMDS) $(DESTDIR)$(BINDIR)/
	install -m 644 $(LIB) $(DESTDIR)$(LIBDIR)/
	install -m 644 $(LIB_PUBLIC_H) $(DESTDIR)$(INCDIR)/
	install -m 644 $(wildcard man/*.1) $(DESTDIR)$(MANDIR)/man1/
	$(if $(wildcard man/*.5),install -m 644 $(wildcard man/*.5) $(DESTDIR)$(MANDIR)/man5/)
	$(if $(wildcard man/*.7),install -m 644 $(wildcard man/*.7) $(DESTDIR)$(MANDIR)/man7/)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCDIR@|$(INCDIR)|' \
	  -e 's|@EXTRA_LIBS@|$(CUDA_LIBS)|' \
	  -e 's|@VERSION@|$(shell sed -n 's/^#define NF_VERSION "\(.*\)"/\1/p' common/base/nf_util.h)|' \
	  ninfer.pc.in > $(DESTDIR)$(PCDIR)/ninfer.pc

uninstall:
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(notdir $(CMDS)))
	rm -f $(DESTDIR)$(LIBDIR)/libninfer.a $(DESTDIR)$(PCDIR)/ninfer.pc
	rm -rf $(DESTDIR)$(INCDIR)
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(wildcard man/*.1)))
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man5/,$(notdir $(wildcard man/*.5)))
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man7/,$(notdir $(wildcard man/*.7)))

# `make fuzz`: the libFuzzer harnesses tests/fuzz/fuzz_*.c, built by clang
# with ASan and UBSan into build/fuzz (library objects too, so the normal
# build is untouched); scripts/fuzz.sh SECONDS runs them.
FUZZ_CC    ?= clang
FUZZ_BUILD := build/fuzz
FUZZ_FLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra -pthread $(NF_INC) -Itests/fuzz -g -O1 \
  -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined -MMD -MP
FUZZ_SRC   := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZERS    := $(patsubst tests/fuzz/%.c,$(FUZZ_BUILD)/%,$(FUZZ_SRC))
FUZZ_OBJ   := $(patsubst %.c,$(FUZZ_BUILD)/%.o,$(LIB_SRC) $(CLI_SRC))

fuzz: deps-check $(FUZZERS)

$(FUZZ_BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $< (fuzz)")
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_BUILD)/libninfer.a: $(FUZZ_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_BUILD)/libninfer.a
	@$(if $(Q),echo "  FUZZ    $@")
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_BUILD)/libninfer.a $(NF_LIBS)

clean:
	rm -rf build bin tests/tmp

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(patsubst %,$(BUILD)/cmd/%.d,$(notdir $(CMDS))) \
  $(patsubst $(BUILD)/tests/%,$(BUILD)/tests/unit/%.d,$(UNITS)) $(GPU_TESTS:=.d) \
  $(patsubst $(BUILD)/tools/%,$(BUILD)/tests/tools/%.d,$(TOOLS)) \
  $(FUZZ_OBJ:.o=.d) $(FUZZERS:=.d)
