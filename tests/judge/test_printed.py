"""What student code prints reaches the check whose call printed it, and nothing of a hidden check
reaches a visible one: not its output, not what its calls left in the child's memory, not output
a call leaves behind after its answer. On a toy lab built in a folder, graded for real, and on
lab 2 with a submission that prints its arguments (tests/submissions/print_arguments)."""
import json
import os
import shutil
from pathlib import Path

import pytest
import yaml
from test_batch import grade_py

from grader.core.request import Device, Request
from grader.core.results import HIDDEN_INPUTS
from grader.core.runner import grade
from grader.judge.sandbox import Sandbox
from grader.readers.manifest import find_lab

PRINTING = Path(__file__).resolve().parents[1] / "submissions" / "print_arguments"
TELLER = Path(__file__).resolve().parents[1] / "submissions" / "seed_teller"

TOY = '''import threading
import time

SEEN = []


def show(x):
    SEEN.append(x)
    print("show", x, "seen", SEEN)
    return list(SEEN)


def late():
    def later():
        time.sleep(0.1)
        print("LATE: printed after its answer")
    threading.Thread(target=later).start()
    return True
'''
PUBLIC = '''import time

import pytest


@pytest.mark.grade(points=1, tags=["show"])
def test_show(student):
    """shows"""
    student.show(1)


@pytest.fixture(scope="module")
def runs(student):
    return student.submit("show", 7), student.submit("show", 8, hidden=True)


@pytest.mark.grade(points=1, tags=["show"])
def test_apart(student, runs):
    """shows apart"""
    assert [run.result(30) for run in runs] == [[7], [8]]


@pytest.mark.grade(points=1, tags=["late"])
def test_late(student):
    """late"""
    student.late()
    time.sleep(0.4)             # its thread prints between this check's call and the next


@pytest.mark.grade(points=1, tags=["late", "show"])
def test_after(student):
    """after"""
    student.show(2)
    raise AssertionError("seen " + str(student.show(3)))
'''
HIDDEN = '''import pytest


@pytest.mark.grade(points=1, tags=["show"])
def test_show_hidden(student):
    """shows hidden"""
    student.show(4096)
'''


@pytest.fixture
def toy(tmp_path):
    folder = tmp_path / "toy"
    stub = "def show(x):\n    raise NotImplementedError\n\n\ndef late():\n    raise NotImplementedError\n"
    manifest = {"title": "Toy", "handout": "handout", "student_files": {"toy.py": ["show", "late"]}}
    for name, text in {"lab.yaml": yaml.safe_dump(manifest), "stubs/toy.py": stub, "handout/toy.py": TOY,
                       "public/test_toy.py": PUBLIC, "hidden/test_toy.py": HIDDEN}.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return find_lab(folder)


def test_each_check_shows_what_its_own_calls_printed(toy, zygote):
    zygote.reset()
    results = grade(Request(toy, device=Device.CPU), zygote)
    output = {c.test.split("::")[-1]: c.output.strip() for c in results.checks}
    assert list(output) == ["test_show", "test_apart", "test_show_hidden", "test_late", "test_after"]
    assert output["test_show"] == "show 1 seen [1]"
    assert output["test_apart"] == "show 7 seen [7]"         # its own run; the hidden one's stays hidden
    assert output["test_show_hidden"] == "show 4096 seen [4096]"
    assert output["test_late"] == ""                        # its thread printed after the answer: nobody's
    assert output["test_after"] == "show 2 seen [2]\nshow 3 seen [2, 3]"      # a child born after the hidden room
    visible = [c for c in results.checks if c.visibility == "visible"]
    assert not any("4096" in c.output + c.message or "show 8" in c.output or "LATE" in c.output for c in visible)
    after = next(c for c in results.checks if c.test.endswith("test_after"))
    assert after.status == "failed" and "seen [2, 3]" in after.message     # a child that never saw 4096


CLOCK = '''import os
import time


def stamp():
    print("pid", os.getpid(), "at", round(time.monotonic(), 3))


def work(seconds):
    time.sleep(seconds)         # as long as a hidden input says
    return seconds
'''
CLOCK_CHECKS = '''import time

import pytest


@pytest.mark.grade(points=1, tags=["stamp"])
def test_before(student):
    """before"""
    student.stamp()


@pytest.fixture(scope="module")
def hidden_work(student):
    return student.submit("work", 1.5, hidden=True)


@pytest.mark.grade(points=1, tags=["stamp"])
def test_meanwhile(student, hidden_work):
    """meanwhile"""
    time.sleep(0.3)             # time for the hidden call to start, were it started now
    student.stamp()


@pytest.mark.grade(points=1, tags=["work"])
def test_asks(hidden_work):
    """asks"""
    assert hidden_work.result(30) == 1.5
'''


def test_a_visible_check_cannot_time_a_hidden_call(tmp_path, zygote):
    """A call on hidden inputs (lab 2's experiments at the course's seed) submitted by a visible
    check runs only once a check asks for its value (from then on every visible check's words are
    hidden) or the hidden room comes: before, the visible checks' calls waited for it, and their
    output could tell how long it ran, from a clock or from a child replaced."""
    folder = tmp_path / "clock"
    stub = "def stamp():\n    raise NotImplementedError\n\n\ndef work(seconds):\n    raise NotImplementedError\n"
    manifest = {"title": "Clock", "handout": "handout", "student_files": {"clock.py": ["stamp", "work"]}}
    for name, text in {"lab.yaml": yaml.safe_dump(manifest), "stubs/clock.py": stub, "handout/clock.py": CLOCK,
                       "public/test_clock.py": CLOCK_CHECKS}.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    zygote.reset()
    results = grade(Request(find_lab(folder), device=Device.CPU), zygote)
    checks = {c.test.split("::")[-1]: c for c in results.checks}
    assert [c.status for c in checks.values()] == ["passed"] * 3
    (pid, before), (same, meanwhile) = (checks[name].output.split()[1::2] for name in ("test_before", "test_meanwhile"))
    assert same == pid and float(meanwhile) - float(before) < 1.2, (before, meanwhile)
    assert checks["test_asks"].inputs_hidden and not checks["test_meanwhile"].inputs_hidden


SHARED = '''import ctypes
import os
import socket
import time

SECRET = "seed-1234"


def probe(room, name):
    """As the hidden room, keep a secret for 3 s where another process could find it: a file every
    user may read, an abstract unix socket, its process's name. As another, look for 2 s."""
    if room == "hidden":
        with open(f"/tmp/{name}", "w") as file:
            file.write(SECRET)
        os.chmod(f"/tmp/{name}", 0o644)
        ctypes.CDLL(None).prctl(15, SECRET.encode(), 0, 0, 0)      # PR_SET_NAME: in /proc/PID/comm
        server = socket.socket(socket.AF_UNIX)
        server.bind("\\0" + name)
        server.listen()
        server.settimeout(3)
        try:
            server.accept()[0].sendall(SECRET.encode())
            return "told"
        except OSError:
            return "nobody asked"
    found, end = [], time.time() + 2
    while not found and time.time() < end:
        for reach in (lambda: open(f"/tmp/{name}").read(), lambda: _named(), lambda: _asked(name)):
            try:
                found.append(reach())
            except OSError:
                pass
        found = [what for what in found if what]
    return found


def _named():
    return [pid for pid in os.listdir("/proc") if pid.isdigit() and _comm(pid) == SECRET]


def _comm(pid):
    try:
        return open(f"/proc/{pid}/comm").read().strip()
    except OSError:
        return ""


def _asked(name):
    with socket.socket(socket.AF_UNIX) as client:
        client.connect("\\0" + name)
        return client.recv(20).decode()
'''


def shared_state_lab(folder):
    (folder / "handout").mkdir(parents=True)
    (folder / "handout" / "probe.py").write_text("def probe(room, name):\n    raise NotImplementedError\n")
    (folder / "lab.yaml").write_text(yaml.safe_dump({"title": "Rooms", "handout": "handout", "call_timeout": 10,
                                                     "student_files": {"probe.py": ["probe"]}}))
    return find_lab(folder)


@pytest.mark.slow
def test_a_hidden_call_and_a_visible_one_never_live_at_once(tmp_path, zygote):
    """A hidden call (the course's seed, as lab 2's experiments get it) runs apart while visible
    checks go on: the visible room's calls wait for it, and its child and all it left are gone
    before they run, so no socket, process name or file of it reaches their output."""
    zygote.reset()
    box = Sandbox(shared_state_lab(tmp_path), {"probe.py": SHARED.encode()}, zygote)
    name = f"grader-secret-{os.getpid()}"
    try:
        box.serve("hidden check", "hidden")     # where a hidden call starts at once
        hidden = box.submit("probe", ["hidden", name], hidden=True)
        box.serve("visible check", "visible")
        assert box.call("probe", ["visible", name]) == []
        assert hidden.result(30) == "nobody asked"
    finally:
        box.close()


HIDDEN_VALUES = ["seq_len=4096", "seq_len=50 ", "head_dim=128", "base=500.0", "base=1000000.0", "2048",
                 "seed=5"]      # what lab 2's hidden checks ask, and its experiments' hidden seed


@pytest.mark.slow
def test_a_learner_sees_nothing_of_the_hidden_checks(tmp_path):
    """A submission that prints its arguments at every call, graded as the course grades: its
    feedback page and results.json show no hidden size, base or seed under a visible check, and
    each visible check shows what its own calls printed."""
    shutil.copytree(PRINTING, tmp_path / "class" / "printer")
    out = tmp_path / "out"
    run = grade_py("batch", "lab2", tmp_path / "class", "--out", out, "--workers", "1")
    assert run.returncode == 0, run.stdout + run.stderr
    folder = out / "students" / "printer"
    tests = json.loads((folder / "results.json").read_text())["tests"]
    shown = [t for t in tests if t["visibility"] == "visible"]
    pages = [(folder / name).read_text() for name in ("feedback.html", "feedback.md")]
    for text in [t["output"] for t in shown] + pages:
        assert not [value for value in HIDDEN_VALUES if value in text], text
    values = next(t["output"] for t in shown if t["name"].startswith("cos and sin hold the angles"))
    assert values.splitlines()[1:] == ["ARGS rope_frequencies head_dim=8 seq_len=6 base=10000.0 device=cpu"]
    assert all("ARGS rope_frequencies head_dim=8 seq_len=6" in page for page in pages)
    long = next(t for t in tests if t["name"].startswith("4096 positions"))
    assert long["visibility"] == "hidden" and "seq_len=4096" in long["output"]


@pytest.mark.slow
def test_the_course_seed_is_not_told_by_what_the_experiments_return(grade_lab2):
    """Experiments that write the seed they were called with into the runs they return: the
    visible checks that quote those runs keep their words for the instructor, and the learner's
    results.json says only that they stay hidden."""
    results = grade_lab2(TELLER, ["measure_loss_gap", "extrapolation_runs"])
    assert results.score == 0 and any("seed=5" in c.message for c in results.checks)   # the instructor's
    assert all(c.inputs_hidden for c in results.checks if c.visibility == "visible")
    for test in results.gradescope().tests:
        assert "seed=5" not in test.output and test.output == HIDDEN_INPUTS
