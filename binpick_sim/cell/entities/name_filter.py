"""A client's name filter (simulation_interfaces' `EntityFilters.filter`), matched in linear time.

Python's `re` backtracks: `"^" + "(.*)" * 60 + "!"` searched in an 8-character name takes longer than
the universe is old, and it holds the GIL while it runs, so /clock, every service, SIGINT and the
exit-with-parent watch all stop with it. RE2 (google-re2) never backtracks: a search takes time linear
in the name whatever the pattern, and a pattern it cannot run that way (backreferences, lookaround) is
refused when compiled. The pattern's length and the memory RE2 may spend compiling it are bounded too.
"""
from __future__ import annotations

from typing import Callable

MAX_PATTERN = 1000  # characters: entity names are at most 64, a useful filter is far shorter
MAX_MEMORY = 1 << 20  # bytes RE2 may use for one pattern's automata


class FilterError(ValueError):
    """A pattern that will not be run; the message says why."""


def compile_filter(pattern: str) -> Callable[[str], bool]:
    """A predicate "the pattern is found in the name" (searched, RE2 syntax; empty matches all)."""
    if not pattern:
        return lambda name: True
    if len(pattern) > MAX_PATTERN:
        raise FilterError(f"filter of {len(pattern)} characters: at most {MAX_PATTERN}")
    try:
        import re2
    except ImportError:
        raise FilterError("name filters need google-re2 (pip install google-re2), which is not installed; "
                          "an empty filter matches every name") from None
    options = re2.Options()
    options.log_errors = False  # the refusal goes back to the client, not onto stderr
    options.max_mem = MAX_MEMORY
    try:
        regex = re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "refused"
        reason = reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
        raise FilterError(f"filter {pattern[:100]!r} is not a regular expression RE2 runs (RE2 syntax: no "
                          f"backreferences or lookaround): {reason[:200]}") from None
    return lambda name: regex.search(name) is not None
