"""The manual's seed fidelity records: the seed table gives every row a status and its summary counts
them; the choices made where the reference is silent say why (here: the IK controller's limits)."""
import manual


def readme_section(heading):
    """The section of the manual (README.md or a doc/ page) under that heading, its sub-sections included."""
    return manual.section(heading.lstrip("# "))


def test_the_seed_table_gives_every_row_a_status_and_its_summary_counts_them():
    import re
    from collections import Counter

    section = readme_section("## Seed fidelity")
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in section.splitlines()
            if re.match(r"\| \d+ \|", line)]
    assert [int(r[0]) for r in rows] == list(range(1, len(rows) + 1))
    assert all(len(r) == 5 and r[1] in ("000", "001", "002", "003", "004") for r in rows), rows
    assert {r[1] for r in rows} == {"000", "001", "002", "003", "004"}  # every seed
    counts = Counter(r[3] for r in rows)
    assert set(counts) <= {"✓", "partial", "different", "missing"}
    assert all(r[4] for r in rows if r[3] != "✓"), "a partial / different row says what or why"
    summary = re.search(r"(\d+) rows .*?: (\d+) ✓, (\d+) partial \(([\d, ]*)\), (\d+) different\s*\(([\d, ]*)\), "
                        r"(\d+) missing", section, re.S)
    total, ok, partial, partial_rows, different, different_rows, missing = summary.groups()
    assert int(total) == len(rows) and int(ok) == counts["✓"] and int(missing) == counts["missing"]
    for status, count, numbers in (("partial", partial, partial_rows), ("different", different, different_rows)):
        assert int(count) == counts[status]
        assert [int(n) for n in numbers.split(",") if n.strip()] == [int(r[0]) for r in rows if r[3] == status]


def test_ik_limits_keep_their_documented_defaults_and_the_readme_says_why(sim):
    """The seed's IK controller has no limit by default (None); ours clips to 5 cm / 0.5 rad, listed with
    its reason in the README, as is every other controller default that differs from seed 001."""
    from binpick_sim.control.controllers import InverseKinematicsController

    c = InverseKinematicsController(sim.arm)
    assert (c.ik_pos_limit, c.ik_ori_limit) == (0.05, 0.5)
    choices = readme_section("### Choices made where the reference is silent")
    for words in ("ik_pos_limit", "law: robosuite", "±0.05 N·m", "finger_force", "concave"):
        assert words in choices, words
