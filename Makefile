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
	$(BIN)/netweave graph stats cora
	$(BIN)/netweave partition cora --parts 4 --method metis
	$(BIN)/netweave topology show dgx1
	$(BIN)/netweave plan cora --topology dgx1 --planner spst
	$(BIN)/netweave train cora --workers 4 --comm spst --epochs 200
	$(BIN)/netweave ina cora --workers 8 --strategy switchgnn --switch-memory 200KB --verify

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
