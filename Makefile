# Two entry points for a fresh machine (see README): `make demo` and `make test`.
# Both create .venv and install netweave into it when missing or when pyproject.toml or the lock changed:
# `make demo` with the `demo` extra (what the main job needs), `make test` with the `test` extra.
# Each extra has its own stamp, keyed on pyproject.toml and the lock, so neither install stands for the other.
# Every version comes from the lock, constraints.txt (pip, setuptools and netweave's whole dependency
# closure, pinned), so the two commands install the same set next month as today; `make lock` refreshes it.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
LOCK   := constraints.txt
SUM    := $(shell cat pyproject.toml $(LOCK) | cksum | cut -d' ' -f1)
stamp   = $(VENV)/.installed-$(1)-$(SUM)

.PHONY: demo test bench clean system-packages lock

# System libraries, installed as root with apt when missing (a few seconds); elsewhere the tests
# that need them skip and say why. Never fatal. clang, llvm, libbpf-dev, bpftool: the testbed's XDP
# data plane (BPF compiled against libbpf's headers); libmetis5: `--method metis32` (32-bit METIS).
SYSTEM_PACKAGES := clang llvm libbpf-dev bpftool libmetis5
system-packages:
	@if command -v clang >/dev/null && test -e /usr/include/bpf/bpf_helpers.h && ldconfig -p | grep -q libmetis.so.5; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing $(SYSTEM_PACKAGES) (the testbed's XDP data plane, 32-bit METIS)"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(SYSTEM_PACKAGES)) >/dev/null 2>&1 \
			|| echo "could not install $(SYSTEM_PACKAGES); the XDP and metis32 tests will skip"; \
	else echo "not root or no apt-get: the XDP and metis32 tests skip (install $(SYSTEM_PACKAGES) to run them)"; fi

$(VENV)/.installed-%-$(SUM): pyproject.toml $(LOCK)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -c $(LOCK) pip setuptools
	$(BIN)/python -m pip install -q -c $(LOCK) --no-build-isolation -e '.[$*]'
	rm -f $(VENV)/.installed-$*-* && touch $@

# Refresh the lock with today's releases (a fresh venv resolves `.[test]`); review, `make test`, commit.
lock:
	$(PYTHON) scripts/lock.py

demo: $(call stamp,demo)
	$(BIN)/netweave compare --report report

test: $(call stamp,test) system-packages
	$(BIN)/python -m pytest -q

bench: $(call stamp,test)
	$(BIN)/python benchmarks/bench_partition.py
	$(BIN)/python benchmarks/bench_plan.py
	$(BIN)/python benchmarks/bench_train.py
	$(BIN)/python benchmarks/bench_ina.py
	$(BIN)/python benchmarks/bench_route.py
	$(BIN)/python benchmarks/bench_pahina.py

clean:
	rm -rf $(VENV) build *.egg-info
