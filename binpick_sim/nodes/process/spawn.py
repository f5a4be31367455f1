"""Run the `sim` executable as a child process, the way `ros2 run` or a launch file would."""
from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

STOP_TIMEOUT = 5.0
LOG_LINES = 20  # lines of the log a death report quotes


class SimProcessDied(RuntimeError):
    """The `sim` process a caller depends on is gone; the message says how it ended and what it logged."""


def ros_args(parameters: dict[str, object], namespace: str = "") -> list[str]:
    """`--ros-args -p name:=value ...`; a `node:name` key sets a parameter of that node only."""
    args = ["--ros-args"] + (["-r", f"__ns:={namespace}"] if namespace else [])
    for name, value in parameters.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        args += ["-p", f"{name}:={text}"]
    return args


class SimProcess:
    """The simulation in its own process; `stop()` sends Ctrl-C and waits, as a user would."""

    def __init__(self, parameters: dict[str, object] | None = None, log: Path | None = None, env=None,
                 namespace: str = "", pass_fds=()):
        """`pass_fds`: descriptors the process inherits (a gym env's step channel)."""
        command = [sys.executable, "-m", "binpick_sim.nodes.process.entry", *ros_args(parameters or {}, namespace)]
        self.log = log
        self.log_file = open(log, "w") if log else subprocess.DEVNULL
        self.process = subprocess.Popen(command, stdout=self.log_file, stderr=subprocess.STDOUT, env=env,
                                        pass_fds=pass_fds)

    def running(self) -> bool:
        return self.process.poll() is None

    def check_alive(self) -> None:
        """Raise SimProcessDied if the process has ended (a non-blocking look; cheap enough for every
        pass of a wait loop)."""
        if self.process.poll() is not None:
            raise SimProcessDied(self.death_report())

    def death_report(self) -> str:
        code = self.process.returncode
        how = f"exit status {code}"
        if code is not None and code < 0:
            try:
                how += f" (killed by {signal.Signals(-code).name})"
            except ValueError:
                pass
        text = f"the sim process (pid {self.process.pid}) has died: {how}"
        if self.log is None:
            return text + "; it was started without a log"
        try:
            lines = Path(self.log).read_text(errors="replace").splitlines()[-LOG_LINES:]
        except OSError as exc:
            return text + f"; its log {self.log} cannot be read: {exc}"
        return text + f"; last lines of its log {self.log}:\n" + ("\n".join(lines) if lines else "(empty)")

    def stop(self, sig: int = signal.SIGINT) -> int:
        if self.running():
            self.process.send_signal(sig)
            try:
                self.process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.log_file is not subprocess.DEVNULL:
            self.log_file.close()
        return self.process.returncode

    def __enter__(self) -> "SimProcess":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
