"""The pages that say where the code is (doc/architecture.md, doc/how-it-is-built.md) name modules that exist: a
path in backticks (`cell/world.py`, `nodes/common/`, `test/nodes/test_dds_profile.py`: under binpick_sim/ or the
repository) and a dotted name (`binpick_sim.cell.arm`, or a module's attribute, `binpick_sim.config.MAX_SEED`)."""
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "binpick_sim"
PAGES = [REPO / "doc" / "architecture.md", REPO / "doc" / "how-it-is-built.md"]
# a path: lower-case words joined by /, ending in .py or /, or starting with one of the package's folders
# (`nodes/common/memory`); other slashed names there are topics and services (`world/step`)
PATH = re.compile(r"`((?:[a-z_][\w.-]*/)+(?:[a-z_][\w.-]*)?)`")
FOLDERS = {p.name for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith("__")} | {"test", "bench", "doc"}
DOTTED = re.compile(r"\bbinpick_sim(?:\.\w+)+")


def path_exists(name: str) -> bool:
    return any((root / name.rstrip("/")).exists() or (root / (name + ".py")).exists() for root in (PACKAGE, REPO))


def module_file(dotted: str) -> Path | None:
    base = REPO / Path(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def dotted_exists(name: str) -> bool:
    """A module or package, or an attribute a module defines (def, class or assignment at its top level)."""
    if module_file(name):
        return True
    parent, _, attribute = name.rpartition(".")
    source = module_file(parent)
    return source is not None and re.search(rf"^(?:def |class )?{re.escape(attribute)}\b", source.read_text(), re.M) is not None


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_module_the_page_names_exists(page):
    text = page.read_text()
    paths = sorted({m for m in PATH.findall(text)
                    if m.endswith((".py", "/")) or m.split("/")[0] in FOLDERS})
    dotted = sorted(set(DOTTED.findall(text)))
    assert paths, f"{page.name}: no module names found (the pattern needs a look)"
    missing = [p for p in paths if not path_exists(p)] + [d for d in dotted if not dotted_exists(d)]
    assert not missing, f"{page.name} names modules that do not exist: {missing}"


def test_the_check_tells_a_missing_module():
    assert path_exists("cell/world.py") and path_exists("cell/arm/") and path_exists("test/docs/")
    assert not path_exists("nodes/common/memory") and not path_exists("cell/quiet.py")
    assert dotted_exists("binpick_sim.cell.arm.panda") and dotted_exists("binpick_sim.config.bounds.MAX_SEED")
    assert not dotted_exists("binpick_sim.cell.sim") and not dotted_exists("binpick_sim.config.bounds.NO_SUCH")
