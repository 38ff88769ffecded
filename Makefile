# schedlab — one non-recursive Makefile.
#
#   make            build build/schedlab
#   make run        install what is missing, build, profile the default job
#   make test       install what is missing, build and run the Criterion suite
#   make bench      measure the runtime against plain pthreads (and Go), the on-CPU
#                   probe's stacks and cost against perf's, and each probe's attach time
#                   and cost; writes BENCHMARKS.md
#   make golden     regenerate the flame-graph golden files from tests/flamegraphs/data/*.folded,
#                   and the suite table's (tests/analysis/data/suite.md)
#   make vmlinux    regenerate vmlinux-headers/<arch>/vmlinux.h from /sys/kernel/btf/vmlinux
#   make fuzz       run each libFuzzer target in fuzz/ for FUZZ_SECONDS (60) seconds
#   make deps       install the Debian packages the build and the tests need
#   make install    copy build/schedlab to $(DESTDIR)$(PREFIX)/bin (PREFIX=/usr/local)
#   make reliability  bad input, hostile output targets, faults, sanitizers and fuzzing (as
#                   root); rewrites RELIABILITY.md, fails on any row that is not ok
#
# CFLAGS=/LDFLAGS= on the command line set optimisation and debug flags only; the flags the
# build needs are kept. V=1 shows the commands. SANITIZE=thread builds into build/tsan with ThreadSanitizer.
# Outputs go to $(BUILD); nothing is written beside the sources.

.DELETE_ON_ERROR:
.SECONDARY:
.SUFFIXES:

V ?= 0
Q := $(if $(filter 1,$(V)),,@)
empty :=
space := $(empty) $(empty)
msg = $(if $(filter 1,$(V)),,@printf '  %-8s %s\n' '$(1)' '$(2)';)

# SANITIZE=address,undefined builds into build/address-undefined; each sanitizer named
# gets its own macro (RT_SANITIZE_ADDRESS, RT_SANITIZE_UNDEFINED, RT_SANITIZE_THREAD, ...),
# and any report is fatal (-fno-sanitize-recover), so that a test run fails on it.
SANITIZE ?=
comma := ,
SAN_LIST := $(subst $(comma), ,$(SANITIZE))
ifeq ($(SANITIZE),)
BUILD ?= build
SAN_FLAGS :=
else
BUILD ?= build/$(subst $(space),-,$(strip $(SAN_LIST)))
SAN_FLAGS := -fsanitize=$(SANITIZE) -fno-sanitize-recover=all \
	     $(foreach s,$(SAN_LIST),-DRT_SANITIZE_$(shell echo $(s) | tr a-z- A-Z_)=1)
endif

# clang by default: GCC 12 drops the frame setup of leaf functions that touch no stack
# even with -mno-omit-leaf-frame-pointer, and every such leaf then hides its caller
# from the frame-pointer walk. CC=gcc builds too.
ifeq ($(origin CC),default)
CC := clang
endif
CLANG ?= clang
BPFTOOL ?= bpftool
LLVM_STRIP ?= llvm-strip

# x86-64 only: the runtime's context switch (runtime/*.S) is x86-64 assembly and
# vmlinux-headers/ holds the x86 kernel types only. UNAME_M=... on the command line
# shows what another machine gets.
UNAME_M := $(shell uname -m)
ARCH := $(patsubst x86_64,x86,$(patsubst aarch64,arm64,$(UNAME_M)))
ifneq ($(ARCH),x86)
$(error schedlab builds on x86_64 only, not ARCH=$(ARCH) (UNAME_M=$(UNAME_M)): the runtime's context switch in runtime/*.S is x86-64 assembly and vmlinux-headers/ has x86 only)
endif
# The BPF programs include <asm/types.h> from Debian's multiarch folder. `clang -dumpmachine`
# says x86_64-pc-linux-gnu, which is no folder, so ask dpkg, then gcc. Evaluated where the
# BPF objects are built, after `make deps` may have installed either.
MULTIARCH ?= $(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -dumpmachine 2>/dev/null)
multiarch_dir = $(if $(strip $(MULTIARCH)),$(if $(wildcard /usr/include/$(strip $(MULTIARCH))/asm/types.h),/usr/include/$(strip $(MULTIARCH)),$(error /usr/include/$(strip $(MULTIARCH))/asm/types.h is missing: install libc6-dev ('make deps'), or set MULTIARCH= to the Debian multiarch triplet)),$(error no Debian multiarch triplet from dpkg-architecture or gcc -dumpmachine: install dpkg-dev or gcc ('make deps'), or set MULTIARCH=x86_64-linux-gnu))
VMLINUX_H ?= vmlinux-headers/$(ARCH)/vmlinux.h
KVER := $(shell uname -r | sed -E 's/^([0-9]+\.[0-9]+).*/\1/')

# CFLAGS and LDFLAGS are the user's (optimisation, debug info, extra warnings): `make
# CFLAGS=-O0` replaces them. What the build needs is in SL_CFLAGS and SL_LDFLAGS, after
# them so that it wins: frame pointers everywhere, leaf functions included, because the
# on-CPU probe walks them. Recursive (=), so that a target's SAN_FLAGS reach them.
CFLAGS ?= -O2 -g
LDFLAGS ?=
SL_CFLAGS = -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Werror \
	    -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -pthread \
	    -MMD -MP -I. -I$(BUILD) $(SAN_FLAGS)
SL_LDFLAGS = -pthread $(SAN_FLAGS)
ALL_CFLAGS = $(CPPFLAGS) $(CFLAGS) $(SL_CFLAGS)
ALL_LDFLAGS = $(LDFLAGS) $(SL_LDFLAGS)
# libstdc++'s runtime library (libstdc++6, on every Debian system) for its C++ demangler:
# named by file so that no -dev package is needed, and shared so that none of its
# functions, built without frame pointers, joins this binary's.
LDLIBS := -lbpf -ldw -lelf -lz -lpfm -ljson-c -l:libstdc++.so.6 -lm

BPF_CFLAGS = -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror \
	      -I$(dir $(VMLINUX_H)) -I. -I$(multiarch_dir) -MMD -MP

# Debian packages, by name. `make run` and `make test` install any that are missing.
# libjson-c-dev: reading result.json back (diagnose, compare, sweep).
# libdw-dev: DWARF unwinding of sampled stacks; libc6-dbg: glibc's symbol table (Debian strips
# libc.so.6), so that stacks through libc name start_thread, malloc's internals and the like.
# strace: a test holds a run in the middle of writing its files (a delayed fsync).
# help2man: the man pages, made from the commands' own --help.
DEB_PKGS := make gcc libc6-dev pkg-config clang llvm libclang-rt-dev libbpf-dev bpftool libelf-dev zlib1g-dev \
	    libdw-dev libc6-dbg libpfm4-dev libcriterion-dev systemtap-sdt-dev libjson-c-dev strace \
	    help2man
# cargo, rustc, librust-tokio-dev and openjdk-17-jdk-headless: the Tokio and JDK peers.
BENCH_PKGS := golang-go cargo rustc librust-tokio-dev openjdk-17-jdk-headless linux-perf jq

# ---------------------------------------------------------------------------
# Sources

MODULES := runtime runtime/effect workloads harness probes probes/common probes/oncpu \
	   probes/offcpu probes/sched probes/runtime probes/alloc probes/counters \
	   analysis flamegraphs
LIB_C := $(filter-out %.bpf.c,$(foreach m,$(MODULES),$(wildcard $(m)/*.c)))
LIB_S := $(foreach m,$(MODULES),$(wildcard $(m)/*.S))
LIB_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_C)) $(patsubst %.S,$(BUILD)/obj/%.o,$(LIB_S))
CLI_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard cli/*.c))

BPF_SRCS := $(wildcard probes/*/*.bpf.c)
BPF_OBJS := $(patsubst probes/%.bpf.c,$(BUILD)/probes/%.bpf.o,$(BPF_SRCS))
SKELS := $(patsubst probes/%.bpf.c,$(BUILD)/probes/%.skel.h,$(BPF_SRCS))

LIB := $(BUILD)/libschedlab.a
BIN := $(BUILD)/schedlab

# The version is in VERSION, alone; in a git checkout of this tree `git describe` is added.
# $(BUILD)/version.h is rewritten only when the string changes, so main.o is rebuilt then.
VERSION := $(strip $(file <VERSION))
ifeq ($(VERSION),)
$(error VERSION is missing or empty: it holds the version, one line such as 0.1.0)
endif
GIT ?= git
GIT_DESCRIBE := $(shell [ "$$($(GIT) rev-parse --show-toplevel 2>/dev/null)" = "$(CURDIR)" ] && \
		  $(GIT) describe --always --dirty 2>/dev/null)
VERSION_STRING := $(VERSION)$(if $(GIT_DESCRIBE), ($(GIT_DESCRIBE)))

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin

# Tests: every folder under tests/ holding test_*.c becomes one Criterion binary,
# tests/runtime/test_*.c -> $(BUILD)/tests/runtime.test. Programs the tests run
# (a busy child for the probe tests, say) live in tests/<folder>/helpers/.
TEST_SRCS := $(shell find tests -name 'test_*.c' -not -path '*/helpers/*' 2>/dev/null | sort)
ifneq ($(filter thread,$(SAN_LIST)),)
# Criterion cannot start under ThreadSanitizer (Snaipe/Criterion#274): the runtime's
# tests, and the workloads' that build lock-free primitives of their own (permit's
# semaphores, queue-spsc's queues), are built against the stand-in in tests/tsan and
# run by its runner instead.
TSAN_WORKLOAD_TESTS := tests/workloads/test_permit.c tests/workloads/test_queue_spsc.c
TEST_SRCS := $(filter tests/runtime/% $(TSAN_WORKLOAD_TESTS),$(TEST_SRCS))
TEST_RUNNER := $(BUILD)/obj/tests/tsan/runner.o
TEST_LIBS :=
$(BUILD)/obj/tests/%.o: SL_CFLAGS += -Itests/tsan
export TSAN_OPTIONS ?= halt_on_error=1 second_deadlock_stack=1
else
TEST_RUNNER :=
TEST_LIBS := -lcriterion
endif
TEST_DIRS := $(sort $(patsubst %/,%,$(dir $(TEST_SRCS))))
TEST_BINS := $(patsubst tests/%,$(BUILD)/tests/%.test,$(TEST_DIRS))
HELPER_SRCS := $(if $(filter thread,$(SAN_LIST)),,$(shell find tests -path '*/helpers/*.c' 2>/dev/null | sort))
HELPER_BINS := $(patsubst %.c,$(BUILD)/tests/helpers/%,$(notdir $(HELPER_SRCS)))
# BPF objects the tests load (tests/probes/refused.bpf.c: a program the verifier refuses),
# built as the probes' are, each with its skeleton: tests/X/Y.bpf.c -> $(BUILD)/tests/X/Y.skel.h.
TEST_BPF_SRCS := $(if $(filter thread,$(SAN_LIST)),,$(wildcard tests/*/*.bpf.c))
TEST_SKELS := $(patsubst %.bpf.c,$(BUILD)/%.skel.h,$(TEST_BPF_SRCS))

BENCH_SRCS := $(wildcard bench/*.c)
BENCH_BINS := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))
# The programs of bench/ that tests/bench/ runs, built for `make test` as well.
# The peers in other languages too, each where its toolchain is installed (tests/bench skips
# one whose toolchain is absent, naming it), and not in sanitizer builds: they test no C.
TEST_PEER_BINS := $(BUILD)/bench/tcpserve \
	$(if $(wildcard /usr/bin/go),$(BUILD)/bench/gopeer) \
	$(if $(and $(wildcard /usr/bin/cargo),$(wildcard /usr/bin/rustc), \
		   $(wildcard /usr/share/cargo/registry/tokio-1.*)),$(BUILD)/bench/tokiopeer) \
	$(if $(wildcard /usr/lib/jvm/java-17-openjdk-*/bin/javac),$(BUILD)/bench/jdkpeer \
	     $(BUILD)/bench/java/Peer.class)
TEST_BENCH_BINS := $(if $(filter thread,$(SAN_LIST)),,$(BUILD)/bench/tcppeer \
	$(if $(SAN_LIST),,$(TEST_PEER_BINS)))

# libFuzzer targets, one per parser of outside input: fuzz/fuzz_X.c -> $(FUZZ_BUILD)/fuzz/fuzz_X,
# linked against a library built with the fuzzer's coverage, ASan and UBSan. Each run starts
# from the seeds in fuzz/corpus/X/ and keeps what it finds in $(FUZZ_BUILD)/fuzz/corpus/X/;
# a crash leaves its input in $(FUZZ_BUILD)/fuzz/ and fails the target.
FUZZ_SECONDS ?= 60
FUZZ_SAN := fuzzer-no-link,address,undefined
FUZZ_SRCS := $(wildcard fuzz/fuzz_*.c)
FUZZ_BINS := $(patsubst fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRCS))

DEPFILES := $(patsubst %.o,%.d,$(LIB_OBJS) $(CLI_OBJS) $(TEST_RUNNER)) \
	    $(patsubst %.c,$(BUILD)/obj/%.d,$(FUZZ_SRCS)) \
	    $(patsubst %.bpf.o,%.bpf.d,$(BPF_OBJS)) \
	    $(patsubst %.bpf.c,$(BUILD)/%.bpf.d,$(TEST_BPF_SRCS)) \
	    $(patsubst %.c,$(BUILD)/obj/%.d,$(TEST_SRCS) $(HELPER_SRCS) $(BENCH_SRCS))

DEPS_OK := $(BUILD)/.deps-ok

.PHONY: all install man FORCE run test bench bench-scaling peers golden vmlinux deps clean check-deps reliability fuzz fuzz-run
all: $(BIN)

# ---------------------------------------------------------------------------
# Dependencies

deps:
	$(Q)missing=$$(for p in $(DEB_PKGS) $(PKGS_EXTRA); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -z "$$missing" ]; then echo "deps: all installed"; exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then \
		echo "deps: missing Debian packages:" $$missing "— run 'sudo make deps'" >&2; exit 1; fi; \
	echo "deps: installing" $$missing; \
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing || \
	{ apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; }

# The stamp is remade when this Makefile (and so the package list) changes.
$(DEPS_OK): Makefile
	$(Q)missing=$$(for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then $(MAKE) --no-print-directory deps || exit 1; fi
	$(Q)mkdir -p $(@D) && touch $@

check-deps: $(DEPS_OK)

# ---------------------------------------------------------------------------
# BPF: clang -target bpf -> object -> bpftool skeleton (the probes', and the tests')

$(BUILD)/%.bpf.o: %.bpf.c $(VMLINUX_H) | $(DEPS_OK)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@
	$(Q)$(LLVM_STRIP) -g $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(notdir $*)_bpf > $@

# The types the CO-RE relocations of oncpu, offcpu and sched name, from the kernel the build runs on,
# and that kernel's notes (probes/common/core_btf.c uses them only on the same kernel).
# Where either cannot be read, or bpftool cannot extract, the file is left empty and
# the loaders let libbpf read the kernel's BTF. A new boot makes them again.
KERNEL_BTF := /sys/kernel/btf/vmlinux
KERNEL_NOTES := /sys/kernel/notes
CORE_BTFS := $(foreach p,oncpu offcpu sched,$(BUILD)/probes/$(p)/$(p).min.btf)

$(BUILD)/probes/%.min.btf: $(BUILD)/probes/%.bpf.o $(wildcard $(KERNEL_NOTES))
	$(call msg,MIN-BTF,$@)
	$(Q)if $(BPFTOOL) gen min_core_btf $(KERNEL_BTF) $@.tmp $< >/dev/null 2>&1; then \
		mv -f $@.tmp $@; \
	else \
		rm -f $@.tmp; : > $@; \
		echo "  (no CO-RE extract for $(notdir $*): its loader will read $(KERNEL_BTF))"; \
	fi

$(BUILD)/probes/kernel.notes: $(wildcard $(KERNEL_NOTES)) | $(DEPS_OK)
	$(Q)mkdir -p $(@D)
	$(Q)cat $(KERNEL_NOTES) > $@.tmp 2>/dev/null || : > $@.tmp; mv -f $@.tmp $@

$(BUILD)/obj/probes/common/core_btf_blobs.o: $(CORE_BTFS) $(BUILD)/probes/kernel.notes
$(BUILD)/obj/probes/common/core_btf_blobs.o: ALL_CFLAGS += -Wa,-I$(BUILD)/probes

# ---------------------------------------------------------------------------
# C

# Every object waits for the skeletons on a first build; afterwards -MMD tracks them.
$(BUILD)/obj/%.o: %.c | $(DEPS_OK) $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/obj/%.o: %.S | $(DEPS_OK)
	$(call msg,AS,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

# The built-in stack rules are assembled into the library with .incbin, which the
# assembler's -MMD output does not list.
$(BUILD)/obj/analysis/rules_builtin.o: analysis/categories.rules

$(LIB): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

# Written on every make, through a temporary of this shell's own: two makes at once (the
# build tests run make install side by side) must not remove each other's.
$(BUILD)/version.h: FORCE
	$(Q)mkdir -p $(@D) && tmp=$@.$$$$.tmp && \
		printf '#define SCHEDLAB_VERSION "%s"\n' '$(VERSION_STRING)' > $$tmp && \
		if cmp -s $$tmp $@; then rm -f $$tmp; else mv -fT $$tmp $@; fi
$(BUILD)/obj/cli/main.o: $(BUILD)/version.h

$(BIN): $(CLI_OBJS) $(LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(CLI_OBJS) $(LIB) $(LDLIBS)

# Man pages made from the commands' own --help by help2man, so that they say what the
# binary does: schedlab(1), and schedlab-COMMAND(1) for each command. Each through a
# temporary of its shell's own, as version.h is.
MAN_COMMANDS := run list flame compare diagnose sweep profile suite
MANS := $(BUILD)/man/schedlab.1 $(patsubst %,$(BUILD)/man/schedlab-%.1,$(MAN_COMMANDS))
MANDIR ?= $(PREFIX)/share/man
# where bash-completion looks for a command's completion (completions/schedlab.bash)
COMPLETIONDIR ?= $(PREFIX)/share/bash-completion/completions
HELP2MAN := help2man -L C.UTF-8 --no-info --version-option=--version

man: $(MANS)

$(BUILD)/man/schedlab.1: $(BIN)
	$(call msg,MAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)tmp=$@.$$$$.tmp; $(HELP2MAN) --name='a profiling workbench for task runtimes' \
	-o $$tmp $(BIN) && mv -f $$tmp $@

# The command's line of 'schedlab --help' is its NAME; the page is schedlab-COMMAND's.
$(BUILD)/man/schedlab-%.1: $(BIN)
	$(call msg,MAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)name=$$($(BIN) --help | awk '$$1 == "$*" { $$1 = ""; sub(/^ +/, ""); print; exit }'); \
	[ -n "$$name" ] || { echo "man: no command $* in schedlab --help" >&2; exit 1; }; \
	tmp=$@.$$$$.tmp; $(HELP2MAN) --name="$$name" --help-option='$* --help' -o $$tmp $(BIN) && \
	sed -i -e '1,/^\.TH/s/^\.TH SCHEDLAB /.TH SCHEDLAB-$(shell echo $* | tr a-z A-Z) /' \
	    -e '/^\.SH NAME/{n;s/^schedlab /schedlab-$* /}' $$tmp && mv -f $$tmp $@

# The binary, the man pages and the bash completion are all there is to install: the
# stack rules and the BPF objects are built into the binary. Each copy goes beside its target and is renamed
# over it, and only over a regular file: a link or a folder there is left alone, with an
# error.
install: $(BIN) $(MANS)
	$(Q)put() { dest="$$2/$${4:-$$(basename $$1)}"; \
	if [ -L "$$dest" ] || { [ -e "$$dest" ] && [ ! -f "$$dest" ]; }; then \
		echo "install: $$dest is not a regular file; remove it, or set DESTDIR/PREFIX elsewhere" >&2; \
		return 1; fi; \
	install -d "$$2" && tmp=$$(mktemp "$$2/.schedlab.XXXXXX") && \
	{ install -m $$3 "$$1" "$$tmp" && mv -fT "$$tmp" "$$dest" || { rm -f "$$tmp"; return 1; }; } && \
	echo "install: $$dest"; }; \
	put $(BIN) '$(DESTDIR)$(BINDIR)' 0755 && \
	for m in $(MANS); do put "$$m" '$(DESTDIR)$(MANDIR)/man1' 0644 || exit 1; done && \
	put completions/schedlab.bash '$(DESTDIR)$(COMPLETIONDIR)' 0644 schedlab

# ---------------------------------------------------------------------------
# Tests

# A test that includes a skeleton waits for it on a first build; afterwards -MMD tracks it.
$(patsubst %.c,$(BUILD)/obj/%.o,$(TEST_SRCS)): | $(TEST_SKELS)

define test_rule
$(BUILD)/tests/$(1).test: $(patsubst %.c,$(BUILD)/obj/%.o,$(filter tests/$(1)/test_%.c,$(TEST_SRCS))) $(TEST_RUNNER) $(LIB)
	$$(call msg,LD,$$@)
	$$(Q)mkdir -p $$(@D)
	$$(Q)$$(CC) $$(ALL_LDFLAGS) -o $$@ $$(filter %.o,$$^) $(LIB) $$(LDLIBS) $(TEST_LIBS)
endef
$(foreach d,$(patsubst tests/%,%,$(TEST_DIRS)),$(eval $(call test_rule,$(d))))

# Helper programs are built the way the runtime is (frame pointers) but stand alone, and
# never with a sanitizer: they are the programs the probe tests sample, standing in for a
# profiled program, and a sanitizer's runtime (built without frame pointers) in them would
# change the stacks the tests check rather than test anything of ours.
$(patsubst %.c,$(BUILD)/obj/%.o,$(HELPER_SRCS)) $(HELPER_BINS): SAN_FLAGS :=
define helper_rule
$(BUILD)/tests/helpers/$(basename $(notdir $(1))): $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
	$$(call msg,LD,$$@)
	$$(Q)mkdir -p $$(@D)
	$$(Q)$$(CC) $$(ALL_LDFLAGS) -o $$@ $$^ -lm
endef
$(foreach h,$(HELPER_SRCS),$(eval $(call helper_rule,$(h))))

# Each binary runs in turn; the first failure fails the target. SCHEDLAB_BUILD tells the
# tests where the schedlab binary, the helpers and the bench programs are, SCHEDLAB_SANITIZE
# how it was built.
test: $(BIN) $(TEST_BINS) $(HELPER_BINS) $(TEST_BENCH_BINS)
	$(Q)status=0; for t in $(TEST_BINS); do \
		echo "== $$t"; \
		SCHEDLAB_BUILD=$(BUILD) SCHEDLAB_SANITIZE=$(SANITIZE) $$t --jobs 1 $(TEST_ARGS) || status=1; \
	done; exit $$status

# ---------------------------------------------------------------------------
# Fuzzing

$(BUILD)/fuzz/%: $(BUILD)/obj/fuzz/%.o $(LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_LDFLAGS) -fsanitize=fuzzer -o $@ $< $(LIB) $(LDLIBS)

fuzz:
	$(Q)$(MAKE) --no-print-directory SANITIZE=$(FUZZ_SAN) fuzz-run

# -max_total_time bounds each run; -rss_limit_mb keeps a runaway allocation a finding
fuzz-run: $(FUZZ_BINS)
	$(Q)status=0; for f in $(FUZZ_BINS); do \
		t=$${f##*/fuzz_}; mkdir -p $(BUILD)/fuzz/corpus/$$t; \
		echo "== $$f ($(FUZZ_SECONDS) s)"; \
		$$f -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=1024 -print_final_stats=1 \
			-artifact_prefix=$(BUILD)/fuzz/$$t- $(BUILD)/fuzz/corpus/$$t fuzz/corpus/$$t \
			2>$(BUILD)/fuzz/$$t.log || { tail -40 $(BUILD)/fuzz/$$t.log; status=1; }; \
		grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added)' \
			$(BUILD)/fuzz/$$t.log; grep -E '^#[0-9]+.*DONE' $(BUILD)/fuzz/$$t.log | tail -1; \
	done; exit $$status

# ---------------------------------------------------------------------------
# The default job: the blocking-TCP study (a blocked worker strands its queue under kyo
# until the flush and the extra workers fix it) and spawn-join, under ce, kyo and kyo's
# two fixes, with the on-CPU probe: the table, each configuration's top finding, and
# where its flame graph and report are.
RUN_JOB := tcp-blocking spawn-join --preset ce,kyo,kyo-flush,kyo-tuned --warmup 2

run: $(BIN)
	$(Q)$(BIN) run $(RUN_JOB) $(RUN_ARGS)

# ---------------------------------------------------------------------------
# Benchmarks

$(BUILD)/bench/%: bench/%.c $(LIB) | $(DEPS_OK)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) $(dir $(BUILD)/obj/$<)
	$(Q)$(CC) $(ALL_CFLAGS) -MF $(BUILD)/obj/bench/$*.d -o $@ $< $(LIB) $(LDLIBS)

# The Go peers: the standard library only, with the toolchain, its cache and GOPATH kept
# under $(BUILD) so that nothing is written outside it.
GO_ENV := GOCACHE=$(abspath $(BUILD))/go/cache GOPATH=$(abspath $(BUILD))/go/path \
	  GOTOOLCHAIN=local GOENV=off GOFLAGS=
$(BUILD)/bench/gopeer: $(wildcard bench/go/*.go) bench/go/go.mod
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)cd bench/go && $(GO_ENV) go build -buildvcs=false -o $(abspath $@) .

# The Tokio peers: Debian's cargo and rustc by path (a rustup toolchain earlier on PATH is
# not Debian's), offline, against Debian's packaged crates (librust-tokio-dev) as a
# directory source that replaces crates.io. The crate is copied under $(BUILD), and cargo's
# home, lock file and target stay there: nothing is written beside the sources. Frame
# pointers in every crate built, so that profiles walk Tokio's frames.
CARGO ?= /usr/bin/cargo
RUSTC ?= /usr/bin/rustc
TOKIO_BUILD := $(abspath $(BUILD))/tokio
$(BUILD)/bench/tokiopeer: bench/tokio/Cargo.toml $(wildcard bench/tokio/src/*.rs)
	$(call msg,CARGO,$@)
	$(Q)mkdir -p $(@D) $(TOKIO_BUILD)/cargo-home $(TOKIO_BUILD)/crate
	$(Q)printf '%s\n' '[source.crates-io]' 'replace-with = "debian"' '' '[source.debian]' \
		'directory = "/usr/share/cargo/registry"' '' '[net]' 'offline = true' \
		>$(TOKIO_BUILD)/cargo-home/config.toml
	$(Q)rm -rf $(TOKIO_BUILD)/crate/src && cp -r bench/tokio/src bench/tokio/Cargo.toml \
		$(TOKIO_BUILD)/crate/
	$(Q)cd $(TOKIO_BUILD)/crate && CARGO_HOME=$(TOKIO_BUILD)/cargo-home \
		CARGO_TARGET_DIR=$(TOKIO_BUILD)/target RUSTC=$(RUSTC) \
		RUSTFLAGS="-C force-frame-pointers=yes" $(CARGO) build --release --offline --quiet
	$(Q)cp $(TOKIO_BUILD)/target/release/tokiopeer $@

# The JDK peers: JDK 17's javac into $(BUILD)/bench/java, and jdkpeer, the script that runs
# them with the same JDK's java.
JDK_HOME ?= $(or $(firstword $(wildcard /usr/lib/jvm/java-17-openjdk-*)),/usr)
$(BUILD)/bench/java/Peer.class: bench/java/Peer.java
	$(call msg,JAVAC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(JDK_HOME)/bin/javac --release 17 -Xlint:all -Werror -d $(@D) $<
$(BUILD)/bench/jdkpeer: bench/java/jdkpeer.sh $(BUILD)/bench/java/Peer.class
	$(call msg,GEN,$@)
	$(Q)sed 's|@JAVA@|$(JDK_HOME)/bin/java|' $< >$@ && chmod 755 $@

# The peers in other languages, and the program that starts the TCP server for them (the
# classes named too, so that a missing one is remade, not taken for an intermediate).
PEER_BINS := $(BUILD)/bench/gopeer $(BUILD)/bench/tokiopeer $(BUILD)/bench/jdkpeer \
	     $(BUILD)/bench/java/Peer.class $(BUILD)/bench/tcpserve
peers: $(PEER_BINS)

# Each part is its own script in bench/ and can run alone; the helpers are the children
# the probes' cost benchmarks measure.
BENCH_PARTS := run suite stacks oncpu attach analysis offcpu sched counters runtime models profile
bench: $(BIN) $(BENCH_BINS) $(HELPER_BINS)
	$(Q)$(MAKE) --no-print-directory deps PKGS_EXTRA="$(BENCH_PKGS)" >/dev/null
	$(Q)$(MAKE) --no-print-directory peers
	$(Q)for p in $(BENCH_PARTS); do \
		echo "bench: $$p" >&2; BUILD=$(BUILD) bench/$$p.sh || exit 1; echo; \
	done > BENCHMARKS.md.tmp || { rm -f BENCHMARKS.md.tmp; exit 1; }
	$(Q)mv BENCHMARKS.md.tmp BENCHMARKS.md
	$(Q)echo "bench: wrote BENCHMARKS.md"

# How the presets scale with workers on this machine (Markdown on stdout); worth running
# where there are more cores than here.
bench-scaling: $(BIN) $(BENCH_BINS)
	$(Q)$(MAKE) --no-print-directory deps PKGS_EXTRA="$(BENCH_PKGS)" >/dev/null
	$(Q)$(MAKE) --no-print-directory $(BUILD)/bench/gopeer
	$(Q)BUILD=$(BUILD) bench/scaling.sh

# ---------------------------------------------------------------------------
# Golden files and generated headers

golden: $(BIN) $(BUILD)/tests/analysis.test
	$(Q)for f in tests/flamegraphs/data/*.folded; do \
		$(BIN) flame $$f -o $${f%.folded}.svg --title "$$(basename $${f%.folded})" || exit 1; \
	done; echo "golden: regenerated tests/flamegraphs/data/*.svg"
	$(Q)SCHEDLAB_GOLDEN=1 $(BUILD)/tests/analysis.test --filter 'suite/markdown*' >/dev/null && \
		echo "golden: regenerated tests/analysis/data/suite.md"

vmlinux:
	$(Q)mkdir -p vmlinux-headers/$(ARCH)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > vmlinux-headers/$(ARCH)/vmlinux_$(KVER).h
	$(Q)ln -sf vmlinux_$(KVER).h vmlinux-headers/$(ARCH)/vmlinux.h
	$(Q)echo "vmlinux: vmlinux-headers/$(ARCH)/vmlinux.h -> vmlinux_$(KVER).h"

clean:
	rm -rf build

-include $(DEPFILES)

# ---------------------------------------------------------------------------
# Reliability: each bad input, fault, sanitizer build and fuzz run, and its outcome.
# RELIABILITY_SAN=0 leaves out the sanitizer builds and the fuzzing.

RELIABILITY_SAN ?= 1
# ss (iproute2) and pgrep (procps) find the TCP server and its port mid-run.
RELIABILITY_PKGS := iproute2 procps
reliability: $(BIN)
	$(Q)$(MAKE) --no-print-directory deps PKGS_EXTRA="$(RELIABILITY_PKGS)" >/dev/null
	$(Q)MAKE="$(MAKE)" FUZZ_SECONDS=$(FUZZ_SECONDS) RELIABILITY_SAN=$(RELIABILITY_SAN) \
		tests/reliability/run.sh $(BUILD) RELIABILITY.md
