"""Policies the rollout tests hand to Ray workers by name (`rollout_policies:kill_once`).

`kill_once` plays the seeded random policy, but on the first attempt at seed KILL_SEED it SIGKILLs
its own worker process at step KILL_STEP: a worker dying mid-episode, as a node failure or the OOM
killer would do it. A marker file (created exclusively, so only one attempt ever wins) in the folder
named by $BINPICK_KILL_DIR makes the kill happen once per test however Ray re-runs the episode.
"""
import os
import signal

from binpick_sim.rollouts import random

KILL_SEED = 6
KILL_STEP = 3


def kill_once(env, seed):
    act = random(env, seed)
    steps = iter(range(10**9))

    def step(observation):
        if seed == KILL_SEED and next(steps) == KILL_STEP:
            try:
                os.close(os.open(os.path.join(os.environ["BINPICK_KILL_DIR"], f"killed-{seed}"),
                                 os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                return act(observation)  # the re-run: play on
            os.kill(os.getpid(), signal.SIGKILL)
        return act(observation)

    return step


def broken(env, seed):
    """A policy with a bug: its second action has the wrong length."""
    steps = iter(range(10**9))
    return lambda observation: [0.0] * (5 if next(steps) == 0 else 3)


def object_poses(env, seed):
    """Actions that carry the first object's pose: [x, y, z, qx, qy] of what `env.object_views()` says
    now (clipped to the action space). A dataset of them records the objects' poses, so datasets that
    are equal prove the scenes equal too."""
    import numpy as np

    def act(observation):
        views = env.object_views()
        if not views:
            return np.zeros(5, np.float32)
        first = views[0]
        return np.clip(np.concatenate([first.position, first.orientation[:2]]), -1, 1).astype(np.float32)

    return act


def marked(env, seed):
    """The seeded random policy, leaving a file `<node>-<seed>` in $BINPICK_MARK_DIR as each episode starts, where
    <node> is $BINPICK_TEST_NODE of the `ray start` whose raylet started this worker: which node runs what, as
    it happens. 20 ms per step, so that an episode lasts long enough to be caught mid-way."""
    import time

    node = os.environ.get("BINPICK_TEST_NODE", "local")
    open(os.path.join(os.environ["BINPICK_MARK_DIR"], f"{node}-{seed}"), "a").close()
    act = random(env, seed)

    def step(observation):
        time.sleep(0.02)
        return act(observation)

    return step
