"""`rollouts --address` on a real two-node Ray cluster: `ray start --head` and `ray start --address` as
processes of their own on this machine (each its own temp dir, every port a free one, so that another
test's cluster may run beside it), one node killed mid-run.

What it shows: the workers spread over both nodes (each episode's node id is in dataset.json), the
dataset is the one a local single-worker run gives, and the episodes of a node that dies mid-run are
re-run on the other node, none lost, none twice. Both nodes are stopped by the PID of their `ray start
--block` process (SIGTERM: it stops the raylet, the GCS and the workers; then SIGKILL, by PID, to any
process that was below it and outlived it), and the temp dirs removed, whatever happens.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EPISODES, SEED, MAX_STEPS = 8, 30, 12
ONE_OBJECT = REPO / "config" / "scene_one_object.yaml"

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="needs ray (requirements.txt)")


def _free_ports(count: int) -> list[int]:
    """Ports the OS hands out now (all held open together, so they are distinct)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time) of a process, None if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[1]), int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def _descendants(pid: int) -> list[tuple[int, int]]:
    """(pid, start time) of every process below `pid`: Ray puts each worker in a process group of its own,
    so the `ray start` group alone would leave a node's workers running."""
    children: dict[int, list[tuple[int, int]]] = {}
    for entry in Path("/proc").iterdir():
        stat = _stat(int(entry.name)) if entry.name.isdigit() else None
        if stat is not None:
            children.setdefault(stat[0], []).append((int(entry.name), stat[1]))
    found, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child[0])
    return found


def _kill(processes: list[tuple[int, int]]) -> None:
    """SIGKILL each (pid, start time) that is still that process (a pid reused since is left alone)."""
    for pid, started in processes:
        stat = _stat(pid)
        if stat is not None and stat[1] == started:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class Node:
    """One `ray start --block` process (in a session of its own, away from pytest's signals)."""

    def __init__(self, name: str, arguments: list[str], environment: dict):
        self.name = name
        self.temp = Path(tempfile.mkdtemp(prefix=f"rc{name[0]}", dir="/tmp"))  # short: Ray's socket paths
        node_manager, object_manager, agent, agent_grpc, metrics, runtime_env = _free_ports(6)
        command = [str(Path(sys.executable).parent / "ray"), "start", "--block", "--disable-usage-stats",
                   f"--temp-dir={self.temp}", "--node-ip-address=127.0.0.1", "--object-store-memory=100000000",
                   f"--node-manager-port={node_manager}", f"--object-manager-port={object_manager}",
                   f"--dashboard-agent-listen-port={agent}",
                   f"--dashboard-agent-grpc-port={agent_grpc}", f"--metrics-export-port={metrics}",
                   f"--runtime-env-agent-port={runtime_env}", *arguments]
        self.log = open(self.temp.parent / f"{self.temp.name}.log", "w")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT,
                                        env={**environment, "BINPICK_TEST_NODE": name}, start_new_session=True)

    def kill(self) -> None:
        """SIGKILL to `ray start` and every process below it: the node is gone at once, workers and all, as a
        machine that loses power."""
        _kill(_descendants(self.process.pid))
        self.process.kill()
        self.process.wait(timeout=30)

    def stop(self) -> None:
        """`ray start --block` stops its node on SIGTERM; the group is killed if anything is left after 30 s."""
        below = _descendants(self.process.pid)
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        _kill([*below, *_descendants(self.process.pid)])  # whatever outlived `ray start`
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)
        self.log.close()
        shutil.rmtree(self.temp, ignore_errors=True)
        Path(self.log.name).unlink(missing_ok=True)


def _wait_for_nodes(address: str, count: int, environment: dict, nodes: list, timeout: float = 120.0) -> None:
    """Until the cluster at `address` lists `count` live nodes (asked in a process of its own)."""
    probe = ("import ray, sys; ray.init(address=sys.argv[1], log_to_driver=False); "
             "print(sum(n['Alive'] for n in ray.nodes()))")
    deadline = time.monotonic() + timeout
    while True:
        for node in nodes:
            assert node.process.poll() is None, f"{node.name} node exited: {Path(node.log.name).read_text()[-3000:]}"
        done = subprocess.run([sys.executable, "-c", probe, address], capture_output=True, text=True,
                              env=environment, timeout=timeout)
        if done.returncode == 0 and done.stdout.strip().splitlines()[-1:] == [str(count)]:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"the cluster at {address} has not {count} nodes: {done.stdout[-500:]} {done.stderr[-2000:]}")
        time.sleep(1.0)


@pytest.mark.slow  # two Ray nodes, a driver, a node death and a local run: ~2 min on the loaded shared 2 cores
@pytest.mark.scale  # `make test-scale`; make test keeps a killed worker on one node (test_rollouts.py)
@pytest.mark.timeout(600)
def test_rollouts_on_a_two_node_cluster_spread_survive_a_node_loss_and_match_a_local_run(tmp_path, monkeypatch):
    import pandas as pd

    from binpick_sim.rollouts import RunSpec, read_dataset, rollouts

    marks = tmp_path / "marks"
    marks.mkdir()
    path = os.pathsep.join([str(REPO), str(REPO / "test" / "rollouts"), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    # A lost node is noticed after ~1.5 s (GCS health checks every 500 ms, 3 missed), not Ray's ~30 s.
    # Token authentication, with a token of this test's own for every process of it: `ray start` turns it on by
    # itself where ~/.ray/auth_token exists, and a driver without the token is then refused.
    environment = {**os.environ, "PYTHONPATH": path, "BINPICK_MARK_DIR": str(marks), "RAY_USAGE_STATS_ENABLED": "0",
                   "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": uuid.uuid4().hex + uuid.uuid4().hex,
                   "RAY_health_check_period_ms": "500", "RAY_health_check_timeout_ms": "1000",
                   "RAY_health_check_failure_threshold": "3", "RAY_health_check_initial_delay_ms": "0"}
    for name in ("RAY_ADDRESS",):
        environment.pop(name, None)
    (gcs_port,) = _free_ports(1)
    address = f"127.0.0.1:{gcs_port}"
    nodes = []
    driver = None
    try:
        # the head has a CPU to spare: the killed node's worker is restarted there
        nodes.append(Node("head", ["--head", f"--port={gcs_port}", "--num-cpus=2", "--include-dashboard=false"],
                          environment))
        _wait_for_nodes(address, 1, environment, nodes)
        nodes.append(Node("second", [f"--address={address}", "--num-cpus=1"], environment))
        _wait_for_nodes(address, 2, environment, nodes)

        out = tmp_path / "cluster"
        driver = subprocess.Popen(
            [sys.executable, "-m", "binpick_sim.rollouts", "--address", address, "--out", str(out),
             "--episodes", str(EPISODES), "--workers", "2", "--seed", str(SEED), "--max-steps", str(MAX_STEPS),
             "--policy", "rollout_policies:marked", "--config", str(ONE_OBJECT)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment)
        # the second node's worker has finished one episode and started the next: kill the node there
        deadline = time.monotonic() + 180
        while len(list(marks.glob("second-*"))) < 2:
            assert driver.poll() is None, driver.communicate()
            assert time.monotonic() < deadline, "no episode ran on the second node"
            time.sleep(0.05)
        nodes[1].kill()
        stdout, stderr = driver.communicate(timeout=300)
        assert driver.returncode == 0, stderr[-3000:]
    finally:
        if driver is not None and driver.poll() is None:
            driver.kill()
            driver.wait()
        for node in reversed(nodes):
            node.stop()

    summary = json.loads((out / "dataset.json").read_text())
    on = summary["episode_nodes"]
    assert sorted(map(int, on)) == list(range(EPISODES)) and len(set(on.values())) == 2, on  # both nodes ran episodes
    assert summary["retries"] >= 1, stdout  # the killed node's episode in flight was started again
    started = sorted(p.name for p in marks.iterdir())
    assert any(m.startswith("second-") for m in started) and any(m.startswith("head-") for m in started)
    steps, episodes = read_dataset(out)
    assert steps.groupby("episode")["step"].apply(list).tolist() == [list(range(MAX_STEPS))] * EPISODES

    # the same episodes on one local worker: the same dataset, row for row
    monkeypatch.setenv("PYTHONPATH", path)  # the local cluster's workers find the policy and its folder too
    monkeypatch.setenv("BINPICK_MARK_DIR", str(marks))
    local = tmp_path / "local"
    rollouts(local, EPISODES, 1, SEED, RunSpec(policy="rollout_policies:marked", max_steps=MAX_STEPS,
                                               env_options={"config_file": str(ONE_OBJECT)}), progress=False)
    local_steps, local_episodes = read_dataset(local)
    pd.testing.assert_frame_equal(steps, local_steps)
    pd.testing.assert_frame_equal(episodes, local_episodes)
