"""URDFs whose collision meshes are cut down to their convex hulls: the same bodies, loaded in a third of the time.

Why: every reset rebuilds the world (`resetSimulation`, then everything loaded again), and most of a rebuild was
PyBullet reading collision meshes and building their convex hulls: the Panda's (up to 966 vertices each, with
normals and texture coordinates: 7-9 ms of an 8-9 ms rebuild) and each object's (random_urdfs' convex parts:
about 0.3 ms of an object's 0.6 ms, twice for a new layout, in the settler and in the live world). Bullet collides
with the convex hull of each part's points, so a part made of its hull's points alone is the same shape: a copy
keeps just those points (qhull's, in the file's order), each named once by the part's faces (Bullet reads a point
per face corner), and Bullet builds hulls of the same points as from the originals (test/cell/test_hulls.py
compares them part by part, for the Panda and for objects of both sets). Where a hull lists its points in another
order, a tie between two equally far points in a collision query could go the other way; the episodes checked
while choosing ran the same to the last bit, and a copy is the same every time, so episodes stay reproducible.

A type of many parts may have them merged (`max_parts`, the objects': scene.MAX_PARTS): 69 of random_urdfs' 1,000
types are VHACD decompositions into 17-127 convex parts (the median type has 6), and scaled to 1-3 cm a pile of them
interpenetrated between its parts (seed 3031: 1,395 contact points among 5 objects, 2.6 mm deep), never came to
rest, and stepped at up to 400 ms an env step against 2 ms (doc/benchmarks-history.md, 2026-12-02 and 12-03). Such a
mesh keeps `max_parts` convex parts, each the hull of a group of its parts, grouped by merging, again and again,
the two whose joint hull adds the least volume to theirs (a thin shell's pieces merge along the shell, filling
little of what it encloses): the same object to the eye, and to the gripper up to what those hulls fill.

Only collision meshes change: inertias, joints, limits and contact parameters are the original's. The visual
elements name the original meshes by absolute path (`visuals="original"`: the Panda, whose visual meshes are
megabytes) or copies of them beside the copied URDF (`visuals="copied"`: the objects, whose URDFs are loaded
through rendering.renderers.spelled, which needs the visual meshes in the URDF's own folder).

Each copy is written once per machine into the user's cache (`$XDG_CACHE_HOME/binpick_sim`, else ~/.cache), in a
folder named by a digest of the source's path and of the files the copy is made from, through a temporary folder
and a rename (many processes may start at once: Ray workers, a launch file's nodes); where no cache can be written,
into a temporary folder of this process's.
"""
from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
import threading
import xml.etree.ElementTree as ElementTree
from functools import lru_cache
from pathlib import Path

import numpy as np

FORMAT = 4  # part of every copy's digest: raise it when what is written changes
TOUCHING = 0.02  # merged_parts: parts whose boxes are closer than this share of the mesh's size are neighbours
HULLS = "hulls"  # a copy's folder of hull meshes, beside its URDF
VISUALS = ("original", "copied")
_LOCK = threading.Lock()
_scratch: list[Path] = []  # this process's own folder, where no cache could be written


def _volume(points: np.ndarray) -> float:
    """The volume of the points' convex hull; 0 where they span no volume (flat, or too few)."""
    from scipy.spatial import ConvexHull, QhullError
    try:
        return float(ConvexHull(points).volume)
    except (QhullError, ValueError):
        return 0.0


def _on_hull(indices: list[int], vertices: np.ndarray) -> list[int]:
    """Those of `indices` whose points are on their hull, in order; all of them where they span no volume."""
    from scipy.spatial import ConvexHull, QhullError
    try:
        return sorted(indices[i] for i in ConvexHull(vertices[indices]).vertices.tolist())
    except (QhullError, ValueError):
        return list(indices)


def merged_parts(parts: list[list[int]], vertices: np.ndarray, max_parts: int) -> list[list[int]]:
    """`parts` (each the sorted indices of its points in `vertices`) in at most `max_parts` groups, each the points
    on the hull of the parts merged into it: of two neighbouring groups (their boxes closer than TOUCHING of the
    mesh's size apart; any two where no two are neighbours) the two whose joint hull adds the least volume to their
    own hulls' merge first, until `max_parts` are left (ties: the first pair in the parts' order). Deterministic: the
    same parts give the same groups. Only neighbours are weighed: a VHACD part touches a few others, and weighing
    every pair (4,950 hulls for 100 parts) took 2.4 s of a type's first load."""
    groups = [_on_hull(part, vertices) for part in parts]  # a group's hull is that of its points on it
    volumes = [_volume(vertices[g]) for g in groups]
    lows = np.array([vertices[g].min(axis=0) for g in groups])
    highs = np.array([vertices[g].max(axis=0) for g in groups])
    gap = TOUCHING * float(np.max(vertices.max(axis=0) - vertices.min(axis=0)))
    added = np.full((len(groups), len(groups)), np.inf)
    alive = list(range(len(groups)))

    def weigh(i: int, j: int, neighbours_only: bool = True) -> None:
        i, j = min(i, j), max(i, j)
        if not neighbours_only or (np.all(lows[i] <= highs[j] + gap) and np.all(lows[j] <= highs[i] + gap)):
            added[i, j] = _volume(vertices[groups[i] + groups[j]]) - volumes[i] - volumes[j]

    for i in alive:
        for j in alive[i + 1:]:
            weigh(i, j)
    while len(alive) > max_parts:
        if not np.isfinite(added.min()):  # no two groups left are neighbours
            for i in alive:
                for j in alive:
                    if i < j:
                        weigh(i, j, neighbours_only=False)
        i, j = np.unravel_index(int(np.argmin(added)), added.shape)
        groups[i] = _on_hull(sorted(set(groups[i] + groups[j])), vertices)
        volumes[i] = _volume(vertices[groups[i]])
        lows[i], highs[i] = np.minimum(lows[i], lows[j]), np.maximum(highs[i], highs[j])
        alive.remove(j)
        added[j, :] = added[:, j] = added[i, :] = added[:, i] = np.inf
        for k in alive:
            if k != i:
                weigh(i, k)
    return [groups[i] for i in alive]


def hull_obj(source: Path, max_parts: int | None = None) -> str:
    """An OBJ of the convex hulls of `source`'s parts (its `o` / `g` groups, which PyBullet's loader makes the
    convex parts of a compound): each part's points on its hull, in the order `source` lists them, each named once
    by the part's faces (in threes, the last point repeated to fill the last face). The faces are no surface to
    draw (the visual elements keep their own meshes). More than `max_parts` parts are merged into that many first
    (`merged_parts`, see the module). ValueError where a point is not finite (pybullet_data's random_urdfs/168 has
    NaN vertices): such a mesh is kept as it is."""
    from scipy.spatial import ConvexHull, QhullError  # here: only a first load per machine needs it

    vertices, parts = [], [["part", []]]
    for line in source.read_text().splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "v":
            vertices.append([float(x) for x in words[1:4]])
        elif words[0] in ("o", "g"):
            parts.append([" ".join(words[1:]) or "part", []])
        elif words[0] == "f":
            parts[-1][1].extend(int(corner.split("/")[0]) for corner in words[1:])
    vertices = np.array(vertices)
    if not np.all(np.isfinite(vertices)):
        raise ValueError(f"{source} has points that are not finite")
    # Each part's points, by their index in `vertices` (OBJ counts from 1, or back from the end).
    named_parts = [(name, sorted({c - 1 if c > 0 else len(vertices) + c for c in corners}))
                   for name, corners in parts if corners]
    if max_parts is not None and len(named_parts) > max_parts:
        named_parts = [(f"merged_{k}", group)
                       for k, group in enumerate(merged_parts([n for _, n in named_parts], vertices, max_parts))]
    lines, written = [f"# the convex hulls of {source.name}'s parts (binpick_sim/cell/hulls.py)"], 0
    for name, named in named_parts:
        try:
            kept = sorted(named[i] for i in ConvexHull(vertices[named]).vertices.tolist())
        except QhullError:  # flat or degenerate: every point stays
            kept = named
        numbers = list(range(written + 1, written + len(kept) + 1))
        numbers += [numbers[-1]] * (-len(numbers) % 3)
        lines.append(f"o {name}")
        lines += [f"v {x!r} {y!r} {z!r}" for x, y, z in vertices[kept].tolist()]
        lines += [f"f {a} {b} {c}" for a, b, c in zip(numbers[0::3], numbers[1::3], numbers[2::3])]
        written += len(kept)
    return "\n".join(lines) + "\n"


def _meshes(root, urdf: Path, kind: str) -> list:
    """(element, file) of every mesh of the `kind` elements (visual, collision)."""
    return [(mesh, urdf.parent / mesh.get("filename").removeprefix("package://"))
            for element in root.iter(kind) for mesh in element.iter("mesh")]


def _hullable(source: Path) -> bool:
    return source.suffix.lower() == ".obj"  # STL and others load as they are


def _write(urdf: Path, folder: Path, visuals: str, max_parts: int | None = None) -> None:
    """The copy of `urdf` and its hull meshes into `folder` (made here)."""
    tree = ElementTree.parse(urdf)
    (folder / HULLS).mkdir(parents=True)
    for mesh, source in _meshes(tree.getroot(), urdf, "visual"):
        if visuals == "original":
            mesh.set("filename", str(source))
            continue
        relative = source.relative_to(urdf.parent)
        (folder / relative.parent).mkdir(parents=True, exist_ok=True)
        for sibling in source.parent.glob(f"{source.stem}.*"):  # the mesh and its materials
            if sibling.suffix != ".urdf":
                shutil.copyfile(sibling, folder / relative.parent / sibling.name)
        mesh.set("filename", str(relative))
    hulled_files: dict[Path, str] = {}
    for mesh, source in _meshes(tree.getroot(), urdf, "collision"):
        if _hullable(source) and source not in hulled_files:
            try:
                text = hull_obj(source, max_parts)
                hulled_files[source] = f"{HULLS}/{len(hulled_files)}_{source.name}"
                (folder / hulled_files[source]).write_text(text)
            except ValueError:
                hulled_files[source] = str(source.resolve())
        mesh.set("filename", hulled_files.get(source) or str(source.resolve()))
    tree.write(folder / urdf.name, encoding="unicode")


def _cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "binpick_sim"


def _name(urdf: Path, visuals: str, max_parts: int | None, files: list[Path]) -> str:
    # The source's path too: the copy may name it.
    digest = hashlib.sha256(f"{FORMAT} {visuals} {max_parts} {urdf.resolve()}".encode())
    for path in sorted({urdf, *files}):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return f"{urdf.stem}-{digest.hexdigest()[:16]}"


def _publish(urdf: Path, root: Path, name: str, visuals: str, max_parts: int | None) -> Path:
    """The copy's URDF under `root / name`, written there unless a finished one is there already."""
    target = root / name
    if not (target / urdf.name).is_file():
        root.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
        try:
            _write(urdf, scratch / "copy", visuals, max_parts)
            os.replace(scratch / "copy", target)  # another process's finished copy may be there: theirs stays
        except OSError:
            if not (target / urdf.name).is_file():
                raise
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return target / urdf.name


@lru_cache(maxsize=4096)
def hulled(urdf: str | Path, visuals: str = "original", max_parts: int | None = None) -> str:
    """The path of `urdf`'s copy with hulled collision meshes (written on first use, see the module); `urdf` itself
    where it has no OBJ collision mesh. `visuals`: "original" or "copied"; `max_parts`: the most convex parts a
    mesh keeps, None for all (see the module)."""
    if visuals not in VISUALS:
        raise ValueError(f"visuals must be one of {VISUALS}, got {visuals!r}")
    urdf = Path(urdf)
    root = ElementTree.parse(urdf).getroot()
    collision = [source for _, source in _meshes(root, urdf, "collision")]
    if not any(_hullable(source) for source in collision):
        return str(urdf)
    # The visual meshes are part of what is written only where they are copied: the Panda's, named where they lie,
    # are 9 MB that every process hashed at its first load (12 ms) for nothing.
    copied = [source for _, source in _meshes(root, urdf, "visual")] if visuals == "copied" else []
    name = _name(urdf, visuals, max_parts, collision + copied)
    try:
        return str(_publish(urdf, _cache_root(), name, visuals, max_parts))
    except OSError:  # no writable cache: a folder of this process's own
        with _LOCK:
            if not _scratch:
                _scratch.append(Path(tempfile.mkdtemp(prefix="binpick_sim-hulls-")))
                atexit.register(shutil.rmtree, _scratch[0], True)
        return str(_publish(urdf, _scratch[0], name, visuals, max_parts))
