"""Settled piles, remembered by the RNG state they were drawn from (issue 54: a reset to the same layout).

A new layout's objects are dropped and settled in a physics client of their own (the settler: the cell's
ground and bins, no arm), and the live world, just rebuilt, gets them placed where they came to rest, with
the velocities they ended with, asleep when the pile settled. Every reset builds its live world that one
way, whether the pile was settled just now or is remembered from an earlier reset of the same RNG state, so
both give the same world bit for bit: a remembered layout costs the rebuild and the placing alone.

Why a client of its own and not the live world: a bit-exact return to a pile settled in the live world would
need that world's contact manifolds and pair cache as the settle left them, which `restoreState` does not
give back in order (bullet3 #4387, #3993). A pile placed into a world just rebuilt has none of them; the
settle's history stays in the settler, whose world is rebuilt before every settle. The arm is left out of
the settler: at home it touches nothing in the bin, and the piles came out the same to the last bit of their
positions as the settle beside it that this replaced (20 seeds checked when it was written).
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

LAYOUTS = 256  # layouts remembered per scene: an evaluation cycling over 100-200 fixed seeds still hits


@dataclass(frozen=True)
class Rest:
    """One object of a settled pile: where it was dropped (its URDF link frame, as loaded) and where it came
    to rest (its base: centre of mass and orientation, as PyBullet reads and resets it)."""
    drop: tuple  # (position, xyzw)
    pose: tuple  # (position, xyzw)
    velocity: tuple  # (linear, angular)


@dataclass(frozen=True)
class Layout:
    urdf: Path
    scale: float
    objects: tuple[Rest, ...]
    settled: bool  # the pile was at rest when the settle ended (it sleeps), not stopped by `settle_steps`
    steps: int  # physics steps the settle took: the live world's clock runs on by as many
    rng_after: dict  # the world RNG's state after the layout's draws


class Layouts:
    """The most recent LAYOUTS layouts of one scene, by the RNG state and object type they were drawn from."""

    def __init__(self, size: int = LAYOUTS):
        self.size = size
        self._layouts: OrderedDict = OrderedDict()

    @staticmethod
    def key(rng, kept: tuple | None) -> tuple:
        """`kept`: the object type and scale a `keep_object_type` reset keeps, else None."""
        return repr(rng.bit_generator.state), kept

    def get(self, key: tuple) -> Layout | None:
        layout = self._layouts.get(key)
        if layout is not None:
            self._layouts.move_to_end(key)
        return layout

    def put(self, key: tuple, layout: Layout) -> None:
        self._layouts[key] = layout
        self._layouts.move_to_end(key)
        while len(self._layouts) > self.size:
            self._layouts.popitem(last=False)

    def clear(self) -> None:
        self._layouts.clear()

    def __len__(self) -> int:
        return len(self._layouts)
