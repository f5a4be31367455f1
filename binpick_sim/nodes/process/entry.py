"""The `sim` executable's entry point. It imports nothing heavy itself, so that Ctrl-C while Python is
still loading rclpy and PyBullet ends with one line, as it does later in start-up, not a traceback."""
import io
import signal
import sys

from .interrupt import stop_interrupted

_SIGNALLED: list[int] = []  # SIGINTs seen while starting (a C extension may print and swallow the exception)


def _on_sigint(signum, frame) -> None:
    _SIGNALLED.append(signum)
    raise KeyboardInterrupt


def main() -> int:
    signal.signal(signal.SIGINT, _on_sigint)  # as Python's own handler, and remembered, while importing
    # What the imports print is held until they are done: an interrupt inside a C extension's import (numpy's
    # import_array) is printed there as a traceback, then turned into an ImportError without its cause.
    held, sys.stderr = sys.stderr, io.StringIO()
    try:
        from .stack import main as serve
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt) or (isinstance(exc, ImportError) and interrupted(exc)):
            sys.stderr = held
            stop_interrupted()  # the held text (a traceback of the interrupt) is dropped
        raise
    finally:
        # Released: what the imports printed, in order, where it belongs. After a Ctrl-C it is dropped: it
        # holds the interrupt's traceback, which Python prints as "Exception ignored" where it cannot raise
        # (e.g. in importlib's module-lock callback) before carrying on.
        if sys.stderr is not held:
            printed, sys.stderr = sys.stderr.getvalue(), held
            if not _SIGNALLED:
                sys.stderr.write(printed)
    if _SIGNALLED:  # an import caught the KeyboardInterrupt and carried on (C code may clear any error)
        stop_interrupted()
    signal.signal(signal.SIGINT, signal.default_int_handler)  # the stack sets up its own from here on
    try:
        return serve()
    except KeyboardInterrupt:
        stop_interrupted()
    except ImportError as exc:  # rclpy turns anything raised while its C extension loads into an ImportError
        if not interrupted(exc):
            raise
        stop_interrupted()


def interrupted(exc: BaseException) -> bool:
    """Whether a KeyboardInterrupt is in the exception's chain of causes, or a SIGINT came while starting."""
    if _SIGNALLED:
        return True
    while exc is not None:
        if isinstance(exc, KeyboardInterrupt):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


if __name__ == "__main__":
    sys.exit(main())
