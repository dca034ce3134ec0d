# Two entry points for a fresh machine (see README): `make demo` and `make test`.
# Both create .venv and install netweave into it when missing or when pyproject.toml changed.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: demo test bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	rm -f $(VENV)/.installed-* && touch $@

demo: $(STAMP)
	$(BIN)/netweave compare --report report

test: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_partition.py
	$(BIN)/python benchmarks/bench_plan.py
	$(BIN)/python benchmarks/bench_train.py
	$(BIN)/python benchmarks/bench_ina.py
	$(BIN)/python benchmarks/bench_route.py
	$(BIN)/python benchmarks/bench_pahina.py

clean:
	rm -rf $(VENV) build *.egg-info
