"""`make bench`: run every benchmark, print a markdown table, write JSON (build/bench.json or $BENCH_OUT)."""
from __future__ import annotations

import compileall
import datetime
import importlib
import json
import os
import sys
from pathlib import Path

# A domain of our own, so a running stack (or another bench) is neither measured nor disturbed.
os.environ["ROS_DOMAIN_ID"] = str(1 + os.getpid() % 100)
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")

from tqdm import tqdm  # noqa: E402

from binpick_sim.extras import MissingExtra, require  # noqa: E402

from .figures import Figure, Skipped, machine  # noqa: E402

MODULES = ["default_cell", "physics", "camera", "roundtrip", "control", "reasoning", "gym", "like_for_like", "ros_path",
           "memory", "standard", "rollouts", "datasets", "learnability", "exploration"]


def collect(names: list[str], skipped: dict[str, str]) -> list[Figure]:
    """The figures of the groups `names`, in order; a group that cannot run here (Skipped) is left out, its
    reason put into `skipped`."""
    figures: list[Figure] = []
    with tqdm(names, desc="benchmarks", unit="group", disable=None) as bar:
        for name in bar:
            bar.set_postfix_str(name)
            try:
                module = importlib.import_module(f"bench.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"bench.{name}":
                    raise
                tqdm.write(f"bench.{name}: not present, skipped")
                continue
            try:
                measured = module.measure()
            except Skipped as exc:
                tqdm.write(f"bench.{name}: skipped: {exc}")
                skipped[name] = str(exc)
                continue
            for figure in measured:
                figures.append(figure if isinstance(figure, Figure) else _from_dict(name, figure))
    return figures


def _from_dict(group: str, data: dict) -> Figure:
    return Figure(group=group, name=data["name"], value=data["value"], unit=data["unit"],
                  raw_pybullet=data.get("raw_pybullet"), note=data.get("note", ""), ratios=data.get("ratios"))


def table(figures: list[Figure]) -> str:
    """One row per figure. A figure measured in rounds (taking turns) gives the median of its rounds'
    ratios, and beside it their min-max and the number of rounds."""
    rows = ["| group | figure | value | unit | raw PyBullet | ratio | min-max (rounds) |",
            "| --- | --- | ---: | --- | ---: | ---: | --- |"]
    for f in figures:
        raw = "" if f.raw_pybullet is None else _number(f.raw_pybullet)
        ratio = "" if f.ratio is None else f"{f.ratio:.2f}"
        spread = "" if f.spread is None else f"{f.spread[0]:.2f}-{f.spread[1]:.2f} ({len(f.ratios)})"
        name = f"{f.name} ({f.note})" if f.note else f.name
        rows.append(f"| {f.group} | {name} | {_number(f.value)} | {f.unit} | {raw} | {ratio} | {spread} |")
    return "\n".join(rows)


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def write_bytecode() -> None:
    """The package's and the bench's bytecode, written before anything is timed (as the Makefile's BYTECODE
    does for its other targets). These machines set PYTHONDONTWRITEBYTECODE: without it every `sim` process a
    ROS row starts compiled the checkout from source, which no installed package pays (pip and colcon compile
    at install); doc/benchmarks-history.md "2026-12-03 (morning)" has the rows with and without."""
    import binpick_sim

    for package in (Path(binpick_sim.__file__).parent, Path(__file__).parent):
        compileall.compile_dir(package, quiet=1)


def main(argv: list[str] | None = None) -> int:
    names = (argv if argv is not None else sys.argv[1:]) or MODULES
    try:
        require("make bench", "panda_gym", "sklearn")  # the peer beside the figures, and bench.learnability
    except MissingExtra as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 2
    write_bytecode()
    skipped: dict[str, str] = {}
    figures = collect(names, skipped)
    out = Path(os.environ.get("BENCH_OUT", "build/bench.json"))
    out.parent.mkdir(parents=True, exist_ok=True)
    report = {"date": datetime.date.today().isoformat(), "machine": machine(),
              "figures": [f.as_dict() for f in figures], "skipped": skipped}
    out.write_text(json.dumps(report, indent=2))
    info = report["machine"]
    print(f"\n{report['date']}, {info['cores']} cores, {info['cpu_model']}, Python {info['python']}\n")
    print(table(figures))
    for name, why in skipped.items():
        print(f"\nSkipped: {name}: {why}")
    print(f"\nJSON: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
