"""bench.profile_layouts, the per-layout profile of the default cell (issue 54): it counts a type's convex parts
as its source mesh has them and as the cell collides with them, and tells a resting pile from one of a many-part
type."""
from pathlib import Path

import pybullet_data

from bench import profile_layouts
from binpick_sim.cell.scene import MAX_PARTS

RANDOM_URDFS = Path(pybullet_data.getDataPath()) / "random_urdfs"


def _source_parts(name: str) -> int:
    with open(RANDOM_URDFS / name / f"{name}.obj") as lines:
        return sum(1 for line in lines if line.startswith("o "))


def test_a_hulled_copy_has_the_parts_of_its_source_mesh_or_the_cells_most():
    for name in ("395", "561", "002"):  # 100, 9 and 6 parts
        urdf = RANDOM_URDFS / name / f"{name}.urdf"
        assert profile_layouts.convex_parts(urdf) == _source_parts(name)
        assert profile_layouts.convex_parts(urdf, MAX_PARTS) == min(_source_parts(name), MAX_PARTS)
    assert profile_layouts.convex_parts(RANDOM_URDFS / "395" / "395.urdf") == 100


def test_a_row_per_seed_with_the_type_and_its_pile(capsys):
    rows = profile_layouts.measure(range(3030, 3032 + 1, 2), steps=2)  # seeds 3030 and 3032: ordinary types
    assert [r["seed"] for r in rows] == [3030, 3032]
    for row in rows:
        assert row["parts"] == _source_parts(row["type"]) == row["kept"] and row["objects"] >= 1
        assert row["reset_ms"] > 0 and row["step_ms"] > 0 and row["contacts"] >= row["objects"]  # resting on something
    profile_layouts.report(rows + [dict(rows[0], seed=1, parts=100)], parts=40)
    printed = capsys.readouterr().out
    assert "3 layouts, 1 of types with more than 40 convex parts" in printed and "| 1 | " in printed
