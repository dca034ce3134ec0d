"""The examples at the end of every command's ``--help`` (its ``epilog``).

Each runs as written from a fresh folder with netweave installed (files that an example names are
made by an example above it or by ``netweave topology export``); ``tests/test_help.py`` parses every
line against the command it documents, so an option renamed here fails a test.
"""

from __future__ import annotations

EXAMPLES_RAW: dict[str, list[str]] = {
    "datasets": ["netweave datasets", "netweave datasets --json"],
    "graph stats": ["netweave graph stats cora --json", "netweave graph stats rmat:n=10000,m=50000,seed=1",
                    "netweave graph stats reddit-like:scale=0.01"],
    "partition": ["netweave partition cora --parts 8 --method metis --out cora8.npz --json",
                  "netweave partition cora --method hierarchical --topology dgx1x2"],
    "plan": ["netweave plan cora --topology dgx1 --json",
             "netweave plan cora --topology dgx1 --planner spst --out cora-dgx1.npz",
             "netweave plan cora --topology dgx1 --cost-model dgcl",
             "netweave plan --validate cora-dgx1.npz --topology dgx1"],
    "train": ["netweave train cora --workers 4 --comm spst --epochs 200",
              "netweave train cora --workers 4 --comm allreduce --json",
              "netweave train cora --workers 8 --topology dgx1 --parts-file cora8.npz --plan-file cora-dgx1.npz"],
    "ina": ["netweave ina cora --workers 8 --switch-memory 100KB --verify",
            "netweave ina cora --workers 8 --strategy straw --switch-memory unlimited --timeline ul.csv --plot ul.png",
            "netweave ina cora --workers 8 --strategy switchgnn --blocking paper --switch-memory 1MB --json"],
    "timeslot": ["netweave timeslot cora --order gamr --k 4", "netweave timeslot cora --order random --json"],
    "route": ["netweave route --topology leafspine:leaves=8,spines=8,hosts=8,ina=0.3,pipelines=4,seed=1 "
              "--workers 40 --out aro.json",
              "netweave route --topology leafspine:leaves=8,spines=8,hosts=8,ina=0.3,pipelines=4,seed=1 "
              "--workers 40 --algorithm ecmp --json",
              "netweave route --topology fattree:k=4,ina=0.4,gbps=10 --workers 10 --precisions fp8:5,fp16:3,fp32:2 "
              "--algorithm pahina",
              "netweave route --topology leafspine:leaves=8,spines=8,hosts=8,ina=0.3,pipelines=4,seed=1 "
              "--evaluate aro.json"],
    "aggsvc demo": ["netweave aggsvc demo --workers 16 --loss 0.05 --dup 0.05 --reorder 0.1"],
    "kernels bench": ["netweave kernels bench cora --gpus 4 --feature-dim 16",
                      "netweave kernels bench reddit-like:scale=0.1 --gpus 4 --feature-dim 64 --tune   # on a GPU"],
    "topology show": ["netweave topology show dgx1", "netweave topology show my-clos.yaml --links --json"],
    "topology export": ["netweave topology export leafspine:leaves=4,spines=2,hosts=4,ina=0.5 --out my-clos.yaml"],
    "compare": ["netweave compare --report report/", "netweave compare cora --sections exchange,routing --json",
                "netweave compare amazon_cs.npz --topology dgx1x2 --report out/"],
    "sweep": ["netweave sweep examples/sweep-ina-memory.yaml --out sweep-out/ --processes 2",
              "netweave sweep examples/sweep-ina-memory.yaml --ray auto"],
    "repro": ["netweave repro --list", "netweave repro switchgnn-fig18 --scale tiny --out repro-out/",
              "netweave repro all --full --out repro-full/"],
}


def epilog(lines: list[str]) -> str:
    """The lines under ``Examples:``, kept as they are by click's plain help (its ``\\b`` marker)."""
    return "Examples:\n\n\b\n" + "\n".join(f"  {line}" for line in lines)


EXAMPLES: dict[str, str] = {name: epilog(lines) for name, lines in EXAMPLES_RAW.items()}
