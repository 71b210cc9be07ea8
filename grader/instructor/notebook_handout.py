"""The learner's notebook of a lab (`release` writes it as LAB.ipynb): written as py:percent text,
which can be read and reviewed, then made a notebook by jupytext.

In order: the tasks, one install cell (safe to run twice: it fetches the handout zip where the
notebook is not already in it, installs what the grader needs but never torch when torch is
there, and starts the lab), the lesson's listings as text, then for each student file its task,
its imports, and each function's stub in a cell of its own with a check cell after it; last the
whole lab, the experiments, the lesson test and the check of the saved file.
"""
import ast
import json
import re

INSTALL = '''# Run this cell first; running it again changes nothing. It installs this lab's grader and
# what it needs, never torch when there is one (Colab's stays), and starts the lab.
HANDOUT = %(url)s   # your course's link to %(zip)s
import importlib.util, pathlib, subprocess, sys, urllib.request, zipfile
here = next((p for p in (pathlib.Path.cwd(), pathlib.Path("%(lab)s-handout"))
             if (p / "grader" / "labs" / "%(lab)s" / "lab.yaml").is_file()), None)
if here is None:                                  # Colab: the notebook is not in its handout
    if not HANDOUT:
        raise SystemExit("set HANDOUT to your course's link to %(zip)s, then run this cell again")
    here = pathlib.Path("%(lab)s-handout")
    urllib.request.urlretrieve(HANDOUT, "%(zip)s")
    zipfile.ZipFile("%(zip)s").extractall(here)
cpu = [] if importlib.util.find_spec("torch") else ["-r", str(here / "requirements-cpu.txt")]
subprocess.run([sys.executable, "-m", "pip", "install", "-q", *cpu, "-r",
                str(here / "requirements-notebook.txt")], check=True)
if str(here.resolve()) not in sys.path:
    sys.path.insert(0, str(here.resolve()))
from grader import notebook
notebook.start("%(lab)s")'''

INTRO = """# %(title)s

Fill in each function in its cell, run the cell, then run the check below it: the check grades
the function as this notebook's kernel last ran it, with the lab's public checks, in a separate
process (a crash or an endless loop there never stops this notebook). Only the functions, classes,
imports and constants of your cells are graded: code at the top level of a cell (a training loop,
a plot, a print) is yours to run and is never run by grading, nor does cell order or leftover state
count.

This notebook holds the public checks only: the course's grading of the saved `%(lab)s.ipynb`
adds hidden checks of the same contracts, on other sizes and seeds."""


def percent_text(lab, url=""):
    """The learner's notebook of `lab` as py:percent text; `url` is written as a string literal
    (JSON's escapes are Python's), whatever quote or backslash it holds."""
    zip_name = f"{lab.name}-handout.zip"
    cells = [_markdown(INTRO % {"title": lab.manifest.title, "lab": lab.name}),
             _code(INSTALL % {"url": json.dumps(url), "zip": zip_name, "lab": lab.name})]
    listings = [path.read_text(encoding="utf-8") for path in lab.given_code if path.is_file()]
    if listings:
        cells.append(_markdown("## The lesson's code\n\nAs the lesson shows it, for reference (text, not a cell to "
                               "run):\n\n" + "\n\n".join(f"```python\n{text.strip()}\n```" for text in listings)))
    tasks = _tasks(lab)
    for file, functions in lab.manifest.student_files.items():
        source = (lab.stubs / file).read_text(encoding="utf-8")
        tree = ast.parse(source)
        said = [t for t in tasks if file in t or any(f in t for f in functions)]
        cells.append(_markdown(f"## {file}: {', '.join(functions)}" + "".join(f"\n\n{t}" for t in said)))
        imports = [ast.get_source_segment(source, s) for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]
        if imports:
            cells.append(_code("\n".join(imports)))
        for statement in tree.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name in functions:
                cells.append(_code(ast.get_source_segment(source, statement)))
                cells.append(_code(f'notebook.check("{lab.name}", "{statement.name}")'))
    cells += [_markdown("## The whole lab\n\nEvery public check, and what the report ticks of *you are done when*."),
              _code(f'notebook.check("{lab.name}")')]
    if lab.manifest.experiments:
        cells += [_markdown("## Your experiments\n\nYour functions as this kernel has them, run by the lab's "
                            "experiment script in a process of its own: progress here, plots in `plots/`."),
                  _code(f'notebook.check("{lab.name}", experiments=True)')]
    if lab.quiz:
        cells += [_markdown("## The lesson test\n\nAnswer in the box under the cell; the lab and the test passed "
                            "complete the lesson."), _code(f'notebook.quiz("{lab.name}")')]
    cells += [_markdown("## Before you hand it in\n\nSave the notebook (Ctrl-S), then grade the file itself, as "
                        "the course reads it:"), _code(f'notebook.verify("{lab.name}.ipynb")')]
    return "\n\n".join(cells) + "\n"


def notebook(lab, url=""):
    """The learner's notebook of `lab` (an nbformat NotebookNode): its py:percent text read by
    jupytext, with cell ids and metadata that depend on the lab alone."""
    import jupytext

    made = jupytext.reads(percent_text(lab, url), fmt="py:percent")
    made.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                     "language_info": {"name": "python"}, "grader": {"lab": lab.name}}
    for number, cell in enumerate(made.cells):
        cell.id = f"{lab.name}-{number}"
        cell.metadata = {}
    return made


def _markdown(text):
    return "# %% [markdown]\n" + "\n".join(f"# {line}".rstrip() for line in text.split("\n"))


def _code(text):
    return "# %%\n" + text.strip("\n")


def _tasks(lab):
    """The numbered items of the handout README's "tasks" section, as markdown."""
    readme = lab.handout / "README.md"
    text = readme.read_text(encoding="utf-8") if readme.is_file() else ""
    section = re.search(r"^##[^\n]*tasks?[^\n]*\n(.*?)(?=^## |\Z)", text, re.S | re.M | re.I)
    items = re.split(r"\n(?=\d+\. )", section.group(1).strip()) if section else []
    return [" ".join(line.strip() for line in item.split("\n")) for item in items if re.match(r"\d+\. ", item)]


def requirements(dependencies):
    """requirements-notebook.txt's lines: the grader's packages less torch, which a notebook keeps
    as it is (Colab's CUDA build), or takes from requirements-cpu.txt where there is none."""
    return [name for name in dependencies if not re.match(r"torch\b", name)]

