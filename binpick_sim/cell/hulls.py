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

FORMAT = 3  # part of every copy's digest: raise it when what is written changes
HULLS = "hulls"  # a copy's folder of hull meshes, beside its URDF
VISUALS = ("original", "copied")
_LOCK = threading.Lock()
_scratch: list[Path] = []  # this process's own folder, where no cache could be written


def hull_obj(source: Path) -> str:
    """An OBJ of the convex hulls of `source`'s parts (its `o` / `g` groups, which PyBullet's loader makes the
    convex parts of a compound): each part's points on its hull, in the order `source` lists them, each named once
    by the part's faces (in threes, the last point repeated to fill the last face). The faces are no surface to
    draw (the visual elements keep their own meshes). ValueError where a point is not finite (pybullet_data's
    random_urdfs/168 has NaN vertices): such a mesh is kept as it is."""
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
    lines, written = [f"# the convex hulls of {source.name}'s parts (binpick_sim/cell/hulls.py)"], 0
    for name, corners in parts:
        if not corners:
            continue
        named = sorted({c - 1 if c > 0 else len(vertices) + c for c in corners})  # OBJ counts from 1, or back
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


def _write(urdf: Path, folder: Path, visuals: str) -> None:
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
                text = hull_obj(source)
                hulled_files[source] = f"{HULLS}/{len(hulled_files)}_{source.name}"
                (folder / hulled_files[source]).write_text(text)
            except ValueError:
                hulled_files[source] = str(source.resolve())
        mesh.set("filename", hulled_files.get(source) or str(source.resolve()))
    tree.write(folder / urdf.name, encoding="unicode")


def _cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "binpick_sim"


def _name(urdf: Path, visuals: str, files: list[Path]) -> str:
    digest = hashlib.sha256(f"{FORMAT} {visuals} {urdf.resolve()}".encode())  # the path too: the copy may name it
    for path in sorted({urdf, *files}):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return f"{urdf.stem}-{digest.hexdigest()[:16]}"


def _publish(urdf: Path, root: Path, name: str, visuals: str) -> Path:
    """The copy's URDF under `root / name`, written there unless a finished one is there already."""
    target = root / name
    if not (target / urdf.name).is_file():
        root.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
        try:
            _write(urdf, scratch / "copy", visuals)
            os.replace(scratch / "copy", target)  # another process's finished copy may be there: theirs stays
        except OSError:
            if not (target / urdf.name).is_file():
                raise
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return target / urdf.name


@lru_cache(maxsize=4096)
def hulled(urdf: str | Path, visuals: str = "original") -> str:
    """The path of `urdf`'s copy with hulled collision meshes (written on first use, see the module); `urdf` itself
    where it has no OBJ collision mesh. `visuals`: "original" or "copied" (see the module)."""
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
    name = _name(urdf, visuals, collision + copied)
    try:
        return str(_publish(urdf, _cache_root(), name, visuals))
    except OSError:  # no writable cache: a folder of this process's own
        with _LOCK:
            if not _scratch:
                _scratch.append(Path(tempfile.mkdtemp(prefix="binpick_sim-hulls-")))
                atexit.register(shutil.rmtree, _scratch[0], True)
        return str(_publish(urdf, _scratch[0], name, visuals))
