# SPDX-License-Identifier: GPL-2.0
#
# siw_rs top-level Makefile.
#
#   make               build siw_rs/siw_rs.ko against KDIR (default: the cached test kernel)
#   make KDIR=/lib/modules/$(uname -r)/build   ... against your own CONFIG_RUST=y kernel
#   make kernel        build (or reuse) the cached test kernel
#   KASAN=1            (with any target) the test kernel with KASAN and UBSAN instead, cached
#                      apart (tools/kernel-kasan.config): make kernel KASAN=1; make check KASAN=1
#   make kdir          print the test kernel's build directory
#   make demo          build, boot a VM, show siw_rs moving data
#   make check         host tests + VM selftests; last line: "N passed, N failed"
#   make blktests      upstream blktests' nvme group over rdma, C siw and siw_rs (not in check)
#   make soak          the once-flaky paths, SOAK_RUNS times each (default 200; not in check),
#                      the run to docs/soak/latest.txt
#   make fuzz-vm       the hostile peer's long runs on the KASAN kernel (FUZZ_FRAMES, default
#                      1000000; SEED repeats a run; KASAN=0: on the test kernel)
#   make bench         perftest over siw_rs and the C siw in one VM (-icount), with ratios
#   make CLIPPY=1      build with clippy
#   make fmt           rustfmt the driver (the kernel's settings)

SHELL := /bin/bash
ROOT := $(CURDIR)
ifeq ($(KASAN),1)
SIW_RS_KFLAVOR := kasan
export SIW_RS_KFLAVOR
endif
# make 4.3's $(shell) does not see exported variables: pass the flavour explicitly.
TEST_KDIR = $(shell SIW_RS_KFLAVOR=$(or $(SIW_RS_KFLAVOR),test) bash $(ROOT)/tools/kdir)
KDIR ?= $(TEST_KDIR)
LLVM ?= -19
KMAKE := $(MAKE) -C $(KDIR) M=$(ROOT)/siw_rs LLVM=$(LLVM) RUSTC=/usr/bin/rustc \
	BINDGEN=$(shell PATH=$$HOME/.cargo/bin:$$PATH command -v bindgen) \
	RUST_LIB_SRC=/usr/lib/rustlib/src/rust/library \
	$(if $(CLIPPY),CLIPPY=1 CLIPPY_DRIVER=/usr/bin/clippy-driver)

.PHONY: all modules kernel kdir clean check host-test selftest demo bench fmt fuzz-vm soak blktests

all: modules

modules:
	@if [ ! -f "$(KDIR)/.config" ]; then \
		echo "KDIR=$(KDIR) is not a kernel build tree; run 'make kernel' or pass KDIR=" >&2; exit 1; fi
	$(KMAKE) modules

kernel:
	@bash tools/build-kernel

kdir:
	@bash tools/kdir

clean:
	-$(KMAKE) clean
	rm -f siw_rs/glue/bindings_generated.rs siw_rs/glue/layout_generated.rs

check:
	@bash tools/check

fuzz-vm:
	@bash tools/fuzz-vm

blktests:
	@bash tools/blktests

soak: modules
	@bash tools/soak

host-test:
	cargo test

selftest: modules
	@bash selftests/run

demo:
	@bash tools/demo

bench:
	@bash tools/bench

fmt:
	rustfmt siw_rs/siw_rs_main.rs
