"""The manual's shape (issue 31): a README a newcomer reads in one sitting, every doc/ page reachable
from it, nothing of the former one-page manual lost. The pages themselves are built by `make docs`
(Sphinx with warnings as errors: a broken link or reference fails), which CI runs after `make test`."""
import re
from pathlib import Path

import manual

# Every section title of the one-page README as it stood before the manual moved to doc/ (main at
# 229a500): each must still head a section on some page.
FORMER_SECTIONS = [
    "What `make demo` does", "The ROS user's path", "Launch, RViz and the robot description",
    "A planner's way in", "The controller contract, row by row", "MoveIt and other planners: what `sim` publishes",
    "A real planner against the cell: `make planner-example`", "Testing on a ROS install", "What CI checks",
    "Interfaces", "Topics", "Services", "Parameters", "Bad input", "The scene file", "Several arms",
    "Shaking a bin", "Controllers", "The time-indexed robot interface", "Reasoning services",
    "The ROS 2 simulation standard (`simulation_interfaces`)", "Gymnasium envs",
    "Learning: privileged state, dense rewards, a goal-conditioned env", "The seed's gym API",
    "Scale-out on Ray", "Datasets: record with `rollouts` or `record`, train with LeRobot, Minari or your own loader",
    "Cameras", "Rendering does not stall physics", "Renderers", "Benchmarks",
    "Like for like: the in-process gym beside panda-gym", "Where a ROS env step goes",
    "Where a camera frame's time goes", "Robustness suite", "Seed fidelity", "How it is built", "DDS settings",
    "Executor and threads", "Choices made where the reference is silent",
]


def links(path: Path) -> set[Path]:
    """The local Markdown pages a page leads to: its links, and for doc/index.md its toctree entries."""
    text = path.read_text()
    found = {path.parent / target for target in re.findall(r"\]\(([^)#\s:]+\.md)(?:#[^)]*)?\)", text)}
    for toctree in re.findall(r"```\{toctree\}\n(.*?)```", text, re.S):
        found |= {path.parent / f"{entry.strip()}.md" for entry in toctree.splitlines()
                  if entry.strip() and not entry.startswith(":")}
    return {p.resolve() for p in found}


def test_the_readme_is_at_most_300_lines():
    assert len(manual.README.read_text().splitlines()) <= 300


def test_every_doc_page_is_reachable_from_the_readme_and_every_link_leads_somewhere():
    reached, todo = set(), [manual.README.resolve()]
    while todo:
        page = todo.pop()
        if page in reached:
            continue
        reached.add(page)
        for target in links(page):
            assert target.is_file(), f"{page.name} links to {target}, which does not exist"
            todo.append(target)
    pages = {p.resolve() for p in manual.DOC.glob("*.md")}
    assert pages, "no doc/ pages"
    assert not pages - reached, f"not reachable from the README: {sorted(p.name for p in pages - reached)}"
    readme_links = links(manual.README)
    assert manual.DOC.resolve() / "index.md" in readme_links  # the README leads to the index, which lists them all


def test_every_section_of_the_former_one_page_readme_heads_a_section_of_the_manual():
    titles = [title for page in manual.pages() for _, _, title in manual.headings(page.read_text())]
    assert [t for t in FORMER_SECTIONS if t not in titles] == []


def test_the_readmes_pictures_exist_and_stay_small():
    images = re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", manual.README.read_text())
    assert images, "the README shows the cell"
    for image in images:
        path = manual.REPO / image
        assert path.is_file() and path.stat().st_size < 150_000, image
    assert "```mermaid" in manual.README.read_text()  # the node graph, as GitHub draws it


def test_the_sphinx_project_sits_where_rosdoc2_looks_and_the_build_fails_on_warnings():
    """rosdoc2 takes `<package>/doc/conf.py` as the package's Sphinx project; `make docs` (run by CI)
    builds it with warnings as errors and references checked, from a fresh environment each time."""
    assert (manual.DOC / "conf.py").is_file() and (manual.DOC / "index.md").is_file()
    makefile = (manual.REPO / "Makefile").read_text()
    recipe = re.search(r"^docs: .*\n\t(.*sphinx-build.*)$", makefile, re.M).group(1)
    for flag in ("-W", "--keep-going", "-n", "-E", " doc ", "build/docs"):
        assert flag in recipe, flag
    assert re.search(r"^make docs\b", (manual.REPO / ".ci" / "run").read_text(), re.M)
