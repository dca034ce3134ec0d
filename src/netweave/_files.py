"""Reading the YAML and JSON files users pass in, with one-line errors (missing file, bad syntax)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from .errors import NetweaveError


def read_yaml(path: str | Path):
    try:
        return yaml.safe_load(Path(path).read_text())
    except FileNotFoundError:
        raise NetweaveError(f"{path}: no such file") from None
    except yaml.YAMLError as exc:
        raise NetweaveError(f"{path}: not valid YAML ({exc.__class__.__name__})") from None


def read_json(path: str | Path):
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise NetweaveError(f"{path}: no such file") from None
    except json.JSONDecodeError as exc:
        raise NetweaveError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
