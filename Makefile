# Two entry points for a fresh machine (see README): `make demo` and `make test`.
# Both create .venv and install netweave into it when missing or when pyproject.toml changed:
# `make demo` with the `demo` extra (what the main job needs), `make test` with the `test` extra.
# Each extra has its own stamp, keyed on pyproject.toml, so neither install stands for the other.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
SUM    := $(shell cksum pyproject.toml | cut -d' ' -f1)
stamp   = $(VENV)/.installed-$(1)-$(SUM)

.PHONY: demo test bench clean testbed-tools

# The testbed's XDP data plane compiles BPF with clang against libbpf's headers. As root with apt,
# install them when missing (a few seconds); elsewhere its tests skip and say why. Never fatal.
TESTBED_PACKAGES := clang llvm libbpf-dev bpftool
testbed-tools:
	@if command -v clang >/dev/null && test -e /usr/include/bpf/bpf_helpers.h; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing $(TESTBED_PACKAGES) for the testbed's XDP data plane"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(TESTBED_PACKAGES)) >/dev/null 2>&1 \
			|| echo "could not install $(TESTBED_PACKAGES); the XDP tests will skip"; \
	else echo "not root or no apt-get: the XDP tests skip (install $(TESTBED_PACKAGES) to run them)"; fi

$(VENV)/.installed-%-$(SUM): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[$*]'
	rm -f $(VENV)/.installed-$*-* && touch $@

demo: $(call stamp,demo)
	$(BIN)/netweave compare --report report

test: $(call stamp,test) testbed-tools
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
