"""One PyBullet physics client with its sim time and seeded random generator.

Everything that touches the client goes through one World, and every thread that uses it holds
`world.lock`: PyBullet clients are not thread-safe, and the ROS nodes call in from executor
threads while the physics thread steps.
"""
from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..config import SimulationConfig
from .pybullet_stdout import quiet_stdout

with quiet_stdout():
    import pybullet
import pybullet_data  # noqa: E402
from pybullet_utils.bullet_client import BulletClient  # noqa: E402

from .rendering import renderers  # noqa: E402  (after pybullet's quiet import)


class Client(BulletClient):
    """A BulletClient that binds each PyBullet function to its client id once, not on every call.

    BulletClient looks the name up, checks it with `inspect` and wraps a function in a new partial on
    every attribute access: about 5 us a call, which a 24-step env step with ~150 PyBullet calls
    pays in full. The bound function is kept on the instance, so later look-ups are plain attribute
    reads; the calls themselves (and so every result) are unchanged. `disconnect` is not kept, so
    that the base class still marks the client as gone.
    """

    def __getattr__(self, name):
        if name.startswith("_"):  # e.g. `_client` before the connection was made: not a PyBullet function
            raise AttributeError(name)
        attribute = super().__getattr__(name)
        if name != "disconnect":
            self.__dict__[name] = attribute  # a bound function or a module constant
        return attribute

    def __del__(self):
        if "_client" in self.__dict__:  # a constructor interrupted (Ctrl-C) before connecting has nothing to close
            super().__del__()


def connect(gui: bool = False) -> Client:
    if gui and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        # PyBullet's GUI would abort the whole process without a word about why
        raise ValueError("gui:=true needs a display, and neither DISPLAY nor WAYLAND_DISPLAY is set "
                         "(run headless with gui:=false, or set DISPLAY, e.g. under xvfb-run)")
    with quiet_stdout():
        return Client(connection_mode=pybullet.GUI if gui else pybullet.DIRECT)


@dataclass(frozen=True)
class Snapshot:
    """What `World.restore` needs to put the world back exactly (bodies must be unchanged)."""

    state_id: int
    step_count: int
    rng_state: dict


class World:
    def __init__(self, config: SimulationConfig, gui: bool | None = None):
        self.config = config
        use_gui = config.gui if gui is None else gui
        self.client = connect(use_gui)
        self.gui = use_gui
        self.renderer = renderers.GUI if use_gui else renderers.TINY  # BinPickingSim may attach another
        self.lock = threading.RLock()
        self.step_count = 0
        self.rng = np.random.default_rng(config.seed)
        # Tuples, replaced (never changed in place) when a hook comes or goes: a hook may remove itself
        # or another while the step runs them (a shake that ends, a trajectory that is done).
        self._before_step: tuple[Callable[[], None], ...] = ()
        self._after_step: tuple[Callable[[], None], ...] = ()
        self.configure()

    def configure(self) -> None:
        """Apply gravity and engine parameters (again after `resetSimulation`)."""
        c = self.client
        c.setAdditionalSearchPath(pybullet_data.getDataPath())
        c.setGravity(*self.config.gravity)
        c.setPhysicsEngineParameter(
            fixedTimeStep=self.config.timestep,
            numSubSteps=self.config.substeps,
            numSolverIterations=self.config.solver_iterations,
            deterministicOverlappingPairs=1,
        )
        if self.gui:
            c.configureDebugVisualizer(pybullet.COV_ENABLE_GUI, 0)

    def rebuild(self) -> None:
        """Empty the physics world for good: PyBullet's `resetSimulation` deletes Bullet's dynamics world
        and makes a new one, the only way to drop every piece of state a body-by-body reset leaves behind
        (contact manifolds and their warm-start impulses, the broadphase's pair cache, the solver's and
        the world's own bookkeeping, freed body ids handed out again in another order, motor targets,
        sleeping state). Every body is gone afterwards and ids start again from 0; the engine
        parameters are applied again. Sim time (`step_count`) and the RNG are kept: the clock runs on
        and the caller seeds."""
        self.client.resetSimulation()
        self.configure()

    @property
    def timestep(self) -> float:
        return self.config.timestep

    @property
    def time(self) -> float:
        """Simulated seconds since the world was created."""
        return self.step_count * self.config.timestep

    def seed(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def add_step_hooks(self, before: Callable[[], None] | None = None,
                       after: Callable[[], None] | None = None) -> None:
        """Run callbacks around every physics step (controllers, sensor accumulation), in the order
        they were added, until removed."""
        if before:
            self._before_step += (before,)
        if after:
            self._after_step += (after,)

    def remove_step_hooks(self, before: Callable[[], None] | None = None,
                          after: Callable[[], None] | None = None) -> None:
        """Stop running hooks added with `add_step_hooks` (one that is not there is ignored).

        Work that is idle most of the time (a bin's shake, an arm's controller) hooks itself in only
        while it runs: a 20-step env step then costs its 20 `stepSimulation` calls and no Python
        call per step besides."""
        if before:
            self._before_step = tuple(h for h in self._before_step if h != before)
        if after:
            self._after_step = tuple(h for h in self._after_step if h != after)

    def step(self, n: int = 1) -> None:
        step = self.client.stepSimulation
        if not (self._before_step or self._after_step):
            for _ in range(n):
                step()
                self.step_count += 1  # counted per step: a step that raises leaves the count right
            return
        for _ in range(n):
            for hook in self._before_step:
                hook()
            step()
            self.step_count += 1
            for hook in self._after_step:
                hook()

    def snapshot(self) -> Snapshot:
        return Snapshot(self.client.saveState(), self.step_count, self.rng.bit_generator.state)

    def restore(self, snapshot: Snapshot, discard: bool = True) -> None:
        """Return positions, velocities, contacts, sim time and the RNG to a snapshot."""
        self.client.restoreState(stateId=snapshot.state_id)
        self.step_count = snapshot.step_count
        self.rng.bit_generator.state = snapshot.rng_state
        if discard:
            self.client.removeState(snapshot.state_id)

    def close(self) -> None:
        had_egl = renderers.detach(self.client)
        try:
            with quiet_stdout() if had_egl else contextlib.nullcontext():  # the EGL plugin says goodbye
                self.client.disconnect()
        except pybullet.error:
            pass  # already disconnected
