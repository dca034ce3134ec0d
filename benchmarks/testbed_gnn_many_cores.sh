#!/usr/bin/env bash
# Issue 32's many-core rows (BENCHMARKS.md, "Where issue 32 stands") in one call, for a machine lent
# for minutes: what the machine is, `bench_testbed_gnn.py` at the rates given (both exchanges in one
# invocation, 8 workers, the default column slices), and reddit-like's column slices 1, 2 and 4 at
# the first rate. Run as root from the checkout's root; where the machine has no clang or package
# index, make the kit first (scripts/offline_kit.py; `.kit/env.sh` is sourced when there).
#
#   sudo benchmarks/testbed_gnn_many_cores.sh OUT [RATE ...]     # rates in Gb/s, default 0.1 0.25
#   PYTHON=.venv/bin/python EPOCHS=6 BENCH_ARGS="--datasets reddit-like" benchmarks/testbed_gnn_many_cores.sh OUT 0.1
#
# EPOCHS: the bench's epochs (default 4) and the slices' runs' (default 6); medians from the second.
# Writes OUT/machine.txt, OUT/bench.json + .png, OUT/slices_K.json; the simulator's predictions are
# added afterwards, anywhere: python benchmarks/bench_testbed_gnn.py --predict-into OUT/bench.json
set -uo pipefail
out=${1:?usage: benchmarks/testbed_gnn_many_cores.sh OUT [RATE ...]}
shift
if [ $# -gt 0 ]; then rates=("$@"); else rates=(0.1 0.25); fi
mkdir -p "$out"
py=${PYTHON:-python3}
if [ -f .kit/env.sh ]; then source .kit/env.sh || exit 1; fi
{
    echo "cores $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
    echo "kernel $(uname -r); $("$py" -V)"
    "$py" -c 'import numpy, numba, torch; print("numpy", numpy.__version__, "numba", numba.__version__, "torch", torch.__version__)'
    echo "SMT siblings (cpu: its thread siblings): $(for c in /sys/devices/system/cpu/cpu[0-9]*; do
        printf '%s:%s ' "${c##*cpu}" "$(cat "$c/topology/thread_siblings_list" 2>/dev/null)"; done)"
    echo "load at start $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$out/machine.txt" 2>&1
cat "$out/machine.txt"
# shellcheck disable=SC2086  # BENCH_ARGS is a list of words
"$py" benchmarks/bench_testbed_gnn.py --gbps "${rates[@]}" --user-gbps --no-predict --epochs "${EPOCHS:-4}" \
    --out "$out/bench.json" ${BENCH_ARGS:-} || echo "the bench failed: rc $?"
for k in 1 2 4; do
    "$py" -m netweave testbed gnn reddit-like:scale=0.02 --workers 8 --exchange ina --dataplane xdp --memory 10MB \
        --hidden 128 --gbps "${rates[0]}" --epochs "${EPOCHS:-6}" --no-check --json --column-slices "$k" \
        > "$out/slices_$k.json" || echo "column slices $k failed: rc $?"
    "$py" -c 'import json, sys; d = json.load(open(sys.argv[1])); print("column slices", sys.argv[2], "epoch",
        round(d["median_epoch_s"], 3), "exchange", round(d["median_exchange_s"], 3), "bound", d["bound"])' \
        "$out/slices_$k.json" "$k" 2>/dev/null
done
echo "load at end $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/machine.txt"
