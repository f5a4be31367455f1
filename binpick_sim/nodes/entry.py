"""The `sim` executable's entry point. It imports nothing heavy itself, so that Ctrl-C while Python is
still loading rclpy and PyBullet ends with one line, as it does later in start-up, not a traceback."""
import sys

INTERRUPTED = "binpick_sim: interrupted while starting"


def main() -> int:
    try:
        from .stack import main as serve

        return serve()
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
