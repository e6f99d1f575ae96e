# SPDX-License-Identifier: MIT
#
# viaduct: the commands a user and CI type.  The build itself is CMake +
# Ninja; this file only drives it (see docs/build.md).
#
#   make deps      install missing Debian packages (apt-get, as root or sudo)
#   make build     release build (-O2 -g) in build/
#   make demo      deps + build + the MPI demo: ping-pong latency and bandwidth
#                  on 2 ranks, each protocol side by side with the machine's
#                  limits, one table and its plot (bench/mpi/demo.py)
#   make test      deps + every test in release, ASan+UBSan and TSan builds,
#                  plus an install smoke test; summary at the end
#   make install   PREFIX=/some/dir (default /usr/local)
#   make bench     build + every benchmark (full; BENCH_ARGS=--quick): lmm, vipl, MPI
#                  against Open MPI and MPICH (bench/mpi/run.sh, the collectives
#                  bench/mpi/coll.sh; as root also across two namespace hosts,
#                  bench/mpi/hosts.sh, and start-up over four, bench/mpi/scale.sh)
#   make clean     remove every build directory

# Debian packages needed to build, test (gdb: the stacks of a hung test) and
# plot; one list, used by deps.
DEB_PACKAGES := cmake ninja-build gcc make pkg-config python3 \
	python3-matplotlib procps util-linux mpich libfabric-dev libfabric-bin \
	iproute2 libpmix-dev openmpi-bin libopenmpi-dev libmpich-dev gfortran \
	gdb

PREFIX ?= /usr/local
DESTDIR ?=
JOBS ?= 2
CMAKE ?= cmake
CTEST ?= ctest
# Debian's python3, which has python3-matplotlib; a python3 earlier on PATH
# (pyenv, venv) may not.
PYTHON ?= /usr/bin/python3
# Extra bench_lmm options, e.g. BENCH_ARGS=--quick; bench_vipl gets the same
# unless VIPL_BENCH_ARGS says otherwise (e.g. VIPL_BENCH_ARGS="--only cq"),
# and bench/mpi/run.sh its --quick unless MPI_BENCH_ARGS says otherwise.
# run.sh installs Open MPI from Debian when it is missing (as the comparison
# with them needs; make deps does not, to keep make test lean); add
# MPI_BENCH_ARGS=--no-install to skip what is missing instead.
BENCH_ARGS ?=
VIPL_BENCH_ARGS ?= $(BENCH_ARGS)
MPI_BENCH_ARGS ?= $(filter --quick,$(BENCH_ARGS))
# bench/mpi/coll.sh (collectives on one node) gets the same --quick unless
# COLL_BENCH_ARGS says otherwise (e.g. COLL_BENCH_ARGS="--ops allreduce --rounds 5").
COLL_BENCH_ARGS ?= $(filter --quick,$(MPI_BENCH_ARGS))
# make demo: bench/mpi/demo.py options (e.g. --timeout 30).
DEMO_ARGS ?=

BUILD_DIR := build
BENCH_OUT := $(BUILD_DIR)/bench-results
BUILD_DIRS := build build-asan build-tsan

CONFIGURE := $(CMAKE) -S . -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVIADUCT_SANITIZE= \
	-DCMAKE_INSTALL_LIBDIR=lib

.DEFAULT_GOAL := build
.PHONY: help deps build demo demo-run test install bench bench-run clean

help:
	@sed -n 's/^#   make /make /p' $(firstword $(MAKEFILE_LIST))

deps:
	@bash tools/deps.sh $(DEB_PACKAGES)

# Configuring every time is cheap and picks up new source folders.
build:
	@command -v $(CMAKE) >/dev/null && command -v ninja >/dev/null || \
		{ echo "build: cmake or ninja missing; run 'make deps' first" >&2; exit 1; }
	$(CONFIGURE) -B $(BUILD_DIR)
	$(CMAKE) --build $(BUILD_DIR) -j $(JOBS)

# Sub-makes keep the steps in order even under make -j.
demo: deps
	@$(MAKE) --no-print-directory build
	@$(MAKE) --no-print-directory demo-run

# About a minute on two cores; fails only when a run fails or hangs (every
# run has a timeout), never because of the numbers.
demo-run:
	$(PYTHON) bench/mpi/demo.py --build $(BUILD_DIR) --out $(BENCH_OUT) $(DEMO_ARGS)

bench: build
	@$(MAKE) --no-print-directory bench-run

# One after the other, never in parallel: each benchmark wants the cores.
bench-run:
	@for b in bench_lmm bench_vipl; do test -x $(BUILD_DIR)/bench/$$b || \
		{ echo "bench: $(BUILD_DIR)/bench/$$b was not built (no bench/ folder?)" >&2; exit 1; }; done
	mkdir -p $(BENCH_OUT)
	$(BUILD_DIR)/bench/bench_lmm $(BENCH_ARGS) --csv $(BENCH_OUT)/lmm.csv
	$(PYTHON) bench/lmm/plot.py $(BENCH_OUT)/lmm.csv $(BENCH_OUT)/lmm.png
	$(BUILD_DIR)/bench/bench_vipl $(VIPL_BENCH_ARGS) --csv $(BENCH_OUT)/vipl.csv
	$(PYTHON) bench/vipl/plot.py $(BENCH_OUT)/vipl.csv $(BENCH_OUT)/vipl.png
	@if [ "$$(id -u)" -eq 0 ]; then bash bench/vipl/hosts.sh $(BUILD_DIR) $(if $(filter --quick,$(VIPL_BENCH_ARGS) $(BENCH_ARGS)),--quick) \
		| tee $(BENCH_OUT)/vipl-hosts.txt; \
	else echo "bench: VIA across hosts (bench/vipl/hosts.sh) needs root for network namespaces: skipped"; fi
	PYTHON=$(PYTHON) bash bench/mpi/run.sh --build $(BUILD_DIR) --out $(BENCH_OUT) \
		$(MPI_BENCH_ARGS)
	PYTHON=$(PYTHON) bash bench/mpi/coll.sh --build $(BUILD_DIR) --out $(BENCH_OUT)/coll \
		$(COLL_BENCH_ARGS)
	@if [ "$$(id -u)" -eq 0 ]; then PYTHON=$(PYTHON) bash bench/mpi/hosts.sh $(BUILD_DIR) $(filter --quick --no-install,$(MPI_BENCH_ARGS)) \
		| tee $(BENCH_OUT)/mpi-hosts.txt; \
	else echo "bench: MPI across hosts (bench/mpi/hosts.sh) needs root for network namespaces: skipped"; fi
	@if [ "$$(id -u)" -eq 0 ]; then PYTHON=$(PYTHON) bash bench/mpi/scale.sh $(BUILD_DIR) $(filter --quick,$(MPI_BENCH_ARGS)) \
		| tee $(BENCH_OUT)/mpi-scale.txt; \
	else echo "bench: MPI start-up over four hosts (bench/mpi/scale.sh) needs root for network namespaces: skipped"; fi
	@echo "bench: results in $(BENCH_OUT)/{lmm,vipl,mpi,coll/coll}.csv, plots in $(BENCH_OUT)/{lmm,vipl,mpi}.png and $(BENCH_OUT)/coll/coll-*.png"

test: deps
	@JOBS=$(JOBS) CMAKE=$(CMAKE) CTEST=$(CTEST) MAKE="$(MAKE)" bash tools/check.sh

install: build
	DESTDIR=$(DESTDIR) $(CMAKE) --install $(BUILD_DIR) --prefix $(abspath $(PREFIX))

clean:
	rm -rf $(BUILD_DIRS)
