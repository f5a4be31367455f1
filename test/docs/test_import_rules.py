"""The import rules (issue 31): layers that import one way, no circles, a core without ROS.

The rules are import-linter contracts in `.importlinter` at the repository root; import-linter (through grimp)
sees every import statement, at module level or inside a function, so a lazy import that runs upward fails as
surely as a top-level one. doc/architecture.md shows the same layers; the tests at the end keep the page,
the contracts and the package's folders in step.
"""
from __future__ import annotations

import configparser
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ros_env import REPO

PACKAGE = "binpick_sim"
ROOT = REPO  # the repository root, where `.importlinter` sits


def lint_imports(folder: Path) -> subprocess.CompletedProcess:
    """import-linter's own command on the package found first in `folder`, with the contracts in `folder`."""
    command = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")]),
           "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-c", command, "--no-cache", "--config", str(folder / ".importlinter")],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=120)


def contracts() -> configparser.ConfigParser:
    parser = configparser.ConfigParser()
    parser.read(ROOT / ".importlinter")
    return parser


def lines(value: str) -> list[str]:
    return [line.strip() for line in value.strip().splitlines() if line.strip()]


def layers() -> list[set[str]]:
    """The package layers of the `layers` contract, highest first, each a set of packages."""
    return [{name.strip() for name in re.split(r"[|:]", line)} for line in lines(contracts()["importlinter:contract:layers"]["layers"])]


def top_level_modules() -> set[str]:
    """binpick_sim's own modules and sub-packages, from its folder."""
    folder = ROOT / PACKAGE
    found = {f"{PACKAGE}.{p.stem}" for p in folder.glob("*.py") if p.name != "__init__.py"}
    return found | {f"{PACKAGE}.{p.name}" for p in folder.iterdir() if (p / "__init__.py").is_file()}


def test_the_import_contracts_hold():
    """Fails with import-linter's report (which import breaks which rule, file and line) if a rule breaks."""
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"Contracts: (\d+) kept, 0 broken", result.stdout), result.stdout


def test_every_module_of_the_package_has_a_layer():
    """A new module at the top of binpick_sim must be placed in a layer: unplaced, no rule would apply to it."""
    placed = set().union(*layers())
    assert top_level_modules() - placed == set(), "add these to the layers in .importlinter and doc/architecture.md"
    assert placed - top_level_modules() == set(), "layers name modules that do not exist"


def test_the_core_forbids_every_ros_package_the_package_imports():
    """The "core imports no ROS" contract lists every ROS package that any module of binpick_sim imports, so
    a node's new message package cannot slip into the core unnoticed."""
    import grimp

    graph = grimp.build_graph(PACKAGE, include_external_packages=True)
    external = {imported.split(".")[0] for module in graph.modules if module.startswith(PACKAGE + ".")
                for imported in graph.find_modules_directly_imported_by(module) if not imported.startswith(PACKAGE)}
    ros = {name for name in external
           if name in ("rclpy", "cv_bridge") or name.startswith(("rosidl", "rmw", "launch"))
           or name.endswith(("_msgs", "_srvs", "_interfaces"))}
    assert "rclpy" in ros and "sensor_msgs" in ros  # the nodes' own, so the search above finds what it must
    forbidden = set(lines(contracts()["importlinter:contract:core-no-ros"]["forbidden_modules"]))
    assert ros - forbidden == set()
    core = set(lines(contracts()["importlinter:contract:core-no-ros"]["source_modules"]))
    nodes_at = next(i for i, layer in enumerate(layers()) if f"{PACKAGE}.nodes" in layer)
    assert core == set().union(*layers()[nodes_at + 1:]), "the core is every layer below the nodes"


# A module of the core (or nodes.common) given one more import, inside a function, where nothing runs it at
# import time: each must break the contract named.
BREAKS = {
    "a lazy import from the core up into the nodes": (
        "config/reading.py", "from binpick_sim.nodes.common import convert", "Layers: tools over envs",
        "binpick_sim.config.reading -> binpick_sim.nodes.common.convert"),
    "a lazy rclpy import in the core": (
        "cell/finite_world.py", "import rclpy", "The core imports no ROS", "binpick_sim.cell.finite_world -> rclpy"),
    "a lazy import that closes a circle in nodes.common": (
        "nodes/common/convert.py", "from binpick_sim.nodes.common import diagnostics", "No circles",
        "No cycles are allowed in binpick_sim.nodes.common"),
}


@pytest.mark.parametrize("case", sorted(BREAKS))
def test_the_contracts_catch_a_deliberate_lazy_import(tmp_path, case):
    """The contracts are not vacuous: on a copy of the package with one added function-level import, the same
    `lint-imports` fails and its report names the import."""
    path, statement, contract, named = BREAKS[case]
    shutil.copytree(ROOT / PACKAGE, tmp_path / PACKAGE, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / ".importlinter", tmp_path / ".importlinter")
    with open(tmp_path / PACKAGE / path, "a") as module:
        module.write(f"\n\ndef _deliberately_added():\n    {statement}  # noqa\n")
    result = lint_imports(tmp_path)
    report = result.stdout + result.stderr
    assert result.returncode == 1, report
    broken = report[report.index("Broken contracts"):]
    assert contract in broken and named in " ".join(broken.split()), report


# --- doc/architecture.md -------------------------------------------------------------------------------

PAGE = ROOT / "doc" / "architecture.md"


def page_section(begin: str, end: str) -> list[str]:
    text = PAGE.read_text()
    start, stop = text.index(f"<!-- {begin} -->"), text.index(f"<!-- {end} -->")
    return [line for line in text[start:stop].splitlines()[1:] if line.strip()]


def test_the_architecture_page_lists_the_layers_of_the_contract():
    """The page's numbered list of layers (between its `layers` markers) is the contract's, in order."""
    listed = []
    for line in page_section("layers: begin", "layers: end"):
        match = re.match(r"\d+\. \*\*[^*]+\*\*.*?: (.*)$", line)
        assert match, f"a line of the layer list not in the form '1. **name** ...: `pkg`, `pkg`': {line!r}"
        listed.append(set(re.findall(r"`([\w.]+)`", match.group(1))))
    assert listed == layers()


def test_the_architecture_page_says_what_each_package_holds():
    """Every top-level module and sub-package of binpick_sim (and of binpick_sim.nodes) has its row in the page's
    table, and the table names nothing that does not exist."""
    rows = {re.match(r"\| `([\w.]+)`", line).group(1) for line in page_section("packages: begin", "packages: end")
            if re.match(r"\| `([\w.]+)`", line)}
    nodes = {f"{PACKAGE}.nodes.{p.name}" for p in (ROOT / PACKAGE / "nodes").iterdir() if (p / "__init__.py").is_file()}
    assert rows == top_level_modules() | nodes
