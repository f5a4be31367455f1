"""No function of binpick_sim/ over MAX_LINES lines without its reason written on the line above it
(`# Over 60 lines: <why>`), so a long function is a choice someone explained, not a drift: split it into
named steps instead where it can be."""
import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "binpick_sim"
MAX_LINES = 60
REASON = re.compile(r"#\s*over 60 lines:\s*\S", re.IGNORECASE)


def long_functions_without_reason(source: str) -> list[tuple[str, int, int]]:
    """(name, line, length) of every function (methods and nested ones too) longer than MAX_LINES, counted from
    its first decorator or its `def` to its last line, whose line above is not a reason comment."""
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            length = node.end_lineno - start + 1
            above = lines[start - 2].strip() if start >= 2 else ""
            if length > MAX_LINES and not REASON.match(above):
                found.append((node.name, node.lineno, length))
    return found


def test_no_function_of_the_package_is_over_60_lines_without_a_reason():
    found = [f"{path.relative_to(PACKAGE.parent)}:{line} {name} ({length} lines)"
             for path in sorted(PACKAGE.rglob("*.py"))
             for name, line, length in long_functions_without_reason(path.read_text())]
    assert not found, "split into named steps, or say why above it (# Over 60 lines: ...): " + "; ".join(found)


def test_the_count_sees_a_long_function_and_its_reason():
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_LINES))
    long = f"def f():\n{body}"
    assert long_functions_without_reason(long) == [("f", 1, MAX_LINES + 1)]
    assert long_functions_without_reason(f"class C:\n    @staticmethod\n    def g():\n    {body.replace(chr(10), chr(10) + '    ')}") != []
    assert long_functions_without_reason(f"# Over 60 lines: one table, read top to bottom\n{long}") == []
    assert long_functions_without_reason(f"def f():\n{body[:-len(body) // MAX_LINES]}") == []
