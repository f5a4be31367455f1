"""Starting and stopping stacks never blocks (issue 35), and a hang is loud and short when one happens.

The hang of 2026-11-25: a stack's `close()` left its DDS participant alive (the action servers on the
arm's action node kept that node's rcl handle, and rmw_fastrtps ends a participant with its context's
last node), so it died later, whenever Python's cyclic GC freed the action servers, in whatever thread
allocated then, in a native teardown holding the GIL: inside the next stack's start, which never
returned. And every start made a DDS participant for the parameter probe only to tear it down again.
These tests count the threads Fast DDS names `dds.*`, one set per participant.
"""
import gc
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import ros_env
from binpick_sim.nodes.process import stack as stack_module
from binpick_sim.nodes.process import start_watchdog

HERE = Path(__file__).resolve().parents[1]  # test/: hang_watchdog.py
WATCHDOG_THREAD = "dds.shm.wdog"  # Fast DDS's shared-memory watchdog: one per process, for its lifetime


def dds_threads() -> set[tuple[int, str]]:
    """(thread id, name) of this process's Fast DDS threads, but the process-wide watchdog."""
    found = set()
    for tid in os.listdir("/proc/self/task"):
        try:
            name = Path(f"/proc/self/task/{tid}/comm").read_text().strip()
        except OSError:  # ended meanwhile
            continue
        if name.startswith("dds.") and name != WATCHDOG_THREAD:
            found.add((int(tid), name))
    return found


@pytest.fixture
def no_gc():
    """The garbage collector off: what a stack leaves behind stays where a later GC pass would find it."""
    gc.collect()
    gc.disable()
    yield
    gc.enable()


def start_stack(context):
    from rclpy.parameter import Parameter

    return stack_module.SimStack(context, {"world": [Parameter("realtime_factor", value=0.0)]}).start()


def test_a_closed_stack_leaves_no_dds_participant_for_the_garbage_collector(ros_context, no_gc):
    """On main, the closed stack's participant (7 threads) lived on in the shut-down context until a GC
    pass freed the arm's action servers; a client's action client did the same to the client's."""
    import rclpy

    from binpick_sim.nodes.clients.client import TOPICS, SimClient

    before = dds_threads()
    running = start_stack(ros_context)
    client = SimClient("test_client", context=ros_context, topics={"joint_states": TOPICS["joint_states"]})
    if not ros_env.missing("control_msgs"):
        from control_msgs.action import GripperCommand
        from rclpy.action import ActionClient

        ActionClient(client.node, GripperCommand, "gripper_controller/gripper_cmd")
    client.wait_for_topics(["joint_states"], timeout=30)
    assert dds_threads() - before, "the stack's participant runs threads named dds.*"
    client.close()
    running.close()
    rclpy.try_shutdown(context=ros_context)
    assert dds_threads() - before == set()


def test_starting_a_stack_tears_no_dds_participant_down(ros_context, no_gc, monkeypatch):
    """On main, the parameter probe was the context's only node: its destroy_node tore down the
    participant made for it a moment before, in C holding the GIL, at every start."""
    from rclpy.node import Node

    teardowns = []
    destroy_node = Node.destroy_node

    def watched(node):
        name, before = node.get_name(), dds_threads()
        destroy_node(node)
        if before - dds_threads():
            teardowns.append(name)

    monkeypatch.setattr(Node, "destroy_node", watched)
    running = start_stack(ros_context)
    monkeypatch.undo()
    running.close()
    assert teardowns == []


def test_ctrl_c_while_the_threads_start_stops_the_stack_cleanly(ros_context, no_gc, monkeypatch):
    """The 50-`sim` soak met it: Ctrl-C just after the physics thread began to publish, while the other
    threads were starting, left spin() without close() (exit 130 "interrupted while starting" instead
    of 0; once a SIGABRT from rclpy's EventsExecutor, freed with its callbacks still registered)."""
    before = dds_threads()
    from rclpy.parameter import Parameter

    running = stack_module.SimStack(ros_context, {"world": [Parameter("realtime_factor", value=0.0)]})
    start = running.loop.start

    def start_then_ctrl_c():
        start()
        raise KeyboardInterrupt

    monkeypatch.setattr(running.loop, "start", start_then_ctrl_c)
    try:
        running.spin()  # returns, as after any Ctrl-C
    except KeyboardInterrupt:
        running.close()
        pytest.fail("Ctrl-C while the threads started escaped spin() and left the stack running")
    assert not running.loop.running
    assert dds_threads() - before == set()  # closed: the nodes and their participant are gone


HUNG_TEST = """
import ctypes, ctypes.util, signal, threading, time

def test_hangs_in_c_holding_the_gil():
    threading.Thread(target=time.sleep, args=(600,), name="bystander", daemon=True).start()
    # A C call that keeps the GIL and never returns to Python, as the DDS teardown did: libc's sleep
    # through ctypes.PyDLL (which keeps the GIL), with SIGALRM kept off this thread so it is not cut short.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    ctypes.PyDLL(ctypes.util.find_library("c")).sleep(600)
"""


SEGFAULT_TEST = """
import faulthandler

def test_segfaults():
    faulthandler._sigsegv()
"""


def start_pytest(tmp_path, *options: str, test: str = HUNG_TEST) -> subprocess.Popen:
    """A pytest run, in a child process in its own folder, of the one test file `test` (timeout: 1 s)."""
    (tmp_path / "test_hung.py").write_text(test)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-o", "timeout=1",
                             *options, "test_hung.py"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen, timeout: float) -> subprocess.CompletedProcess:
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def run_hung_test(tmp_path, *options: str, timeout: float) -> subprocess.CompletedProcess:
    """A pytest run, in a child process, of a test that hangs in C holding the GIL (timeout: 1 s)."""
    return finish(start_pytest(tmp_path, *options), timeout)


def test_a_test_hung_in_c_holding_the_gil_fails_fast_with_every_threads_stack(tmp_path):
    """The watchdog ends the run 1 s past the test's 1 s timeout, with the stacks of both threads."""
    start = time.monotonic()
    result = run_hung_test(tmp_path, "-p", "hang_watchdog", "-o", "hang_watchdog_grace=1", timeout=120)
    took = time.monotonic() - start
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert took < 60, output  # 2 s of watchdog and pytest's start-up; 600 s without it
    assert "test_hung.py::test_hangs_in_c_holding_the_gil" in result.stdout  # pytest -v named the test
    dump = result.stderr[result.stderr.index("Timeout (0:00:02)!"):]
    assert dump.count("\nThread 0x") + dump.count("\nCurrent thread 0x") >= 2, dump  # the hung one, the bystander
    assert 'test_hung.py", line 9 in test_hangs_in_c_holding_the_gil' in dump  # where it hangs
    assert "in _bootstrap" in dump  # the bystander thread's frames


def test_the_stacks_of_a_hung_or_crashed_pytest_worker_come_again_in_the_runs_summary(tmp_path):
    """Under pytest-xdist (make test) a worker's stderr lands mid-log; CI shows the log's end. Stop 41's CI
    said only "worker 'gw0' crashed". Now the watchdog's dump of a hang and faulthandler's of a segfault
    are printed again in the summary, after the crash report, naming the line."""
    xdist = ("-p", "hang_watchdog", "-o", "hang_watchdog_grace=1", "-n", "1", "--max-worker-restart=0")
    (tmp_path / "hung").mkdir()
    (tmp_path / "segfault").mkdir()
    runs = {"hung": start_pytest(tmp_path / "hung", *xdist),
            "segfault": start_pytest(tmp_path / "segfault", *xdist, test=SEGFAULT_TEST)}
    results = {name: finish(process, 120) for name, process in runs.items()}
    for name, line in [("hung", 'test_hung.py", line 9 in test_hangs_in_c_holding_the_gil'),
                       ("segfault", 'test_hung.py", line 5 in test_segfaults')]:
        output = results[name].stdout
        assert results[name].returncode == 1, output + results[name].stderr
        crashed = output.index("worker 'gw0' crashed while running")
        summary = output.index("what pytest worker gw0 dumped (faulthandler)")
        assert crashed < summary and line in output[summary:], output
    assert "Timeout (0:00:02)!" in results["hung"].stdout
    assert "Fatal Python error: Segmentation fault" in results["segfault"].stdout


@pytest.mark.slow
def test_pytest_timeouts_thread_method_cannot_end_a_hang_in_c_holding_the_gil(tmp_path):
    """Why the watchdog: pytest-timeout's thread method, past its 1 s, has not ended the run after 10 s
    (its timer thread waits for the GIL); the signal method cannot either (its handler is Python code)."""
    with pytest.raises(subprocess.TimeoutExpired):
        run_hung_test(tmp_path, "-o", "timeout_method=thread", timeout=10)


def test_the_start_watchdog_reads_its_variable(capsys):
    def bound(value=None):
        return start_watchdog.bound({} if value is None else {start_watchdog.START_WATCHDOG: value})
    assert bound() == start_watchdog.START_WATCHDOG_DEFAULT
    assert bound("2.5") == 2.5
    assert bound("0") is None
    for bad in ("soon", "-1", "nan", "-inf"):
        assert bound(bad) == start_watchdog.START_WATCHDOG_DEFAULT
        assert f"{start_watchdog.START_WATCHDOG}='{bad}' is not a number of seconds" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["9.3e9", "1e18", "1e308", "inf", str(2 ** 63)])
def test_a_start_watchdog_bound_past_what_the_platform_can_time_means_off(capsys, value):
    """faulthandler's timer raised OverflowError from 9.3e9 s on (issue 53): `sim` exited 1 at its start."""
    assert start_watchdog.arm({start_watchdog.START_WATCHDOG: value}) is None
    assert capsys.readouterr().err == ""


def test_the_longest_bound_the_platform_can_time_arms_the_watchdog():
    longest = threading.TIMEOUT_MAX - start_watchdog.GIL_GRACE
    watchdog = start_watchdog.arm({start_watchdog.START_WATCHDOG: repr(longest)})
    assert watchdog is not None and watchdog.seconds == longest
    watchdog.cancel()


def run_python(code: str, *args: str, timeout: float) -> subprocess.CompletedProcess:
    """`code` run by a child Python with this checkout on its path."""
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(HERE.parent)})


WATCHED_CHURN = """
import posixpath, sys, time
from binpick_sim.nodes.process import start_watchdog

def nested(n):
    return n if n == 0 else nested(n - 1)

with open(sys.argv[1], "w") as stream:
    for _ in range(int(sys.argv[2])):
        watchdog = start_watchdog.StartWatchdog(0.001, stream)
        end = time.monotonic() + 0.005
        while time.monotonic() < end:  # frames pushed and popped as a start's imports do
            nested(30)
            posixpath.realpath("/usr/lib/../lib")
        watchdog.cancel()
"""


def test_the_start_watchdog_writes_the_stacks_of_a_start_running_python_without_crashing_it(tmp_path):
    """CI of stop 51: faulthandler's `dump_traceback_later`, the watchdog then, crashed a `sim` (SIGSEGV)
    that was still importing at its 0.2 s bound: its C thread reads frames that the running thread moves.
    The same loop with that call crashes within its first 50 rounds here; the watchdog's dumps hold the GIL."""
    dumps = tmp_path / "dumps.txt"
    rounds = 300
    result = run_python(WATCHED_CHURN, str(dumps), str(rounds), timeout=120)
    assert result.returncode == 0, result.stderr
    written = dumps.read_text().count("every thread's stack follows")
    assert written > rounds // 2, f"{written} dumps in {rounds} rounds"  # the bound of 1 ms passed in most


HUNG_START = """
import ctypes, ctypes.util, signal, sys
from binpick_sim.nodes.process import start_watchdog

watchdog = start_watchdog.arm({start_watchdog.START_WATCHDOG: "0.2"}, sys.stderr)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
ctypes.PyDLL(ctypes.util.find_library("c")).sleep(4)  # a start held in C, keeping the GIL
watchdog.cancel()
"""


@pytest.mark.slow
def test_a_start_hung_in_c_holding_the_gil_still_gets_every_threads_stack_written(tmp_path):
    """No Python thread runs then: faulthandler's C thread writes, GIL_GRACE past the bound."""
    result = run_python(HUNG_START, timeout=60)
    assert result.returncode == 0, result.stderr
    assert start_watchdog.GIL_GRACE == 2.0
    dump = result.stderr[result.stderr.index("Timeout (0:00:02.200000)!"):]  # the bound and GIL_GRACE
    assert 'File "<string>", line 7 in <module>' in dump, dump  # where it hangs


@pytest.mark.slow
def test_a_sim_start_slower_than_its_bound_logs_every_threads_stack_and_goes_on(ros_context, tmp_path):
    from binpick_sim.nodes.clients.client import TOPICS, SimClient
    from binpick_sim.nodes.process.spawn import SimProcess

    log = tmp_path / "sim.log"
    sim = SimProcess({"realtime_factor": 0.0, "camera": False}, log=log,
                     env={**os.environ, start_watchdog.START_WATCHDOG: "0.2"})  # building the world takes longer
    client = SimClient("watcher", context=ros_context, topics={"joint_states": TOPICS["joint_states"]})
    try:
        client.watchdog = sim.check_alive
        client.wait_for_topics(["joint_states"], timeout=60)  # it still starts and serves
    finally:
        client.close()
        code = sim.stop()
    text = log.read_text()
    assert code == 0, text
    dump = text[text.index("binpick_sim: the start has taken longer than 0.2 s (BINPICK_START_WATCHDOG)"):]
    assert "Thread 0x" in dump and "(most recent call first)" in dump
    assert "stack.py" in dump and " in main" in dump  # where the start was: SimStack's construction in main()


# --- soak: run with `python -m pytest test/robustness/test_start_stop.py -m soak` ---------------------------------------

CYCLE_BOUND = 30.0  # s for one start and stop; a cycle takes about 1 s (in process) or 3-5 s (`sim`) here


def soak_only(request) -> None:
    if "soak" not in (request.config.option.markexpr or ""):
        pytest.skip("a soak of minutes: run it with -m soak")


def report(request, what: str, seconds: list[float]) -> str:
    ordered = sorted(seconds)
    text = (f"{what}: {len(seconds)} cycles, slowest {ordered[-1]:.2f} s, median {ordered[len(ordered) // 2]:.2f} s, "
            f"p99 {ordered[math.ceil(0.99 * len(ordered)) - 1]:.2f} s")
    request.node.user_properties.append((what, text))  # in a --junitxml report
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled():  # on the terminal, also without -s
        request.config.pluginmanager.get_plugin("terminalreporter").write_line(text)
    return text


@pytest.mark.soak
@pytest.mark.timeout(3600)
def test_500_in_process_stack_starts_and_stops_soak(request):
    """As the fixtures do it: a context, a stack, a client that waits for its topics, close, shut down."""
    soak_only(request)
    import rclpy
    from rclpy.context import Context

    from binpick_sim.nodes.clients.client import TOPICS, SimClient

    seconds, baseline = [], None
    for cycle in range(500):
        start = time.monotonic()
        context = Context()
        rclpy.init(context=context)
        running = start_stack(context)
        client = SimClient("soak", context=context, topics={"joint_states": TOPICS["joint_states"]})
        client.wait_for_topics(["joint_states"], timeout=CYCLE_BOUND)
        client.close()
        running.close()
        rclpy.try_shutdown(context=context)
        seconds.append(time.monotonic() - start)
        assert seconds[-1] < CYCLE_BOUND, f"cycle {cycle} took {seconds[-1]:.1f} s"
        if baseline is None:
            baseline = len(dds_threads())
        assert len(dds_threads()) == baseline, f"cycle {cycle}: DDS threads pile up"
    report(request, "in-process SimStack", seconds)


@pytest.mark.soak
@pytest.mark.timeout(3600)
def test_50_sim_process_starts_and_stops_soak(request, ros_context, tmp_path):
    """Start `sim`, wait until it steps and publishes, Ctrl-C: exit 0 each time, each cycle within the bound."""
    soak_only(request)
    from binpick_sim.nodes.clients.client import TOPICS, SimClient
    from binpick_sim.nodes.process.spawn import SimProcess

    seconds = []
    for cycle in range(50):
        start = time.monotonic()
        log = tmp_path / f"sim{cycle}.log"
        sim = SimProcess({"realtime_factor": 0.0, "camera": False}, log=log)
        # a client of its own per sim: nothing the last sim published is still queued for it
        client = SimClient("soak", context=ros_context, topics={"joint_states": TOPICS["joint_states"]})
        try:
            client.watchdog = sim.check_alive
            client.wait_for_topics(["joint_states"], timeout=CYCLE_BOUND)
            # the physics thread publishing: the start is over (Ctrl-C before it is exit 130, by design)
            client.wait_for_new("joint_states", count=3, timeout=CYCLE_BOUND)
        finally:
            client.close()
            sim.process.send_signal(signal.SIGINT)
            code = sim.process.wait(CYCLE_BOUND)
            sim.stop()
        seconds.append(time.monotonic() - start)
        assert code == 0, log.read_text()
        assert seconds[-1] < CYCLE_BOUND, f"cycle {cycle} took {seconds[-1]:.1f} s"
    report(request, "sim process", seconds)
