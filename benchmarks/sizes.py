"""Lines of each module and of its longest function, against the style's limits (350 and 50).

    python benchmarks/sizes.py [FILE_OR_FOLDER ...]      (default: grade.py and grader/, labs left out)
"""
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULE_LIMIT, FUNCTION_LIMIT = 350, 50


def functions(tree):
    """(qualified name, lines) of every function of a module, methods and nested ones too."""
    found = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    found.append((name, child.end_lineno - child.lineno + 1))
                visit(child, name + ".")
    visit(tree, "")
    return found


def files(arguments):
    paths = [Path(a) for a in arguments] or [ROOT / "grade.py", ROOT / "grader"]
    for path in paths:
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            if "labs" not in file.relative_to(path if path.is_dir() else file.parent).parts:
                yield file


def main(arguments):
    print(f"{'lines':>5}  {'longest function':<44} module")
    for file in files(arguments):
        text = file.read_text()
        longest = max(functions(ast.parse(text)), key=lambda f: f[1], default=("-", 0))
        lines = len(text.splitlines())
        flag = " !" if lines > MODULE_LIMIT or longest[1] > FUNCTION_LIMIT else ""
        name = file.relative_to(ROOT) if file.is_relative_to(ROOT) else file
        print(f"{lines:>5}  {longest[0][:38]:<38} {longest[1]:>4}  {name}{flag}")


if __name__ == "__main__":
    main(sys.argv[1:])
