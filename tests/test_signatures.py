"""No function of the engine takes more than 6 parameters (self and cls not counted): what many
arguments say together is a record (a frozen request the command builds once), not a long list
each caller must keep in order. The labs (grader/labs/) are the authors' and not walked."""
import ast
from pathlib import Path

import grader

MOST = 6


def too_long(root: Path) -> list[str]:
    """'file:line name (n)' of each function under `root` (not its labs/) with more than MOST parameters."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).parts[0] == "labs":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
                count = len([name for name in names if name not in ("self", "cls")])
                if count > MOST:
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} ({count})")
    return found


def test_no_engine_function_takes_more_than_six_parameters():
    assert too_long(Path(grader.__file__).parent) == []


def test_the_walk_counts_every_kind_of_parameter_and_skips_the_labs(tmp_path):
    root = tmp_path / "grader"
    (root / "labs").mkdir(parents=True)
    (root / "engine.py").write_text("def seven(a, /, b, c, *, d, e, f, g): ...\n"
                                    "class K:\n    def six(self, a, b, c, d, e, f): ...\n")
    (root / "labs" / "lab.py").write_text("def seven(a, b, c, d, e, f, g): ...\n")
    assert too_long(root) == ["grader/engine.py:1 seven (7)"]
