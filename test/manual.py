"""The manual as the tests read it: README.md and the Sphinx pages under doc/.

Tests that run the manual's commands and examples find them by section title, on whichever page
holds the section now, so a section may move between pages (or change its heading level) without a
test losing its command. A title must name exactly one section: a test never silently reads another.
"""
from __future__ import annotations

import re
from pathlib import Path


from ros_env import REPO  # the checkout, found from test/ (on sys.path wherever a test file sits)
README = REPO / "README.md"
DOC = REPO / "doc"


def pages() -> list[Path]:
    """The README first, then every Markdown page of doc/."""
    return [README, *sorted(DOC.glob("*.md"))]


def headings(text: str) -> list[tuple[int, int, str]]:
    """(offset, level, title) of each Markdown heading outside fenced code blocks."""
    found, fence, offset = [], False, 0
    for line in text.splitlines(keepends=True):
        if re.match(r"\s*```", line):
            fence = not fence
        elif not fence and (m := re.match(r"(#+) (.*)", line)):
            found.append((offset, len(m.group(1)), m.group(2).strip()))
        offset += len(line)
    return found


def find(title: str, page: str | None = None) -> tuple[Path, str]:
    """The page holding the section titled `title` (an exact title, else the one title starting with
    it), and the section's text: from its heading to the next heading of the same or a higher level."""
    candidates = [p for p in pages() if page is None or p.name == page]
    for exact in (True, False):
        hits = []
        for path in candidates:
            text = path.read_text()
            marks = headings(text)
            for i, (offset, level, name) in enumerate(marks):
                if name == title if exact else name.startswith(title):
                    end = next((o for o, lv, _ in marks[i + 1:] if lv <= level), len(text))
                    hits.append((path, text[offset:end]))
        if len(hits) > 1:
            raise LookupError(f"{len(hits)} sections titled {title!r}: {[str(p.name) for p, _ in hits]}")
        if hits:
            return hits[0]
    raise LookupError(f"no section titled {title!r} in the README or doc/")


def section(title: str, page: str | None = None) -> str:
    return find(title, page)[1]


def blocks(text: str, language: str) -> list[str]:
    """The fenced code blocks of a language (```bash, ```python, ...), in order."""
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)
