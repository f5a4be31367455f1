"""How much of each object a view sees, and what covers the rest: the `visible` and `occluding` queries.

Both compare two segmentation masks per object, pixel by pixel: the whole scene's, and the object's
alone. The two must come from the same renderer (TinyRenderer and OpenGL rasterise edges differently),
and that renderer is the one the scene file chose, so one PyBullet client draws both: `egl` allows
one client per process (rendering.py), so there is no second, empty world to draw an object alone in.
Instead, for the masks alone every body of the client is hidden and brought back a group at a time.
TinyRenderer skips a shape whose alpha is 0, geometry and all (a 320 x 240 mask of the empty cell: 2 ms
here, 14 with the arm merely out of sight), so there bodies are hidden by their colour; OpenGL still
draws such a shape into its mask, so with `egl` bodies are parked out of sight, PARK_DISTANCE behind the
eye, where the view clips them.

A group holds objects whose footprints on the image cannot overlap: the rectangles their bounding
boxes project to, two pixels wider, are disjoint. None of them can then cover another's pixels, so one
render gives each its mask alone, as rendering them one by one would, in a fraction of the renders.
A bounding box is PyBullet's (the collision shapes'), which a visual mesh may exceed: each group is
checked (every member's mask strictly inside its rectangle), and one that fails is rendered again one
object at a time. For a footprint in one piece the check proves the masks exact: a pixel of one
member covered by another lies outside its own rectangle, so the member's footprint crosses its
rectangle's edge, where no other member's pixels can be; the member's mask shows it there.

Bodies are moved, so this runs in a copy of the cell (the reasoner's render worker), never in the
live world; every body is put back as it was before it returns.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pybullet

PARK_DISTANCE = 1000.0  # m behind the eye: bodies up to this size (pybullet_data's ground is 200 m) vanish
MARGIN = 2  # px added around a projected bounding box (TinyRenderer samples half a pixel off OpenGL)


@dataclass(frozen=True)
class View:
    """Where a segmentation mask is drawn from: PyBullet's view and projection matrices, and the size."""

    view_matrix: tuple[float, ...]  # column-major 4x4, as computeViewMatrix returns it
    projection: tuple[float, ...]  # column-major 4x4, as computeProjectionMatrixFOV returns it
    width: int
    height: int


def object_visibility(client, renderer: int, view: View, objects: dict[str, int],
                      names: dict[int, str]) -> dict[str, dict]:
    """Per object (`objects`: name -> body): its pixels in the whole scene (`pixels`), alone
    (`pixels_alone`), their ratio (0 with no pixels alone) and the names (`names`: body -> name) of the
    bodies that cover its own pixels (`occluded_by`). `renderer`: getCameraImage's renderer argument."""
    full = segmentation(client, renderer, view)
    alone = alone_masks(client, renderer, view, objects)
    answers = {}
    for name, body in objects.items():
        mask = alone[name]
        seen, possible = int(np.count_nonzero(full == body)), int(np.count_nonzero(mask))
        covering = {int(b) for b in np.unique(full[mask]) if b >= 0 and b != body}
        answers[name] = {"pixels": seen, "pixels_alone": possible, "ratio": seen / possible if possible else 0.0,
                         "occluded_by": sorted(names[b] for b in covering if b in names)}
    return answers


def segmentation(client, renderer: int, view: View) -> np.ndarray:
    """The body id per pixel (-1: nothing), height x width."""
    seg = client.getCameraImage(view.width, view.height, view.view_matrix, view.projection, renderer=renderer)[4]
    return np.asarray(seg, dtype=np.int64).reshape(view.height, view.width)


def alone_masks(client, renderer: int, view: View, objects: dict[str, int]) -> dict[str, np.ndarray]:
    """Each object's mask as if nothing else were there (see the module's docstring)."""
    boxes = {name: footprint(client, body, view) for name, body in objects.items()}
    bodies = [client.getBodyUniqueId(i) for i in range(client.getNumBodies())]
    hide, show = (_by_colour if renderer == pybullet.ER_TINY_RENDERER else _by_place)(client, view, bodies)

    def render(group: list[str]) -> dict[str, np.ndarray]:
        for name in group:
            show(objects[name])
        seg = segmentation(client, renderer, view)
        for name in group:
            hide(objects[name])
        return {name: seg == objects[name] for name in group}

    masks: dict[str, np.ndarray] = {}
    try:
        for body in bodies:
            hide(body)
        for group in _groups(boxes):
            drawn = render(group)
            if len(group) > 1 and not all(_inside(drawn[n], boxes[n]) for n in group):
                drawn = {name: render([name])[name] for name in group}  # a box was too small: one by one
            masks.update(drawn)
    finally:
        for body in bodies:
            show(body)
    return masks


def _by_colour(client, view: View, bodies: list[int]):
    """hide(body), show(body) for TinyRenderer: every visual shape's alpha 0, then its own colour again."""
    shapes = {}  # body -> [(link, index among the link's shapes, rgba)]
    for body in bodies:
        rows = client.getVisualShapeData(body)
        links = [row[1] for row in rows]
        shapes[body] = [(link, links[:i].count(link), row[7]) for i, (link, row) in enumerate(zip(links, rows))]

    def hide(body: int) -> None:
        for link in {link for link, _, _ in shapes[body]}:
            client.changeVisualShape(body, link, rgbaColor=(1.0, 1.0, 1.0, 0.0))

    def show(body: int) -> None:
        for link, index, rgba in shapes[body]:
            client.changeVisualShape(body, link, shapeIndex=index, rgbaColor=rgba)
    return hide, show


def _by_place(client, view: View, bodies: list[int]):
    """hide(body), show(body) for OpenGL: parked PARK_DISTANCE behind the eye, then back where it was."""
    poses = {body: client.getBasePositionAndOrientation(body) for body in bodies}
    park = (_eye(view) - PARK_DISTANCE * _forward(view)).tolist()

    def hide(body: int) -> None:
        client.resetBasePositionAndOrientation(body, park, (0.0, 0.0, 0.0, 1.0))

    def show(body: int) -> None:
        client.resetBasePositionAndOrientation(body, *poses[body])
    return hide, show


def footprint(client, body: int, view: View) -> tuple[float, float, float, float]:
    """The rectangle (u0, v0, u1, v1, in pixels; rows from the top) that the body's bounding box (every
    link's) projects to, MARGIN wider; unbounded when part of the box is behind the eye."""
    links = range(-1, client.getNumJoints(body))
    lows, highs = zip(*(client.getAABB(body, link) for link in links))
    low, high = np.min(lows, axis=0), np.max(highs, axis=0)
    corners = np.array([[x, y, z, 1.0] for x in (low[0], high[0]) for y in (low[1], high[1])
                        for z in (low[2], high[2])])
    clip = corners @ (_matrix(view.projection) @ _matrix(view.view_matrix)).T
    if np.any(clip[:, 3] <= 1e-9):
        return (-np.inf, -np.inf, np.inf, np.inf)
    u = (clip[:, 0] / clip[:, 3] + 1) / 2 * view.width
    v = (1 - clip[:, 1] / clip[:, 3]) / 2 * view.height
    return (np.floor(u.min()) - MARGIN, np.floor(v.min()) - MARGIN, np.ceil(u.max()) + MARGIN,
            np.ceil(v.max()) + MARGIN)


def _groups(boxes: dict[str, tuple]) -> list[list[str]]:
    """Objects in groups of pairwise disjoint rectangles (first fit, in the order given)."""
    groups: list[list[str]] = []
    for name, box in boxes.items():
        for group in groups:
            if not any(_overlap(box, boxes[other]) for other in group):
                group.append(name)
                break
        else:
            groups.append([name])
    return groups


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _inside(mask: np.ndarray, box) -> bool:
    """Every pixel of the mask strictly inside the rectangle (off its edge row and column)."""
    rows, cols = np.nonzero(mask)
    if not len(rows):
        return True
    u0, v0, u1, v1 = box
    return bool(cols.min() > u0 and cols.max() < u1 - 1 and rows.min() > v0 and rows.max() < v1 - 1)


def _matrix(values) -> np.ndarray:
    return np.asarray(values, dtype=float).reshape(4, 4).T  # PyBullet's matrices are column-major


def _eye(view: View) -> np.ndarray:
    m = _matrix(view.view_matrix)
    return -m[:3, :3].T @ m[:3, 3]


def _forward(view: View) -> np.ndarray:
    return -_matrix(view.view_matrix)[2, :3]  # OpenGL's eye looks along its -z
