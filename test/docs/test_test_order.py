"""The two-worker run's order (test/longest_first.py): what it lists exists, and the collection follows it."""
import subprocess
import sys

from longest_first import LONGEST_FIRST

import ros_env

TESTS = ros_env.REPO / "test"


def test_a_listed_file_exists():
    assert [name for name in LONGEST_FIRST if not (TESTS / name).is_file()] == []


def test_the_collection_starts_with_the_longest_files_and_keeps_each_files_order():
    listed = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-qq", "-p", "no:cacheprovider",
                             str(TESTS / "cell"), str(TESTS / "rollouts" / "test_datasets.py"),
                             str(TESTS / "envs" / "test_envs.py")],
                            capture_output=True, text=True, cwd=ros_env.REPO, timeout=120)
    ids = [line for line in listed.stdout.splitlines() if "::" in line]
    files = list(dict.fromkeys(i.split("::")[0] for i in ids))
    assert files[:3] == ["test/envs/test_envs.py", "test/rollouts/test_datasets.py", "test/cell/test_bin_shake.py"], files
    first_file = [i for i in ids if i.startswith("test/envs/test_envs.py")]
    plain = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-qq", "-p", "no:cacheprovider",
                            str(TESTS / "envs" / "test_envs.py")], capture_output=True, text=True,
                           cwd=ros_env.REPO, timeout=120)
    assert first_file == [line for line in plain.stdout.splitlines() if "::" in line]
