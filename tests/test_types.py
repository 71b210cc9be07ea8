"""The engine's annotations are for the type checker (mypy, in `make test`): a type imported for it
alone (under TYPE_CHECKING) must never be evaluated when a module loads, in a signature or a
dataclass field, or that module fails to import wherever it is used."""
import importlib
import pkgutil

import grader


def test_every_module_of_the_grader_imports():
    names = [m.name for m in pkgutil.walk_packages(grader.__path__, "grader.") if ".labs." not in m.name]
    assert "grader.instructor.page.classdata" in names and "grader.judge.channel" in names
    failed = {}
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as error:      # noqa: BLE001  the sentence below names it
            failed[name] = f"{type(error).__name__}: {error}"
    assert failed == {}
