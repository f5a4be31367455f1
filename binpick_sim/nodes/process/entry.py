"""The `sim` executable's entry point. It imports nothing heavy itself, so that Ctrl-C while Python is
still loading rclpy and PyBullet ends with one line, as it does later in start-up, not a traceback."""
import os
import sys

INTERRUPTED = "binpick_sim: interrupted while starting"


def main() -> int:
    try:
        from .stack import main as serve

        return serve()
    except KeyboardInterrupt:
        stop_interrupted()
    except ImportError as exc:  # rclpy turns anything raised while its C extension loads into an ImportError
        if not interrupted(exc):
            raise
        stop_interrupted()


def stop_interrupted() -> int:  # never returns
    """One line, exit 130, at once: whatever was half built (a DDS participant, an executor that never
    spun, a PyBullet client) is left to the OS, since tearing it down can block a process being stopped."""
    print(INTERRUPTED, file=sys.stderr, flush=True)
    os._exit(130)


def interrupted(exc: BaseException) -> bool:
    """Whether a KeyboardInterrupt is in the exception's chain of causes."""
    while exc is not None:
        if isinstance(exc, KeyboardInterrupt):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


if __name__ == "__main__":
    sys.exit(main())
