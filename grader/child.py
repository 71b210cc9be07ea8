"""The child: the only process that imports a submission. It runs one call per request.

Started by grader/sandbox.py as `python -I child.py WORKDIR IN_FD OUT_FD MEMORY_MB CPU_S`
in WORKDIR, a copy of the handout holding the submission's files. It limits its own memory and
CPU time before any student code runs. It answers on
OUT_FD with plain data only (grader/wire.py); whatever it says, the judge trusts none of it.
"""
import importlib
import importlib.util
import os
import resource
import sys
import traceback
from pathlib import Path


def load_wire():
    spec = importlib.util.spec_from_file_location("_grader_wire", Path(__file__).with_name("wire.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def resolve(value, wire):
    """Construct the objects the judge asked for with `wire.build` (from handout modules)."""
    if isinstance(value, dict) and wire.BUILD in value:
        module, _, name = value[wire.BUILD].partition(":")
        factory = getattr(importlib.import_module(module), name)
        return factory(*resolve(value["args"], wire), **resolve(value["kwargs"], wire))
    if isinstance(value, dict):
        return {k: resolve(v, wire) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(resolve(v, wire) for v in value)
    return value


def echo(argument, wire):
    """An argument as it is after the call, or None for objects that are not plain data."""
    try:
        return wire.encode(argument)
    except wire.WireError:
        return None


def describe(error, workdir):
    """The error as the learner should see it: type, message, and where in their files."""
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if Path(f.filename).resolve().parent == workdir]
    where = [f"{Path(f.filename).name} line {f.lineno}, in {f.name}" for f in frames[-3:]]
    innermost = frames[-1].name if frames else None
    return {
        "type": type(error).__name__,
        "message": str(error)[:1000],
        "where": where,
        "not_implemented": innermost if isinstance(error, NotImplementedError) else None,
    }


def serve(workdir, read_fd, write_fd, wire):
    wire.send(write_fd, {"ready": True})
    while True:
        try:
            request = wire.recv(read_fd)
        except EOFError:
            return
        answer = {"id": request["id"]}
        try:
            args = resolve(wire.sanitize(request["args"]), wire)
            kwargs = resolve(wire.sanitize(request["kwargs"]), wire)
            function = getattr(importlib.import_module(request["module"]), request["function"])
            value = function(*args, **kwargs)
            answer.update(ok=True, value=wire.encode(value))
            if request["echo"]:
                answer["args"] = [echo(a, wire) for a in args]
        except wire.WireError as error:
            answer.update(ok=False, error={"type": "WireError", "message": str(error), "where": [],
                                           "not_implemented": None})
        except BaseException as error:  # SystemExit and KeyboardInterrupt too: report, don't die
            answer.update(ok=False, error=describe(error, workdir))
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        wire.send(write_fd, answer)


def main(argv):
    workdir = Path(argv[0]).resolve()
    read_fd, write_fd, memory_mb, cpu_seconds = map(int, argv[1:5])
    os.chdir(workdir)
    sys.path.insert(0, str(workdir))
    sys.dont_write_bytecode = True
    wire = load_wire()
    import torch

    torch.set_num_threads(1)
    if not torch.cuda.is_available():      # CUDA maps far more address space than it uses
        resource.setrlimit(resource.RLIMIT_AS, (memory_mb * 2**20,) * 2)
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds,) * 2)
    serve(workdir, read_fd, write_fd, wire)


if __name__ == "__main__":
    main(sys.argv[1:])
