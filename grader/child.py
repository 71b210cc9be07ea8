"""The child: the only process that imports a submission. It runs one call per request.

Started by grader/sandbox.py as `python -I child.py WORKDIR DEVICE IN_FD OUT_FD` with WORKDIR
its current directory, a copy of the handout holding the submission's files. It answers on
OUT_FD with plain data only (grader/wire.py); whatever it says, the judge trusts none of it.
"""
import importlib
import importlib.util
import os
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


def serve(workdir, device, read_fd, write_fd, wire):
    wire.send(write_fd, {"ready": True})
    while True:
        try:
            request = wire.recv(read_fd)
        except EOFError:
            return
        answer = {"id": request["id"]}
        try:
            args = resolve(wire.sanitize(request["args"], device), wire)
            kwargs = resolve(wire.sanitize(request["kwargs"], device), wire)
            function = getattr(importlib.import_module(request["module"]), request["function"])
            value = function(*args, **kwargs)
            answer.update(ok=True, value=wire.encode(value))
        except BaseException as error:  # SystemExit and KeyboardInterrupt too: report, don't die
            answer.update(ok=False, error=describe(error, workdir))
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        wire.send(write_fd, answer)


def main(argv):
    workdir, device, read_fd, write_fd = Path(argv[0]).resolve(), argv[1], int(argv[2]), int(argv[3])
    os.chdir(workdir)
    sys.path.insert(0, str(workdir))
    sys.dont_write_bytecode = True
    wire = load_wire()
    import torch

    torch.set_num_threads(1)
    serve(workdir, device, read_fd, write_fd, wire)


if __name__ == "__main__":
    main(sys.argv[1:])
