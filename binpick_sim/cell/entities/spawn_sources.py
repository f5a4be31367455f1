"""Where spawned URDFs and their meshes may be read from, and the bounded listing of those folders.

A client of `spawn_entity` / `get_spawnables` must not make the simulator read or list any file of the
machine it runs on (unchecked, `sources: ['/']` walks the whole disk, other users' folders included, and
`spawn_entity` reads any `.urdf` by absolute path). Files are read only inside an allow-list: the
package's own resources (`pybullet_data`, which holds the object sets and the arm, and the package's
`urdf/` folder), the folders the operator names (the simulation node's `spawnable_folders`
parameter), and, for a `package://` URI, that package's share folder in the ament index. Paths are
compared after resolving `..` and symbolic links, so neither leads out of an allowed folder.

A listing walks at most MAX_DEPTH folders deep, looks at most at MAX_ENTRIES entries, returns at most
MAX_LISTED files and stops after MAX_WALK_S seconds, saying which bound ended it.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from urllib.parse import unquote

import pybullet_data

MAX_DEPTH = 8  # folders below a listed source
MAX_LISTED = 10_000  # .urdf files in one answer
MAX_ENTRIES = 100_000  # directory entries looked at for one answer
MAX_WALK_S = 2.0  # seconds one answer may spend listing


class OutsideRoots(ValueError):
    """A path outside every allowed folder; the message names the allowed ones."""


def own_folders() -> list[Path]:
    """The package's own resources: pybullet_data, and the package's urdf/ folder where it has one."""
    from ...paths import share_dir

    folders = [Path(pybullet_data.getDataPath())]
    try:
        urdf = share_dir() / "urdf"
    except Exception:  # noqa: BLE001 - no checkout and no ament index: pybullet_data alone
        return folders
    return folders + ([urdf] if urdf.is_dir() else [])


class SpawnRoots:
    """The allowed folders: the package's own plus `folders` (absolute paths of existing folders)."""

    def __init__(self, folders=()):
        extra = []
        for folder in folders:
            path = Path(folder).expanduser()
            if not path.is_absolute() or not path.is_dir():
                raise ValueError(f"spawnable folder {str(folder)[:200]!r} is not an absolute path of an existing folder")
            extra.append(path)
        self.folders = [p.resolve() for p in own_folders() + extra]

    def allows(self, path: Path, also=()) -> bool:
        resolved = Path(path).resolve()
        return any(resolved.is_relative_to(root) for root in [*self.folders, *also])

    def check(self, path: Path, what: str, also=()) -> Path:
        """`path`, or OutsideRoots. Says nothing about whether the path exists (no probing from outside)."""
        if not self.allows(path, also):
            raise OutsideRoots(f"{what} lies outside the spawnable folders ({', '.join(map(str, self.folders))}); "
                               "name its folder in the simulation node's spawnable_folders parameter")
        return path

    def describe(self) -> str:
        return ", ".join(map(str, self.folders))


def source_path(source: str) -> Path:
    """A `get_spawnables` source as a path: `file://` URI or plain path (package:// is resolved by the caller)."""
    return Path(unquote(source.removeprefix("file://")))


class Walk:
    """One answer's budget: files listed, entries looked at, time; `stopped` says which bound ended it."""

    def __init__(self):
        self.listed = self.entries = 0
        self.deadline = time.monotonic() + MAX_WALK_S
        self.stopped = ""

    def exhausted(self) -> bool:
        if not self.stopped:
            if self.listed >= MAX_LISTED:
                self.stopped = f"{MAX_LISTED} files listed"
            elif self.entries >= MAX_ENTRIES:
                self.stopped = f"{MAX_ENTRIES} folder entries looked at"
            elif time.monotonic() > self.deadline:
                self.stopped = f"{MAX_WALK_S:g} s spent"
        return bool(self.stopped)

    def urdfs(self, folder: Path) -> list[Path]:
        """The .urdf files under `folder`, at most MAX_DEPTH deep, in sorted order per folder; symbolic
        links to folders are not followed (no loops, no way out)."""
        found: list[Path] = []
        pending = [(folder, 0)]
        while pending and not self.exhausted():
            current, depth = pending.pop()
            try:
                with os.scandir(current) as listing:
                    entries = sorted(listing, key=lambda e: e.name)
            except OSError:  # unreadable: skipped, like a missing one
                continue
            self.entries += len(entries)
            below = []
            for entry in entries:
                if self.exhausted():
                    break
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if depth < MAX_DEPTH:
                            below.append((Path(entry.path), depth + 1))
                    elif entry.name.endswith(".urdf") and entry.is_file():
                        found.append(Path(entry.path))
                        self.listed += 1
                except OSError:
                    continue
            pending += reversed(below)  # depth first, in name order
        return found
