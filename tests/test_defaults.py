"""One set of defaults (issue 33): every option of every command has the default of the scenario field
it fills, and that field the default of the layer function it reaches.

The command-line side is read from the click command typer builds (what ``--help`` shows), the
scenarios' side from their dataclass fields, the layers' side from function signatures. Every
option of every command is either mapped here or listed in ``CLI_ONLY`` with the reason it has no
counterpart, so a new option whose default disagrees, or that nobody mapped, fails this test.
"""

from __future__ import annotations

import dataclasses
import inspect

import pytest
import typer

import netweave.cli
from netweave.cli.jobs import KERNELS_FEATURE_DIM
from netweave.compare import CompareConfig
from netweave.ina.choose import STAR_GBPS, choose_plan
from netweave.ina.plan import ina_plan
from netweave.plan import spst_plan
from netweave.plan.cost import DEFAULT_COST_MODEL, default_cost_model, plan_cost
from netweave.route.jobs import parse_precision_mix
from netweave.scenarios import (SWITCH_MEMORY_BYTES, ExchangeScenario, InaScenario, PartitionScenario, RouteScenario,
                                TimeslotScenario, TrainScenario)
from netweave.sim import SimConfig
from netweave.sim.layer import parse_switch_memory
from netweave.sim.network import DEFAULT_MEMORY
from netweave.topology.yaml_io import parse_bytes


def options(*path: str) -> dict:
    """``{parameter name: default}`` of the command ``path`` (enum defaults as their value)."""
    cmd = typer.main.get_command(netweave.cli.app)
    for word in path:
        cmd = cmd.commands[word]
    return {p.name: getattr(p.default, "value", p.default) for p in cmd.params if p.name != "help"}


def fields(cls) -> dict:
    return {f.name: f.default if f.default is not dataclasses.MISSING else f.default_factory()
            for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING
            or f.default_factory is not dataclasses.MISSING}


def defaults(fn) -> dict:
    return {k: p.default for k, p in inspect.signature(fn).parameters.items() if p.default is not inspect.Parameter.empty}


# command -> (scenario class, {option: field}, {option: how the command turns its value into the field's})
MAPS = {
    ("plan",): (ExchangeScenario, {"dataset": None, "topology": None, "planner": "planner", "parts_file": "parts_file",
                                   "parts": "parts", "method": "method", "feature_dim": "feature_dim", "seed": "seed",
                                   "cost_model": "cost_model", "transport": "transport"},
                {"cost_model": lambda v: DEFAULT_COST_MODEL if v is None else v}),
    ("partition",): (PartitionScenario, {"dataset": None, "parts": "parts", "method": "method", "topology": "topology",
                                         "seed": "seed", "feature_dim": "feature_dim"}, {}),
    ("train",): (TrainScenario, {"dataset": "dataset", "workers": "workers", "model": "model", "comm": "comm",
                                 "topology": "topology", "epochs": "epochs", "hidden": None, "layers": "layers",
                                 "lr": None, "weight_decay": None, "dropout": None,
                                 "normalize_features": "normalize_features", "cost_model": "cost_model", "seed": "seed",
                                 "method": "method", "parts_file": "parts_file", "plan_file": "plan_file",
                                 "timeout": "timeout_s", "device": "device", "dump_logits": "dump_logits"},
                 {"cost_model": lambda v: DEFAULT_COST_MODEL if v is None else v}),
    ("ina",): (InaScenario, {"dataset": "dataset", "workers": "workers", "topology": "topology",
                             "switch_memory": "switch_memory", "strategy": "strategy", "blocking": "blocking",
                             "overlap": "overlap", "order": "order", "feature_dim": "feature_dim", "gbps": "gbps",
                             "seed": "seed", "start": "start", "method": "method", "parts_file": "parts_file",
                             "verify": "verify"},
               {"switch_memory": parse_switch_memory}),
    ("timeslot",): (TimeslotScenario, {"dataset": "dataset", "order": "order", "k": "k", "seed": "seed",
                                       "start": "start"}, {}),
    ("route",): (RouteScenario, {"topology": None, "jobs_file": "jobs_file", "workers": "workers", "ps": "ps",
                                 "algorithm": "algorithm", "precisions": "precisions", "switch_gbps": "switch_gbps",
                                 "seed": "seed", "time_limit": "time_limit_s", "accelerate": "accelerations"},
                 {"precisions": lambda v: None if v is None else parse_precision_mix(v),
                  "accelerate": lambda v: tuple(a for a in v.split(",") if a)}),
    ("compare",): (CompareConfig, {"dataset": "dataset", "topology": "topology", "epochs": "epochs",
                                   "sections": "sections", "seed": "seed", "transport": "transport"},
                   {"sections": lambda v: tuple(v.split(","))}),
}
# the simulator's options of `ina` (they fill SimConfig, not InaScenario)
SIM = ({"loss": "loss", "buffer": "buffer_bytes", "cc": "congestion_control", "ecn": "ecn_bytes",
        "background": "background_load", "timeout_us": "timeout_us"},
       {"ecn": lambda v: parse_bytes(v, "--ecn"), "buffer": lambda v: None if v is None else parse_bytes(v, "--buffer")})
CLI_ONLY = {  # option -> why it fills no scenario field
    "as_json": "output format", "out_file": "an artefact path", "validate": "plan --validate runs PlanCheck",
    "timeline": "an artefact path", "plot": "an artefact path", "evaluate": "route --evaluate runs RouteCheck",
    "report": "an artefact path", "hidden": "None: the recipe's, filled by TrainScenario.__post_init__",
    "lr": "None: the recipe's", "weight_decay": "None: the recipe's", "dropout": "None: the recipe's",
    "dataset": "a required argument of this command", "topology": "a required option of this command",
}


@pytest.mark.parametrize("path", list(MAPS), ids=" ".join)
def test_every_option_has_its_scenarios_default(path):
    cls, mapping, convert = MAPS[path]
    cli, field_defaults = options(*path), fields(cls)
    extra = SIM[0] if path == ("ina",) else {}
    unmapped = set(cli) - set(mapping) - set(extra) - set(CLI_ONLY)
    assert not unmapped, f"options of {' '.join(path)} mapped to no field: {unmapped}"
    for option, field in mapping.items():
        if field is None:
            assert option in CLI_ONLY
            continue
        value = convert.get(option, lambda v: v)(cli[option])
        assert value == field_defaults[field], (path, option, cli[option], field, field_defaults[field])
    sim = fields(SimConfig)
    for option, field in extra.items():
        assert SIM[1].get(option, lambda v: v)(cli[option]) == sim[field], (option, field)


def test_the_ina_layer_defaults_are_the_scenarios():
    """ina_plan and choose_plan plan as ``netweave ina`` does when given nothing: GAMR, blocking auto
    priced on the default star, 100 MB switches (one constant, the simulator's too)."""
    ina, layer, choose = fields(InaScenario), defaults(ina_plan), defaults(choose_plan)
    assert layer["order"] == choose["order"] == ina["order"] == "gamr"
    assert layer["blocking"] == ina["blocking"] == "auto"
    assert layer["memory_bytes"] == SWITCH_MEMORY_BYTES == DEFAULT_MEMORY
    assert layer["overlap"] == ina["overlap"] and layer["seed"] == ina["seed"] and layer["start"] == ina["start"]
    assert STAR_GBPS == ina["gbps"]


def test_the_plan_layer_defaults_are_the_commands():
    """spst_plan and plan_cost price with the commands' cost model and the topology's transport."""
    from netweave.plan import worker_links
    from netweave.plan.cost import cost_model
    from netweave.plan.transport import transport_for
    from netweave.topology import load_topology_spec

    assert defaults(spst_plan)["model"] is None and defaults(plan_cost)["model"] is None  # None: default_cost_model
    assert fields(ExchangeScenario)["cost_model"] == DEFAULT_COST_MODEL == fields(TrainScenario)["cost_model"]
    for spec in ("dgx1", "star:n=4"):
        topo = load_topology_spec(spec)
        assert default_cost_model(worker_links(topo)) == cost_model(DEFAULT_COST_MODEL, transport_for(topo))
    assert defaults(spst_plan)["seed"] == fields(ExchangeScenario)["seed"]


def test_kernels_and_aggsvc_defaults_are_their_functions():
    from netweave.dataplane.demo import demo
    from netweave.kernels.bench import bench_kernels

    cli, fn = options("kernels", "bench"), defaults(bench_kernels)
    assert KERNELS_FEATURE_DIM == fn["dim"] and cli["feature_dim"] is None  # None: KERNELS_FEATURE_DIM
    assert (cli["gpus"], cli["repeats"], cli["tune_"]) == (fn["gpus"], fn["repeats"], fn["do_tune"])
    assert (cli["ps"], cli["dist"], cli["wpb"]) == (fn["config"].ps, fn["config"].dist, fn["config"].wpb)
    cli, fn = options("aggsvc", "demo"), defaults(demo)
    assert (cli["workers"], cli["aggregators"], cli["values"], cli["seed"]) == \
        (fn["workers"], fn["aggregators"], fn["values"], fn["seed"])


def test_sizes_read_the_same_everywhere():
    """A size is one spelling on the command line, in a sweep file, in a scenario and in a topology."""
    from netweave.scenarios.fields import scenario_from

    for text, value in (("1MB", 1_000_000), ("100MB", 100_000_000), ("4MiB", 4 * 2**20), ("unlimited", None)):
        assert InaScenario(switch_memory=text).switch_memory == value == parse_switch_memory(text)
        assert scenario_from("ina", {"switch_memory": text}).switch_memory == value
    assert InaScenario(switch_memory="topology").switch_memory == "topology"
    assert scenario_from("ina", {"buffer_bytes": "1MB"}).sim.buffer_bytes == parse_bytes("1MB", "x") == 1_000_000


def test_old_option_names_still_work_hidden(tmp_path):
    """Renamed options keep their old names as hidden aliases: accepted, not shown in --help."""
    cmd = typer.main.get_command(netweave.cli.app)
    for path, old, new in ((("repro",), "--workers", "--processes"), (("sweep",), "--workers", "--processes"),
                           (("kernels", "bench"), "--dim", "--feature-dim")):
        c = cmd
        for word in path:
            c = c.commands[word]
        by_opt = {o: p for p in c.params for o in p.opts}
        assert by_opt[old].hidden and not by_opt[new].hidden


def test_an_old_and_a_new_name_that_disagree_are_one_line(capsys):
    from netweave.cli import main

    with pytest.raises(SystemExit) as e:
        main(["repro", "aro-fig7", "--processes", "2", "--workers", "3", "--scale", "tiny", "--out", "never"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err == ("netweave: error: --processes 2 and --workers 3 disagree; --workers is the old "
                                         "name of --processes: give one\n")
