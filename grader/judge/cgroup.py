"""A control group per zygote, where this machine lets the grader make one (as root, with cgroup
v1 or v2 mounted writable): the memory and the number of processes of everything one
submission starts are then counted together, memfds and tmpfs files included, which a
process's own rlimits cannot do, and the submission gets one equal share of the CPU (the cpu
controller), however many processes it starts: it slows only itself, never the judge or a
classmate graded beside it. Each child gets a group of its own below (`account`), where the
kernel counts the CPU time of all it runs, whatever becomes of them (grader/judge/clock.py),
and, with cgroup v1, an equal share of the submission's CPU: no child of a submission can keep
another waiting for its turn (its wall time running to the backstop, a grader fault).
Where no group, or no cpu controller, can be had, `fairness` says so: each child's processes
then share one session, so one autogroup of the scheduler.
"""
import os
import time
from collections.abc import Sequence
from pathlib import Path

from grader.judge.linux import stop_then_kill

CGROUPS = Path("/sys/fs/cgroup")
SUBMISSION_MEMORY = 6 * 2**30   # bytes for a zygote and all it runs for one submission
SUBMISSION_PROCESSES = 512      # processes and threads, the zygote's own included


def judge_id(pid: int | None = None) -> str | None:
    """A judge's PID namespace, pid and start time (ours, by default), as "ns.pid.start": the
    same pid taken again later, or in another namespace, is another judge. None where it cannot
    be read: gone, or a process we may not inspect."""
    pid = os.getpid() if pid is None else pid
    try:
        namespace = os.stat(f"/proc/{pid}/ns/pid").st_ino
        started = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None
    return f"{namespace}.{pid}.{started}"


def gone(judge: str) -> bool:
    """Whether the judge named `judge` ("ns.pid.start") has ended for certain: one of our PID
    namespace whose pid is free now, a zombie's, or another process's (started at another time).
    Its namespace link is not read: root without CAP_SYS_PTRACE (a container's, Docker's) may not
    read that of a process with more capabilities than its own, and such a judge is alive, not
    gone. A judge of another namespace, or a name that is none, is not ours to judge."""
    fields = judge.split(".")
    if len(fields) != 3 or fields[0] != (judge_id() or "").split(".")[0] or not fields[1].isdigit():
        return False
    try:
        stat = Path(f"/proc/{fields[1]}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return True
    except OSError:
        return False
    return stat[0] in ("Z", "X") or stat[19] != fields[2]


class Cgroup:
    """The folders of one group, one per hierarchy (v1) or one (v2)."""

    def __init__(self, folders: list[Path], cpu: bool = False) -> None:
        self.folders = folders
        self.cpu = cpu                  # the submission has a CPU share of its own
        self.accounting: Path | None = None     # the folder whose children's CPU time the kernel counts
        self.shares: Path | None = None         # v1's cpu folder, whose children share the submission's CPU

    @staticmethod
    def fairness(group: "Cgroup | None") -> str:
        """How a submission's CPU is kept from starving others, in words, for the report."""
        if group is not None and group.cpu:
            return "a control group's equal CPU share"
        return "one scheduler group per child session (no cpu control group here)"

    @classmethod
    def make(cls, name: str) -> "Cgroup | None":
        """A new group limited to SUBMISSION_MEMORY and SUBMISSION_PROCESSES, or None."""
        if os.getuid() != 0:
            return None
        cls.sweep()
        if (CGROUPS / "cgroup.controllers").is_file():                  # v2, unified
            _enable_cpu()
            plan = [(CGROUPS / name, {"memory.max": SUBMISSION_MEMORY, "memory.swap.max": 0,
                                      "pids.max": SUBMISSION_PROCESSES, "cpu.weight": 100})]
        else:                                                           # v1, one hierarchy each
            plan = [(CGROUPS / "memory" / name, {"memory.limit_in_bytes": SUBMISSION_MEMORY,
                                                 "memory.memsw.limit_in_bytes": SUBMISSION_MEMORY}),
                    (CGROUPS / "pids" / name, {"pids.max": SUBMISSION_PROCESSES})]
            if (CGROUPS / "cpu" / "cpu.shares").is_file():
                plan.append((CGROUPS / "cpu" / name, {"cpu.shares": 1024}))
            if (CGROUPS / "cpuacct" / "cpuacct.usage").is_file() and \
                    (CGROUPS / "cpuacct").resolve() != (CGROUPS / "cpu").resolve():    # not mounted together
                plan.append((CGROUPS / "cpuacct" / name, {}))
        group = cls([])
        try:
            for folder, limits in plan:
                folder.mkdir()
                group.folders.append(folder)
                for setting, value in limits.items():
                    if (folder / setting).exists():
                        (folder / setting).write_text(str(value))
            if not all((folder / "cgroup.procs").exists() for folder, _ in plan):
                raise OSError("no cgroup.procs")
        except OSError:
            group.remove()
            return None
        group.cpu = any((folder / share).exists() for folder, _ in plan for share in ("cpu.weight", "cpu.shares"))
        group.accounting = next((folder for folder, _ in plan if (folder / "cpuacct.usage").exists()
                                 or (folder / "cgroup.controllers").exists()), None)   # v1's cpuacct, or v2
        group.shares = next((folder for folder, _ in plan if (folder / "cpu.shares").exists()), None)
        return group

    def account(self, pid: int) -> list[Path]:
        """Groups of its own below ours for child `pid` and all it will start: the first where
        the kernel counts their CPU time whatever becomes of them (reaped by nobody, orphaned),
        and with v1 one with an equal share of the submission's CPU. [] where none can be made."""
        made = []
        try:
            for parent in dict.fromkeys(folder for folder in (self.accounting, self.shares) if folder):
                made.append(parent / f"child-{pid}")
                made[-1].mkdir()
                (made[-1] / "cgroup.procs").write_text(str(pid))
        except OSError:
            for folder in made:
                forget(folder)
            return []
        return made

    @staticmethod
    def sweep() -> None:
        """Kill what is left in the groups of judges that are gone, and remove the groups: a
        judge killed (SIGKILL, a lost node) could not, and a student's daemon may live on there.
        Only a judge known to be gone (`gone`) loses its groups: the groups of any judge alive
        beside us, however little of it we may see, hold its zygote."""
        for folder in [*CGROUPS.glob("grader-*-*"), *CGROUPS.glob("*/grader-*-*")]:
            if gone(folder.name.split("-")[1]):
                left = Cgroup([folder])
                stop_then_kill(left.pids)
                left.remove()

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """`argv` run inside the group: a shell joins it, then becomes the command (same pid)."""
        joins = " && ".join(f"echo $$ > {folder / 'cgroup.procs'}" for folder in self.folders)
        return ["/bin/sh", "-c", f'{joins} && exec "$@"', "sh", *argv]

    def pids(self) -> list[int]:
        """The processes in the group now, its children's groups included."""
        found = []
        for procs in self.folders[0].rglob("cgroup.procs") if self.folders else []:
            try:
                found += [int(pid) for pid in procs.read_text().split()]
            except (OSError, ValueError):
                pass
        return found

    def members(self) -> list[int]:
        """The processes in the group itself, its children's groups left out, newest first (a child
        just forked, before `account` moves it)."""
        try:
            return sorted(map(int, (self.folders[0] / "cgroup.procs").read_text().split()), reverse=True)
        except (OSError, ValueError, IndexError):
            return []

    def remove(self) -> None:
        """Remove the folders, children's first, once their processes are gone (they die with the
        zygote)."""
        deadline = time.monotonic() + 2.0
        inner = [sub for folder in self.folders for sub in folder.glob("*/") if sub.is_dir()]
        for folder in [*inner, *reversed(self.folders)]:
            while True:
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.01)
        self.folders = []


def forget(folder: Path) -> None:
    """Remove a child's group if it is empty already (else its zygote's removal will)."""
    try:
        folder.rmdir()
    except OSError:
        pass


def _enable_cpu():
    """Turn the cpu controller on for the groups we make (v2), where this machine lets us."""
    try:
        if "cpu" not in (CGROUPS / "cgroup.subtree_control").read_text().split():
            (CGROUPS / "cgroup.subtree_control").write_text("+cpu")
    except OSError:             # a container's own root, holding processes: no controller for us
        pass
