"""Nothing of a check the learner does not see reaches one they do: checks run room by room (the
visible ones first), so a hidden check's outcome changes no visible check."""
import pytest
import yaml

from grader.judge.launchers import bubblewrap_works, launcher_for
from grader.judge.zygote import Zygote
from grader.labs import find_lab
from grader.runner import grade

SECRET = 40961
TOY = f'''def size(n):
    """Loops for ever on the hidden check's size, fails on another."""
    while n == {SECRET}:
        pass
    if n > 1000:
        raise ValueError("too large")
    return n


def after():
    return True

'''
FUNCTIONS = ["size", "after"]
PUBLIC = '''import pytest


@pytest.mark.grade(points=1, tags=["size"])
def test_size_small(student):
    """small"""
    assert student.size(3) == 3


@pytest.mark.grade(points=1, tags=["after", "size"])
def test_after(student):
    """needs size"""
    assert student.after() is True
'''
HIDDEN = f'''import pytest


@pytest.mark.grade(points=1, tags=["size"])
def test_size_hidden(student):
    """hidden size"""
    student.size({SECRET})


@pytest.mark.grade(points=1, tags=["size"])
def test_size_large(student):
    """large"""
    student.size(2000)
'''


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    folder = tmp_path_factory.mktemp("course") / "rooms"
    stub = "".join(f"def {name}(*args):\n    raise NotImplementedError\n\n\n" for name in FUNCTIONS)
    manifest = {"title": "Rooms", "handout": "handout", "student_files": {"toy.py": FUNCTIONS},
                "call_timeout": 1, "time_budget": 30}
    for name, text in {"lab.yaml": yaml.safe_dump(manifest), "stubs/toy.py": stub, "handout/toy.py": TOY,
                       "public/test_toy.py": PUBLIC, "hidden/test_toy.py": HIDDEN}.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return find_lab(folder)


@pytest.fixture(scope="module", params=["bubblewrap", "process"])
def warm(request):
    if request.param == "bubblewrap" and not bubblewrap_works():
        pytest.skip("bubblewrap is not available here")
    zygote = Zygote(launcher_for("auto" if request.param == "bubblewrap" else "process"))
    yield zygote
    zygote.close()


def test_a_hidden_check_s_outcome_changes_no_visible_check(toy, warm):
    """A hidden check that times out (its size loops for ever) and one that fails would skip or
    block the visible checks after them, telling the learner what the hidden inputs do: visible
    checks run first. The report keeps the lab's order, function by function."""
    warm.reset()
    results = grade(toy, device="cpu", zygote=warm, select=["size", "after"])
    status = {c.test.split("::")[-1]: c.status for c in results.checks}
    assert list(status) == ["test_size_small", "test_size_hidden", "test_size_large", "test_after"]
    assert status == {"test_size_small": "passed", "test_size_hidden": "failed", "test_size_large": "skipped",
                      "test_after": "passed"}
    visible = [c for c in results.checks if c.visibility == "visible"]
    assert not any("timed out" in c.message or "does not pass" in c.message for c in visible)

