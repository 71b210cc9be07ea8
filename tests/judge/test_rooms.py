"""Nothing of a check the learner does not see reaches one they do: checks run room by room (the
visible ones first), so a hidden check's outcome changes no visible check; and children alive at
the same time (a hidden-input call run apart beside the visible checks' child) cannot reach each
other through a socket."""
import pytest
import yaml

from grader.core.request import Device, Observers, Request, Selection
from grader.core.results import HIDDEN_INPUTS
from grader.core.runner import grade
from grader.instructor.page import classdata, feedback
from grader.instructor.records import BatchRow
from grader.judge.launchers import bubblewrap_works, launcher_for
from grader.judge.sandbox import Sandbox
from grader.judge.zygote import Zygote
from grader.readers.manifest import find_lab

SECRET = 40961
TOY = f'''import socket
import threading
import time


def size(n):
    """Loops for ever on the hidden check's size, fails on another."""
    while n == {SECRET}:
        pass
    if n > 1000:
        raise ValueError("too large")
    return n


def after():
    return True


def echo(n):
    print("echo", n)
    return n


class GraderFault(Exception):
    """A child's claim that the wire broke (believed once: the grading is tried again)."""


def claim(n):
    raise GraderFault("the wire broke, honest")


def early():
    raise GraderFault("the wire broke, honest")


def forks(n):
    """Start `n` processes that end at once: the last one's pid."""
    import os

    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    return pid


def pid_now():
    import os

    return os.getpid()


def tell(secret, seconds):
    """Serve `secret` on an abstract unix socket and on loopback (where it may have sockets of
    that kind), for `seconds`; which it could serve on."""
    served = []
    for address, kind in (("\\0rooms-tell", socket.AF_UNIX), (("127.0.0.1", 47613), socket.AF_INET)):
        try:
            listener = socket.socket(kind)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(address)
            listener.listen()
        except OSError:
            continue
        listener.settimeout(seconds)
        threading.Thread(target=lambda s=listener: s.accept()[0].sendall(str(secret).encode()), daemon=True).start()
        served.append(kind.name)
    time.sleep(seconds)
    return served


def overhear(seconds):
    """What a connection to tell()'s sockets hears within `seconds`."""
    heard, deadline = [], time.monotonic() + seconds
    for address, kind in (("\\0rooms-tell", socket.AF_UNIX), (("127.0.0.1", 47613), socket.AF_INET)):
        while time.monotonic() < deadline:
            try:
                with socket.socket(kind) as connection:
                    connection.settimeout(1)
                    connection.connect(address)
                    heard.append(connection.recv(100).decode())
                    break
            except OSError:
                time.sleep(0.05)
    print("heard", heard)
    return heard
'''
FUNCTIONS = ["size", "after", "tell", "overhear", "echo", "claim", "early", "forks", "pid_now"]
PUBLIC = f'''import pytest


@pytest.mark.grade(points=1, tags=["size"])
def test_size_small(student):
    """small"""
    assert student.size(3) == 3


@pytest.mark.grade(points=1, tags=["after", "size"])
def test_after(student):
    """needs size"""
    assert student.after() is True


@pytest.fixture(scope="module")
def echoed(student):
    return student.submit("echo", {SECRET}, hidden=True).result(30)


@pytest.mark.grade(points=1, tags=["pid_now"])
def test_pid_now(student):
    """a pid"""
    assert student.pid_now() > 0


@pytest.mark.grade(points=1, tags=["early"])
def test_early(student):
    """claims a fault before any hidden check"""
    student.early()


@pytest.mark.grade(points=1, tags=["echo"])
def test_echo_plain(student):
    """echoes its own input"""
    assert student.echo(5) == 4, "echo(5) gave " + str(student.echo(5))


@pytest.mark.grade(points=1, tags=["echo"])
def test_echo_hidden(student, echoed):
    """echoes a hidden input"""
    assert echoed == 0, f"echo gave {{echoed}}"


@pytest.mark.grade(points=1, tags=["echo"])
def test_echo_kept(student, echoed):
    """what it echoed, kept in a fixture"""
    assert echoed == 0, f"echo gave {{echoed}} again"
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


@pytest.mark.grade(points=1, tags=["forks"])
def test_forks_then_claims(student):
    """counts a hidden input out in pids, then claims a fault"""
    student.forks(20)
    student.claim({SECRET})


@pytest.mark.grade(points=1, tags=["claim"])
def test_claim(student):
    """claims a fault on a hidden input"""
    student.claim({SECRET})
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
    results = grade(Request(toy, device=Device.CPU, selection=Selection(("size", "after"))), warm)
    status = {c.test.split("::")[-1]: c.status for c in results.checks}
    assert list(status) == ["test_size_small", "test_size_hidden", "test_size_large", "test_after"]
    assert status == {"test_size_small": "passed", "test_size_hidden": "failed", "test_size_large": "skipped",
                      "test_after": "passed"}
    visible = [c for c in results.checks if c.visibility == "visible"]
    assert not any("timed out" in c.message or "does not pass" in c.message for c in visible)


def test_a_visible_check_fed_hidden_inputs_keeps_its_words_from_the_learner(toy, warm):
    """A visible check whose value came from a call on hidden inputs (and every check after it,
    which may keep that value in a fixture) quotes it in its message: the learner's results.json
    and feedback say only that its details stay hidden; the instructor's record keeps them."""
    warm.reset()
    results = grade(Request(toy, device=Device.CPU, selection=Selection(("echo",))), warm)
    checks = {c.test.split("::")[-1]: c for c in results.checks}
    assert [name for name, c in checks.items() if c.inputs_hidden] == ["test_echo_hidden", "test_echo_kept"]
    assert "echo(5) gave 5" in checks["test_echo_plain"].message        # before it: all of its words
    assert all(str(SECRET) in checks[name].message for name in ("test_echo_hidden", "test_echo_kept"))
    learner = results.gradescope()
    assert [t.status for t in learner.tests] == ["failed"] * 3
    assert not any(str(SECRET) in t.output for t in learner.tests)
    assert all(t.output == HIDDEN_INPUTS for t in learner.tests[1:])
    row = BatchRow(student="ada", status="graded", score=results.score, max_score=results.max_score)
    student = classdata.Student(name="ada", row=row, results=results)
    for page in (feedback.html(student, "Rooms", ["echo"]), feedback.markdown(student, "Rooms", ["echo"])):
        assert str(SECRET) not in page and "echo(5) gave 5" in page


def test_a_second_try_after_the_hidden_checks_keeps_its_visible_words_from_the_learner(toy, warm):
    """A first try that the grader could not finish (a child may claim a fault: believed once) after
    its hidden checks ran: the second try's visible checks come after those, on the same machine,
    and could tell what they saw through anything the kernel keeps (a count of processes started,
    a time). Their details stay hidden from the learner, as after a hidden value reached them."""
    warm.reset()
    results = grade(Request(toy, device=Device.CPU, selection=Selection(("echo", "claim"))), warm)
    checks = {c.test.split("::")[-1]: c for c in results.checks}
    assert results.attempts == 2 and checks["test_claim"].failure == "bad_answer"
    assert checks["test_echo_plain"].inputs_hidden and "echo(5) gave 5" in checks["test_echo_plain"].message
    assert all(t.output == HIDDEN_INPUTS for t in results.gradescope().tests if t.visibility != "hidden")


def test_a_second_try_after_the_hidden_checks_is_forked_by_a_fresh_zygote(toy, warm, monkeypatch):
    """The second try's visible checks would otherwise be forked by the zygote whose PID namespace
    the first try's hidden checks counted a number out in (where its pids cannot be renumbered: no
    root of the host, a container's); their pids then told it, and what they pass or fail too."""
    if warm.launcher.name != "bubblewrap":
        pytest.skip("a plain process shares the host's pids")
    monkeypatch.setattr("grader.judge.zygote.renumber", lambda namespace: None)
    seen = []

    def record(call, answer):
        seen.append((call.function, answer))
        return answer

    warm.reset()
    results = grade(Request(toy, device=Device.CPU, selection=Selection(("pid_now", "forks")),
                            observers=Observers(on_answer=(record,))), warm)
    assert results.attempts == 2
    counted = [answer for function, answer in seen if function == "forks"][0]
    second = [answer for function, answer in seen if function == "pid_now"][-1]
    assert not 0 < second - counted < 64, (counted, second)


def test_a_second_try_before_any_hidden_check_shows_every_word(toy, warm):
    """A first try ended by a fault before any hidden check or input ran: nothing hidden came before
    the second try's visible checks, and their words are shown."""
    warm.reset()
    results = grade(Request(toy, device=Device.CPU, selection=Selection(("early",))), warm)
    (check,) = results.checks
    assert results.attempts == 2 and check.failure == "bad_answer" and not check.inputs_hidden


@pytest.mark.slow
def test_children_alive_together_share_no_socket(toy, warm):
    """A call run apart with hidden inputs serves them on an abstract unix socket and on loopback
    while the visible checks' child tries both: each child has a network of its own."""
    warm.reset()
    box = Sandbox(toy, {"toy.py": TOY.encode()}, warm)
    try:
        box.serve("hidden check", "hidden")     # where a hidden call starts at once
        telling = box.submit("tell", [SECRET, 2.5], timeout=10, hidden=True)
        box.serve("visible check", "visible")
        assert box.call("overhear", [2.0], timeout=10) == []
        assert "AF_UNIX" in telling.result(30)
    finally:
        box.close()


def test_pids_start_afresh_after_the_hidden_room_not_before_it(toy, warm, monkeypatch):
    """What the hidden room's code counts out in pids is not the next grading's (or round's) to
    read: after the reset that ends a grading, the next fork starts the next pids at a random
    place, first. The change into the hidden room skips that (a process started, milliseconds a
    fork): what visible code could count out there, the hidden code knew already. It is done at
    the next fork, not at the reset, which a grading's results wait for."""
    from grader.judge import zygote as module

    events = []
    ask = warm.ask
    monkeypatch.setattr(module, "renumber", lambda namespace: events.append("renumber"))
    monkeypatch.setattr(warm, "ask", lambda order, fds=(): events.append(order["op"]) or ask(order, fds))
    warm.reset()
    grade(Request(toy, device=Device.CPU, selection=Selection(("echo",))), warm)
    warm.prepare("cpu", toy.manifest.memory_mb)         # the next grading's first child
    if warm.launcher.name != "bubblewrap":              # the host's pids: nothing to renumber
        assert "renumber" not in events
        return
    first_fork, last_reset = events.index("fork"), len(events) - 1 - events[::-1].index("reset")
    assert events[first_fork + 1] == "renumber"         # (inside the fork's order, before it is sent)
    assert events[last_reset + 1:] == ["fork", "renumber"]
    assert events.count("renumber") == 2, events        # not at the change into the hidden room


def test_the_judge_s_own_failure_at_a_change_of_room_is_a_grader_fault(toy, warm, monkeypatch):
    """A failure on the judge's side of a call (here the reset into the hidden room: a bug, the
    machine refusing a kill) is no answer of the submission's: the check is not graded and the
    grading is done again, where it failed the check as if the learner's code had returned nothing
    usable."""
    warm.reset()
    request = Request(toy, device=Device.CPU, selection=Selection(("echo",)))
    clean = [(c.test, c.status) for c in grade(request, warm).checks]
    real, failed = warm.reset, []

    def reset_once(*args):
        if not failed:
            failed.append(1)
            raise OSError("the machine refused")
        return real(*args)

    monkeypatch.setattr(warm, "reset", reset_once)
    results = grade(request, warm)
    assert failed and results.attempts == 2 and not results.faults
    assert [(c.test, c.status) for c in results.checks] == clean
