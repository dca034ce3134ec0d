"""The DATASET argument: turn a spec string into a :class:`Graph`.

=================================== ======================================================
spec                                meaning
=================================== ======================================================
``cora``                            bundled Cora (Planetoid split), no files needed
``planetoid:DIR[:NAME]``            Planetoid ``ind.NAME.*`` files (Cora, CiteSeer, PubMed)
``npz:FILE.npz``                    gnn-benchmark ``.npz`` or a graph saved by netweave
``snap:FILE|GLOB``                  SNAP edge list(s), ``.txt``/``.csv``, optionally ``.gz``
``musae:DIR``                       MUSAE ``edges.csv`` + ``features.json`` + ``target.csv``
``rmat:n=…,m=…[,seed,feat,classes]`` R-MAT generator
``er:n=…,m=…[,seed,feat,classes]``   Erdős–Rényi G(n, m)
``star:n=…`` / ``ring:n=…``         star / cycle
``reddit-like:scale=…[,seed,feat]`` Reddit statistics (233k × scale vertices, degree ≈ 490)
``products-like:scale=…[,…]``       ogbn-products statistics (2.4M × scale, degree ≈ 51)
=================================== ======================================================

Every graph, whatever its format, passes the checks of :mod:`.validate` as it loads (one error line
naming the file and the member otherwise).

Without a prefix, a path is recognised by its shape: a directory with ``edges.csv`` is MUSAE, one
with ``ind.*.graph`` is Planetoid, ``*.npz`` is npz, other files and glob patterns are edge lists.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from .._spec import parse_kv_spec, take
from ..errors import NetweaveError
from ..progress import stage
from .generators import erdos_renyi, ring, rmat, star
from .graph import Graph
from .saved import load_graph
from .musae import load_musae
from .npz import load_npz
from .planetoid import load_planetoid, planetoid_names
from .presets import PRESETS, preset_graph
from .snap import load_snap
from .validate import validate_graph

BUNDLED = {"cora": "Cora citation graph, Planetoid split (2708 nodes, 5278 edges, 1433 features, 7 classes)"}
FORMATS = {
    "planetoid": "planetoid:DIR[:NAME]  Planetoid ind.NAME.* files",
    "npz": "npz:FILE.npz  gnn-benchmark npz (Amazon, Coauthor, …) or a saved netweave graph",
    "snap": "snap:FILE|GLOB  SNAP edge list(s) (.txt/.csv, .gz; # comments; CRLF; any integer ids)",
    "musae": "musae:DIR  MUSAE edges.csv + features.json + target.csv",
}
_GEN_PARAMS = {"n": (int, ...), "seed": (int, 0), "feat": (int, 0), "classes": (int, 0)}
GENERATORS = {
    "rmat": ("rmat:n=…,m=…[,seed=…,feat=…,classes=…]  R-MAT (a,b,c = .57,.19,.19)",
             lambda p: rmat(**p), _GEN_PARAMS | {"m": (int, ...)}),
    "er": ("er:n=…,m=…[,seed=…,feat=…,classes=…]  Erdős–Rényi G(n, m)",
           lambda p: erdos_renyi(**p), _GEN_PARAMS | {"m": (int, ...)}),
    "star": ("star:n=…  vertex 0 joined to all others", lambda p: star(**p), _GEN_PARAMS),
    "ring": ("ring:n=…  a cycle", lambda p: ring(**p), _GEN_PARAMS),
} | {
    name: (f"{name}:scale=…[,seed=…,feat=…]  {p.vertices:,} × scale vertices, mean degree ≈ {p.mean_degree:g}, "
           f"{p.features} features, {p.classes} classes",
           lambda params, name=name: preset_graph(name, **params),
           {"scale": (float, 1.0), "seed": (int, 0), "feat": (int, None)})
    for name, p in PRESETS.items()
}


def load_bundled(name: str) -> Graph:
    """A dataset shipped inside the package (``cora``)."""
    with resources.as_file(resources.files("netweave.graph") / "data" / f"{name}.npz") as path:
        return load_graph(path)


def _detect(spec: str) -> tuple[str, str]:
    """Guess the format of a prefix-less path spec."""
    path = Path(spec)
    if any(ch in spec for ch in "*?["):
        return "snap", spec
    if path.is_dir():
        if (path / "edges.csv").exists():
            return "musae", spec
        if planetoid_names(path):
            return "planetoid", spec
        raise NetweaveError(f"{spec}: directory is neither MUSAE (edges.csv) nor Planetoid (ind.*.graph)")
    if path.is_file():
        return ("npz" if path.suffix == ".npz" else "snap"), spec
    if path.exists():
        raise NetweaveError(
            f"{spec}: not a regular file (a device, pipe or socket); a dataset must be a file or directory")
    raise NetweaveError(
        f"unknown dataset {spec!r}: not bundled ({', '.join(BUNDLED)}), not a generator "
        f"({', '.join(GENERATORS)}) and no such file; run `netweave datasets` for the accepted specs")


def _generator_params(spec: str, params: dict[str, str], allowed: dict) -> dict:
    """Typed generator parameters; a wrong value is reported before a missing one (``rmat:n=-5``)."""
    given = take(params, spec, {k: (typ, None if default is ... else default) for k, (typ, default) in allowed.items()})
    for key in ("n", "m", "feat"):
        if given.get(key) is not None and given[key] < (1 if key == "n" else 0):
            what = "a positive number of vertices" if key == "n" else "non-negative"
            raise NetweaveError(f"{spec!r}: {key}={given[key]} must be {what}")
    if "classes" in params and given["classes"] < 2:
        raise NetweaveError(f"{spec!r}: classes={given['classes']} must be at least 2 (labels need two classes "
                            "or more); leave classes out for a graph without labels")
    if given.get("scale") is not None and given["scale"] <= 0:
        raise NetweaveError(f"{spec!r}: scale={given['scale']:g} must be positive, e.g. scale=0.1")
    return take(params, spec, allowed)


def load_dataset(spec: str) -> Graph:
    """Load or generate the graph named by ``spec`` (see the module docstring)."""
    spec = spec.strip()
    if not spec:
        raise NetweaveError("an empty dataset spec; give a bundled name (cora), a generator such as "
                            "rmat:n=1000,m=5000 or a file; run `netweave datasets` for the accepted specs")
    if spec.lower() in BUNDLED:
        return load_bundled(spec.lower())
    prefix, _, rest = spec.partition(":")
    key = prefix.lower()
    if key in GENERATORS:
        name, params = parse_kv_spec(spec)
        _, build, allowed = GENERATORS[name]
        values = _generator_params(spec, params, allowed)
        with stage(f"generating {spec}"):
            # built in canonical form: the checks of every loaded graph but the pass over the edges
            return validate_graph(build(values), spec, canonical=False, fix="a generator bug; please report it")
    if key in FORMATS and rest:
        fmt, target = key, rest
    else:
        fmt, target = _detect(spec)
    with stage(f"loading {spec}"):
        if fmt == "planetoid":
            directory, _, name = target.rpartition(":") if ":" in target else (target, "", "")
            return load_planetoid(directory, name or None)
        if fmt == "npz":
            return load_npz(target)
        if fmt == "musae":
            return load_musae(target)
        return load_snap(target)
