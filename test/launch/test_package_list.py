"""What an install of the package holds: binpick_sim and its sub-packages only. The tests and the benchmarks
run from a checkout; installed, `bench` would be a top-level package of everybody's environment."""
import runpy
from pathlib import Path

import setuptools

REPO = Path(__file__).resolve().parents[2]


def test_the_package_list_is_binpick_sim_alone(monkeypatch):
    given = {}
    monkeypatch.setattr(setuptools, "setup", lambda **options: given.update(options))
    monkeypatch.chdir(REPO)
    runpy.run_path(str(REPO / "setup.py"), run_name="__main__")
    packages = set(given["packages"])
    assert "binpick_sim" in packages and "binpick_sim.cell.arm" in packages
    assert {p for p in packages if p != "binpick_sim" and not p.startswith("binpick_sim.")} == set()
