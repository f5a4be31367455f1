"""A spawned entity's URDF read from where a request points: a file://, package:// or plain path resolved
inside the spawnable folders, the text read as UTF-8, the XML parsed, its numbers checked and every mesh
resolved to an absolute path inside those folders.

Kept apart from the entities (entities.py), which decide what a spawn does with the parsed URDF: this is
about trusting a file named by a client, the same for every spawn.
"""
from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path
from urllib.parse import unquote

import pybullet_data

from .errors import (MISSING_ASSETS, NOT_FOUND, OPERATION_FAILED, RESOURCE_PARSE_ERROR, UNSUPPORTED_ASSETS,
                            UNSUPPORTED_FORMAT, EntityError)
from .spawn_sources import OutsideRoots, SpawnRoots
from .urdf_limits import NumberError, check_numbers

MESH_FORMATS = {".obj", ".stl", ".dae"}  # what PyBullet's URDF importer reads


def resolve_uri(uri: str, roots: SpawnRoots) -> tuple[Path, Path | None]:
    """A URDF's path from `file://`, `package://` (ament index), an absolute path, or a path relative to
    pybullet_data (as PyBullet's own loadURDF finds them), inside the spawnable folders (a package's
    file inside that package's share folder); and that package's share folder, if from one."""
    shown, package = repr(uri[:200]), None
    if uri.startswith("package://"):
        path, package = package_path(uri), path_of_package(uri)
    elif uri.startswith("file://"):
        path = Path(unquote(uri.removeprefix("file://")))
    elif "://" in uri:
        raise EntityError(UNSUPPORTED_FORMAT, f"{shown}: only file://, package:// and plain paths are read")
    else:
        path = Path(uri) if Path(uri).is_absolute() else Path(pybullet_data.getDataPath()) / uri
    if path.suffix.lower() != ".urdf":
        raise EntityError(UNSUPPORTED_FORMAT, f"{shown} is not a .urdf file; spawn formats: urdf")
    try:
        roots.check(path, shown, also=[package] if package else [])
    except OutsideRoots as exc:
        raise EntityError(OPERATION_FAILED, str(exc)) from None
    if not path.is_file():
        raise EntityError(NOT_FOUND, f"{shown}: no such file")
    return path, package


def path_of_package(uri: str) -> Path:
    """The share folder of a package:// URI's package."""
    name = uri.removeprefix("package://").partition("/")[0]
    return package_path(f"package://{name}/")


def package_path(uri: str) -> Path:
    package, _, rest = uri.removeprefix("package://").partition("/")
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
    except ImportError:  # no ROS install: no packages to find
        raise EntityError(NOT_FOUND, f"{uri!r}: ament_index_python is not installed") from None
    try:
        return Path(get_package_share_directory(package)) / rest
    except (PackageNotFoundError, ValueError):
        raise EntityError(NOT_FOUND, f"{uri!r}: no package {package!r} in the ament index") from None


def read_urdf(path: Path) -> str:
    """The file's text. The reason of a refusal never quotes the file (UnicodeDecodeError names a byte)."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise EntityError(RESOURCE_PARSE_ERROR, f"cannot read {path}: not UTF-8 text") from None
    except OSError as exc:
        raise EntityError(RESOURCE_PARSE_ERROR, f"cannot read {path}: {exc.strerror or 'error'}") from None


def parse_urdf(text: str, base: Path, roots: SpawnRoots, package: Path | None = None,
               echo: bool = True) -> ElementTree.Element:
    """The URDF's XML, its numbers checked (urdf_limits), with every mesh file resolved to an absolute
    path (relative ones against `base`) inside the spawnable folders or `package`'s share folder.
    `echo`: messages may quote the document (the client sent it); otherwise they say where, not what."""
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as exc:  # says line and column, quotes nothing
        raise EntityError(RESOURCE_PARSE_ERROR, f"not well-formed XML: {exc}") from None
    tag = f"<{root.tag[:50]}>" if echo else "the root element"
    if root.tag in ("sdf", "mujoco"):
        raise EntityError(UNSUPPORTED_FORMAT, f"<{root.tag}> documents are not read; spawn formats: urdf")
    if root.tag != "robot" or root.find("link") is None:
        raise EntityError(RESOURCE_PARSE_ERROR, f"not a URDF: {tag} should be <robot> with a <link>")
    try:
        check_numbers(root, echo)
    except NumberError as exc:
        raise EntityError(RESOURCE_PARSE_ERROR, f"out of bounds: {exc}") from None
    for k, mesh in enumerate(root.iter("mesh"), 1):
        filename = mesh.get("filename", "")
        shown = repr(filename[:200]) if echo else f"#{k}"
        if filename.startswith("package://"):
            try:
                path, also = package_path(filename), [path_of_package(filename)]
            except EntityError as exc:
                raise EntityError(MISSING_ASSETS, f"mesh {shown}: {exc}" if echo else f"mesh {shown}: no such package") from None
        else:
            path = Path(unquote(filename.removeprefix("file://")))
            path, also = (path if path.is_absolute() else base / path), ([package] if package else [])
        if path.suffix.lower() not in MESH_FORMATS:
            raise EntityError(UNSUPPORTED_ASSETS, f"mesh {shown}: PyBullet reads {sorted(MESH_FORMATS)}")
        try:
            roots.check(path, f"mesh {shown}", also)
        except OutsideRoots as exc:
            raise EntityError(OPERATION_FAILED, str(exc)) from None
        if not path.is_file():
            raise EntityError(MISSING_ASSETS, f"mesh {shown} not found")
        mesh.set("filename", str(path))
    return root
