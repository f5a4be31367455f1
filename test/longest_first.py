"""The order the two-worker `make test` hands test files out in: the longest first.

pytest-xdist's `--dist loadfile` gives each worker a whole file at a time, in the order of the run's
collection (with `--no-loadscope-reorder`; its default order is by number of tests, which put the
longest file, a few minutes of Ray runs, last and left one worker alone with it at the end). Longest
first is the classic rule for spreading jobs over a fixed number of machines: the short files fill
the gaps at the end. The durations are of a fresh-clone CI rehearsal (2026-11-26, `--durations=0`,
summed per file); a file not listed runs after these, in collection order, and a listed file that no
longer exists fails test_a_listed_file_exists (test/docs/test_test_order.py)."""
from __future__ import annotations

LONGEST_FIRST = (  # seconds per file, that run, on a loaded machine: only the order matters
    "rollouts/test_rollouts.py",  # 380
    "envs/test_pixel_observations.py",  # 149
    "envs/test_learning_signals.py",  # 139
    "envs/test_envs.py",  # 137
    "robustness/test_garbage_resets_and_signals.py",  # 113
    "docs/test_readme_ros_path.py",  # 100
    "robustness/test_hostile_requests.py",  # 94
    "rollouts/test_datasets.py",  # 87
    "envs/test_reproducibility.py",  # 86
    "envs/test_gym_contract.py",  # 70
    "envs/test_seed_gym_api.py",  # 61
    "robustness/test_hostile_camera_and_robot_input.py",  # 42
    "vision/test_renderers.py",  # 40
    "control/test_controllers.py",  # 33
    "nodes/test_two_arms.py",  # 32
    "nodes/test_simulation_interfaces.py",  # 32
    "nodes/test_trajectory_actions.py",  # 31
    "cell/test_bin_shake.py",  # 31
    "robustness/test_stale_dds_shm_files.py",  # 29
)


def order(items: list, root) -> None:
    """Sort pytest's items in place: the listed files first, longest first; the rest after, as collected.
    The sort is stable, so the tests of a file keep their order."""
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}

    def key(item) -> int:
        path = item.path.relative_to(root).as_posix() if item.path.is_relative_to(root) else ""
        return rank.get(path, len(rank))

    items.sort(key=key)
