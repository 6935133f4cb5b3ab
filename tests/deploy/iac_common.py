"""What the two evaluators of tests/deploy share: the repository's paths and the error for a construct they do
not know (a test failure, never a silent pass)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
MODULE = ROOT / "infra" / "modules" / "msk-hudi-sink"
EXAMPLE = ROOT / "infra" / "examples" / "msk"
LEAST_PRIVILEGE = Path(__file__).resolve().parent / "least_privilege.json"

class Unsupported(Exception):
    """A construct the evaluator does not implement."""


def _as_list(x):
    return x if isinstance(x, list) else [x]
