"""The plain-process fallback (`--sandbox process`) run as root, as CI, Docker and Gradescope run
it: children are a user of their own with no capability, who can neither signal, trace nor
stall the judge, nor aim a root-owned kernel file at it; and Python still imports for them.

Each attack is aimed at the judge (here: this pytest process), which is then checked untouched;
what a broken defence would change is put back, so a failing run leaves the host as it was."""
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from grader.judge.cgroup import judge_id
from grader.judge.launchers import launcher_for
from grader.judge.sandbox import Sandbox
from grader.judge.zygote import Zygote
from grader.readers.manifest import find_lab

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(os.getuid() != 0, reason="a plain child has a user of its own only as root")

ATTACKS = r'''
import os

def attack(judge, what):
    """Aim one kernel interface guarded by a file's mode, not a capability, at the judge."""
    try:
        if what == "oom":                         # the judge, the OOM killer's first choice
            open(f"/proc/{judge}/oom_score_adj", "w").write("1000")
        elif what == "autogroup":                 # the judge's whole session at nice 19
            open(f"/proc/{judge}/autogroup", "w").write("19")
        elif what == "escape":                    # out of the grader's memory and pids groups
            for line in open("/proc/self/cgroup").read().splitlines():
                number, names, path = line.split(":", 2)
                if path != "/" and names:
                    open(f"/sys/fs/cgroup/{names.replace('name=', '')}/cgroup.procs", "w").write(str(os.getpid()))
            return open("/proc/self/cgroup").read()
        elif what == "sysrq":                     # opened only: one byte more reboots the host
            os.close(os.open("/proc/sysrq-trigger", os.O_WRONLY))
        elif what == "stop":
            os.kill(judge, 19)
        return "done"
    except OSError as error:
        return "refused: " + type(error).__name__

def deep(depth):
    """A workdir `depth` folders deep, no long path ever named."""
    for _ in range(depth):
        os.mkdir("d")
        os.chdir("d")
    return depth

def write(path):
    try:
        open(path, "w").write("from a student")
        return "done"
    except OSError as error:
        return "refused: " + type(error).__name__

def leave(name):
    """A file in each place every user may write, for whoever comes next; and what we see there."""
    for folder in ("/tmp", "/var/tmp", "/dev/shm"):
        open(f"{folder}/{name}", "w").write("from the last student")
    return [entry for folder in ("/tmp", "/var/tmp", "/dev/shm") for entry in sorted(os.listdir(folder))]

def who():
    """Our user, our capabilities, and a module of the standard library the zygote never imported."""
    import statistics
    status = open("/proc/self/status").read().splitlines()
    return [line.split()[1] for line in status if line.startswith(("Uid", "CapEff"))] + [statistics.mean([1, 3])]
'''


@pytest.fixture(scope="module")
def attack_lab(tmp_path_factory):
    folder = tmp_path_factory.mktemp("course") / "attacks"
    for part in ("handout", "stubs"):
        (folder / part).mkdir(parents=True)
        (folder / part / "attacks.py").write_text("def who():\n    raise NotImplementedError\n")
    (folder / "hidden").mkdir()
    (folder / "lab.yaml").write_text(yaml.safe_dump({
        "title": "Attacks", "handout": "handout", "call_timeout": 20, "time_budget": 60,
        "student_files": {"attacks.py": ["attack", "deep", "leave", "who", "write"]}}))
    return find_lab(folder)


@pytest.fixture
def plain(attack_lab):
    warm = Zygote(launcher_for("process"))
    box = Sandbox(attack_lab, {"attacks.py": ATTACKS.encode()}, warm)
    yield box
    box.close()
    warm.close()


def test_a_user_of_its_own_with_no_capability_and_python_whole(plain):
    uid, capabilities, mean = plain.call("who")
    assert int(uid) != 0 and capabilities.strip("0") == "" and mean == 2


def test_the_judge_cannot_be_signalled(plain):
    assert plain.call("attack", [os.getpid(), "stop"]) == "refused: PermissionError"


def test_the_judge_cannot_be_made_the_oom_killers_target(plain):
    own = Path("/proc/self/oom_score_adj")
    before = own.read_text()
    try:
        assert plain.call("attack", [os.getpid(), "oom"]) == "refused: PermissionError"   # it ran, and was refused
        assert own.read_text() == before, "a student made the judge the OOM killer's first victim"
    finally:
        own.write_text(before)                    # root may lower it again


def test_the_judges_session_cannot_be_reniced(plain):
    own = Path("/proc/self/autogroup")
    before = own.read_text() if own.exists() else ""
    if not before.strip():                        # no file, or autogroups off on this kernel
        pytest.skip("no autogroups here")
    try:
        plain.call("attack", [os.getpid(), "autogroup"])
        assert own.read_text() == before, "a student reniced the judge's session"
    finally:
        own.write_text(before.split()[-1])


def test_a_child_stays_in_its_zygotes_control_group(plain):
    if plain.zygote.cgroup is None:
        pytest.skip("the grader could make no control group here")
    seen = plain.call("attack", [os.getpid(), "escape"])
    assert seen.startswith("refused") or f"grader-{judge_id()}-" in seen, seen


def test_the_host_cannot_be_rebooted(plain):
    if not Path("/proc/sysrq-trigger").exists():
        pytest.skip("no /proc/sysrq-trigger here")
    assert plain.call("attack", [os.getpid(), "sysrq"]).startswith("refused")


def test_a_deep_folder_is_wiped_and_removed(attack_lab):
    """Python's rmtree recurses: 3000 folders deep, the reset and the close would raise."""
    warm = Zygote(launcher_for("process"))
    scratch = warm.scratch
    box = Sandbox(attack_lab, {"attacks.py": ATTACKS.encode()}, warm)
    assert box.call("deep", [3000]) == 3000
    box.close()
    warm.reset()                # between two students of a batch worker
    assert list(scratch.iterdir()) == []
    warm.close()
    assert not scratch.exists()


def test_a_child_has_a_tmp_of_its_own(attack_lab):
    """What one student leaves in /tmp, /var/tmp or /dev/shm, neither the host nor the next one sees."""
    warm = Zygote(launcher_for("process"))
    name = f"left-by-{os.getpid()}"
    first = Sandbox(attack_lab, {"attacks.py": ATTACKS.encode()}, warm)
    assert name in first.call("leave", [name])
    first.close()
    warm.reset()                # the next student of a batch worker
    second = Sandbox(attack_lab, {"attacks.py": ATTACKS.encode()}, warm)
    seen = second.call("leave", [name + "-too"])
    assert name not in seen and not any(Path(folder, name).exists() for folder in ("/tmp", "/var/tmp", "/dev/shm"))
    second.close()
    warm.close()


def test_a_child_writes_nowhere_but_its_own_places(plain):
    """Not in a folder every user may write that the grader never heard of, nor in Python's."""
    open_to_all = Path(f"/run/grader open-{os.getpid()}-café")    # mountinfo escapes one, not the other
    open_to_all.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=1777,size=1m", "none", str(open_to_all)], check=True)
    try:
        assert plain.call("write", [str(open_to_all / "note")]) == "refused: OSError"    # read-only
        assert plain.call("write", [str(Path(sys.prefix, "evil.pth"))]).startswith("refused")
        assert plain.call("write", ["note"]) == "done"                      # its working folder
    finally:
        subprocess.run(["umount", str(open_to_all)], check=True)
        open_to_all.rmdir()


def with_rope_frequencies_first(tmp_path, code):
    """A copy of the reference whose rope_frequencies runs `code` (as `attack()`) before answering."""
    submission = tmp_path / "submission"
    shutil.copytree(ROOT / "reference" / "lab2", submission)
    positions = submission / "positions.py"
    positions.write_text(positions.read_text() + code + (
        "\n\n_rope_frequencies = rope_frequencies\n\n"
        "def rope_frequencies(*args, **kwargs):\n    attack()\n    return _rope_frequencies(*args, **kwargs)\n"))
    return submission


def run_judge(command, submission):
    """grade.py -k rope_frequencies in a plain process, killed if it has not finished in 60 s."""
    judge = subprocess.Popen([*command, sys.executable, "grade.py", "lab2", "--submission", str(submission),
                              "--sandbox", "process", "-k", "rope_frequencies"], cwd=ROOT, text=True,
                             stdout=subprocess.PIPE, start_new_session=True, env={**os.environ, "COLUMNS": "200"})
    try:
        out, _ = judge.communicate(timeout=60)
    finally:
        if judge.poll() is None:
            os.killpg(judge.pid, signal.SIGKILL)    # a stopped process still dies of SIGKILL
            judge.wait()
    return judge.returncode, out


STOP_THE_JUDGE = '''

def attack():
    import os, signal
    zygote = os.getppid()
    judge = int(open(f"/proc/{zygote}/stat").read().rsplit(")", 1)[1].split()[1])
    os.kill(judge, signal.SIGSTOP)          # were it allowed, the grader would never finish
'''


def test_a_submission_cannot_stop_the_judge(tmp_path):
    code, out = run_judge([], with_rope_frequencies_first(tmp_path, STOP_THE_JUDGE))
    assert code == 1 and "PermissionError" in out


FREEZE_THE_JUDGE = '''

def attack():
    import os
    zygote = os.getppid()
    judge = int(open(f"/proc/{zygote}/stat").read().rsplit(")", 1)[1].split()[1])
    path = [line for line in open(f"/proc/{judge}/cgroup").read().splitlines() if line.startswith("0::")][0][3:]
    for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if os.path.exists(root + path + "/cgroup.freeze"):
            open(root + path + "/cgroup.freeze", "w").write("1")    # or cgroup.kill
'''


def v2_root():
    for root in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified")):
        if (root / "cgroup.procs").exists() and (root / "cgroup.stat").exists():
            return root
    return None


@pytest.mark.skipif(v2_root() is None, reason="no cgroup v2 hierarchy here")
def test_a_submission_cannot_freeze_the_judges_control_group(tmp_path):
    """The judge in a cgroup v2 group of its own, as systemd runs a service or a CI job; the
    submission writes 1 to that group's cgroup.freeze, a root file of mode 0644."""
    service = v2_root() / f"grader-test-service-{os.getpid()}"
    service.mkdir()
    try:
        code, _ = run_judge(["/bin/sh", "-c", f'echo $$ > {service}/cgroup.procs && exec "$@"', "sh"],
                            with_rope_frequencies_first(tmp_path, FREEZE_THE_JUDGE))
        frozen = (service / "cgroup.freeze").read_text().strip() == "1"
    finally:
        (service / "cgroup.freeze").write_text("0")
        for pid in (service / "cgroup.procs").read_text().split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10
        while (service / "cgroup.procs").read_text().split() and time.monotonic() < deadline:
            time.sleep(0.1)
        service.rmdir()
    assert code == 1 and not frozen, "a submission froze its judge's control group"


@pytest.mark.skipif(not shutil.which("setpriv") or all(
    folder.stat().st_mode & 0o001 for p in (sys.prefix, sys.base_prefix) for folder in Path(p).resolve().parents),
    reason="needs setpriv, and a Python in a folder only root may enter")
def test_without_mounts_a_hidden_python_is_said_plainly():
    """In a container without CAP_SYS_ADMIN the zygote cannot show such a Python to its children:
    the grading stops with one line saying so (exit 2), instead of children failing on their
    first import or every check repeating it."""
    run = subprocess.run(["setpriv", "--inh-caps=-sys_admin", "--bounding-set=-sys_admin", sys.executable,
                          "grade.py", "lab2", "--sandbox", "process", "-k", "positions.py"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "300"})
    assert run.returncode == 2 and run.stdout.count("the sandbox could not start: Python lives in") == 1
    assert "Traceback" not in run.stdout


def test_what_a_child_left_wherever_every_user_may_write_is_wiped(tmp_path, monkeypatch):
    """With no mounts of its own (a container without CAP_SYS_ADMIN), a child of a user of its own
    may write in every folder every user may, /run/lock as well as /tmp: tried, a file it left there
    was the next round's to read. The zygote finds those folders, and a reset wipes what the child
    left in each, below folders it could not write itself."""
    from grader.judge import child

    uid = 1_234_567
    lock = tmp_path / "run" / "lock"
    lock.mkdir(parents=True)
    os.chmod(lock, 0o1777)
    left, kept = lock / "planted.txt", lock / "root.txt"
    for path in (left, kept):
        path.write_text("x")
    os.chown(left, uid, uid)
    found = child.writable_by_all(str(tmp_path), depth=3)
    assert str(lock) in found and str(tmp_path / "run") not in found
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(child, "plain_uid", uid)
    monkeypatch.setattr(child, "left_in", found)
    child.wipe(scratch)
    assert not left.exists() and kept.exists()
