"""Run a command as Docker runs a container by default, as Gradescope runs an autograder: root,
with Docker's default capabilities only (no CAP_SYS_ADMIN) and a seccomp filter that, like
Docker's default profile for such a process, refuses every namespace (unshare, setns, clone with
a CLONE_NEW* flag; clone3 is ENOSYS, so libc falls back to clone), every mount, and the kernel's
keyrings. Bubblewrap cannot run there, nor can the grader's process sandbox make a namespace.

    python tests/container.py [--tmp] [--bind SRC DST]... [--hide DIR [--keep PATH]...]... -- COMMAND...

Before the filter, in mount and IPC namespaces of its own (as Docker gives a container its own files
and IPC):
--tmp gives it an empty /tmp and /var/tmp of its own and an empty 64 MiB /dev/shm (Docker's default),
--bind puts SRC at DST (after --tmp, so DST may be under /tmp),
--hide covers DIR with an empty folder every user may enter, the --keep paths under it bound
back in (an image whose Python every user can read), and the control groups are read-only, as
Docker mounts them. Linux x86_64 only; run as root.
"""
import ctypes
import errno
import os
import sys

libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNS, CLONE_NEWIPC = 0x20000, 0x08000000
NAMESPACES = 0x7E020000             # CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 32, 0x1000, 0x4000, 0x40000
# x86_64 system calls Docker's default profile refuses a process without CAP_SYS_ADMIN, or allows
# only with arguments: unshare, setns, mount, umount2, pivot_root, the new mount API, keyrings,
# bpf, open_by_handle_at; clone is filtered on its flags below, clone3 answers ENOSYS
REFUSED = [272, 308, 165, 166, 155, 428, 429, 430, 431, 432, 433, 442, 248, 249, 250, 321, 304]
CLONE, CLONE3, AUDIT_ARCH_X86_64 = 56, 435, 0xC000003E
DOCKER_CAPS = [0, 1, 3, 4, 5, 6, 7, 8, 10, 13, 18, 27, 29, 31]   # CHOWN DAC_OVERRIDE FOWNER FSETID KILL
#   SETGID SETUID SETPCAP NET_BIND_SERVICE NET_RAW SYS_CHROOT MKNOD AUDIT_WRITE SETFCAP


def check(result, what):
    if result != 0:
        raise OSError(ctypes.get_errno(), f"{what}: {os.strerror(ctypes.get_errno())}")


def mount(source, target, kind=None, flags=0, data=None):
    check(libc.mount(source and os.fsencode(source), os.fsencode(target), kind and kind.encode(), flags,
                     data and data.encode()), f"mount {target}")


def lay_out(tmp, binds, hidden):
    """The container's own files: sources are opened first, as what --tmp covers may hold them."""
    check(libc.unshare(CLONE_NEWNS | CLONE_NEWIPC), "unshare")
    mount("none", "/", flags=MS_REC | MS_PRIVATE)
    kept = {path: os.open(path, os.O_PATH) for folder in hidden for path in hidden[folder]}
    sources = [(os.open(src, os.O_PATH), dst) for src, dst in binds]
    if tmp:
        mount("tmpfs", "/tmp", "tmpfs", data="mode=1777")
        os.makedirs("/tmp/.var-tmp", mode=0o1777)
        os.chmod("/tmp/.var-tmp", 0o1777)
        mount("/tmp/.var-tmp", "/var/tmp", flags=MS_BIND)
        mount("tmpfs", "/dev/shm", "tmpfs", data="mode=1777,size=64m")
    for folder, paths in hidden.items():
        mount("tmpfs", folder, "tmpfs", data="mode=0755")
        for path in paths:
            os.makedirs(path, exist_ok=True)
            mount(f"/proc/self/fd/{kept[path]}", path, flags=MS_BIND | MS_REC)
    for fd, dst in sources:
        os.makedirs(dst, exist_ok=True)
        mount(f"/proc/self/fd/{fd}", dst, flags=MS_BIND | MS_REC)
    if os.path.ismount("/sys/fs/cgroup"):
        mount("/sys/fs/cgroup", "/sys/fs/cgroup", flags=MS_BIND | MS_REC)
        mount(None, "/sys/fs/cgroup", flags=MS_REMOUNT | MS_BIND | MS_RDONLY)


class Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(Filter))]


def docker_seccomp():
    load, equal, bits, give = 0x20, 0x15, 0x45, 0x06
    allow, refuse, absent = 0x7FFF0000, 0x00050000 | errno.EPERM, 0x00050000 | errno.ENOSYS
    program = [(load, 0, 0, 4), (equal, 1, 0, AUDIT_ARCH_X86_64), (give, 0, 0, refuse), (load, 0, 0, 0),
               (0x35, 0, 1, 0x40000000), (give, 0, 0, refuse)]                    # no x32 way round
    for number in REFUSED:
        program += [(equal, 0, 1, number), (give, 0, 0, refuse)]
    program += [(equal, 0, 1, CLONE3), (give, 0, 0, absent),
                (equal, 0, 3, CLONE), (load, 0, 0, 16), (bits, 0, 1, NAMESPACES), (give, 0, 0, refuse),
                (give, 0, 0, allow)]
    filters = (Filter * len(program))(*program)
    check(libc.prctl(22, 2, ctypes.byref(Program(len(program), filters)), 0, 0), "seccomp")   # held SYS_ADMIN:
    #                                                                                         no no_new_privs


def docker_capabilities():
    last = int(open("/proc/sys/kernel/cap_last_cap").read())
    for cap in set(range(last + 1)) - set(DOCKER_CAPS):
        check(libc.prctl(24, cap, 0, 0, 0), "drop the bounding set")      # PR_CAPBSET_DROP
    mask = sum(1 << cap for cap in DOCKER_CAPS)
    data = (ctypes.c_uint32 * 6)(mask, mask, 0, 0, 0, 0)                  # effective, permitted
    check(libc.capset((ctypes.c_uint32 * 2)(0x20080522, 0), data), "capset")


def main(argv):
    at = argv.index("--")
    options, command = argv[:at], argv[at + 1:]
    tmp, binds, hidden, folder = False, [], {}, None
    while options:
        option = options.pop(0)
        if option == "--tmp":
            tmp = True
        elif option == "--bind":
            binds.append((options.pop(0), options.pop(0)))
        elif option == "--hide":
            folder = options.pop(0)
            hidden[folder] = []
        elif option == "--keep":
            hidden[folder].append(options.pop(0))
        else:
            sys.exit(f"container.py: unknown option {option}")
    lay_out(tmp, binds, hidden)
    docker_seccomp()
    docker_capabilities()
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
