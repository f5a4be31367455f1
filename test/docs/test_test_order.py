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


def test_no_test_file_skips_at_its_top_but_the_launch_tests():
    """launch_testing's pytest plugin (installed on a ROS machine and in CI) imports every test file of a folder
    when it collects, and a skip at a module's top there skips the whole folder: `colcon test` of
    test/robustness once ran 1 test of 300, skipped, because one file skipped at its top for want of rosbags.
    A skip belongs in a test or a fixture; only the launch_testing files, which need the plugin to be collected
    at all, skip at their top."""
    import ast

    allowed = {"test/launch/test_launch_sim.py", "test/launch/test_launch_two_arms.py"}
    skipping = []
    for path in sorted(TESTS.rglob("test_*.py")):
        for node in ast.parse(path.read_text()).body:  # statements at the top (a `pytestmark` skipif marks each test)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            text = ast.unparse(node)
            if "importorskip(" in text or "allow_module_level" in text:
                skipping.append(str(path.relative_to(ros_env.REPO)))
    assert sorted(set(skipping) - allowed) == []
