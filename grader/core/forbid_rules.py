"""What the names of a lab's `forbid:` stand for, to the judge reading a submission (grader/core/forbid.py).

Each name is resolved to its object in the judge's own import of torch, and to the ATen ops that
are it (grader/judge/meaning.py, which the child's trap asks too: the name's own op, the one op it comes
down to, and their in-place twins). A name a learner writes is then forbidden when it is the
rule's name or a name inside it, the same object under another name, an op object or builtin
whose own op is one of those ops, or, for a name that shares the rule's stem (softmax in
torch.special.softmax, nn.Softmax2d, F.gumbel_softmax), something whose call on a small probe
runs one of them. Learners' names are looked up in modules the judge has already loaded, never
imported, and only torch's things are ever probed.

Every function with rules may also not use what would switch off the child's watch of torch's
dispatcher (grader/judge/trap.py) or reach into it: torch's mode stacks and dispatch-key guards,
an op's calls below Python (.redispatch, ._op_dk), a program started unseen (_posixsubprocess), and
the frames, referrers and closures that lead to the watch's own objects (WATCH: its rule's name).
"""
import functools
import sys
import types
from typing import NamedTuple

from grader.judge import meaning

WATCH = "the judge's watch"
_DISPATCH, _FUNCTION = "torch.utils._python_dispatch.", "torch.overrides."
SWITCHES = (*(_DISPATCH + n for n in ("_disable_current_modes", "_pop_mode", "_pop_mode_temporarily", "_push_mode",
                                      "_get_current_dispatch_mode", "_get_current_dispatch_mode_stack")),
            *(_FUNCTION + n for n in ("_pop_mode", "_pop_mode_temporarily", "_push_mode", "_get_current_function_mode",
                                      "_get_current_function_mode_stack")),
            *("torch._C." + n for n in (
                "_DisableTorchDispatch", "_ExcludeDispatchKeyGuard", "ExcludeDispatchKeyGuard",
                "_ForceDispatchKeyGuard", "_SetExcludeDispatchKeyGuard", "_DisablePythonDispatcher",
                "DisableTorchFunction", "DisableTorchFunctionSubclass", "_DisableFuncTorch",
                "_pop_torch_dispatch_stack", "_push_on_torch_dispatch_stack", "_get_dispatch_stack_at",
                "_pop_torch_function_stack", "_push_on_torch_function_stack", "_get_function_stack_at",
                "_set_dispatch_mode", "_unset_dispatch_mode", "_get_dispatch_mode", "_dispatch_call_boxed",
                "_dispatch_tls_set_dispatch_key_excluded", "_dispatch_tls_set_dispatch_key_included")),
            "_posixsubprocess", "subprocess._fork_exec", "sys._getframe", "sys._current_frames", "inspect.currentframe",
            "inspect.stack", "inspect.trace", "inspect.getclosurevars", "gc.get_objects", "gc.get_referrers",
            "gc.get_referents")
SWITCH_ATTRIBUTES = frozenset({"redispatch", "redispatch_boxed", "_op_dk", "_handle", "py_kernels", "python_key_table",
                               "f_back", "f_locals", "f_globals", "tb_frame", "gi_frame", "cr_frame", "ag_frame",
                               "__closure__", "cell_contents", "__subclasses__"})


class Rule(NamedTuple):
    name: str                       # as lab.yaml writes it
    obj: object                     # what it stands for in the judge's torch (None: nothing there)
    ops: frozenset                  # the ATen ops that are it
    whole: bool                     # whether the ops miss part of it (calls of it are watched too)
    stems: frozenset                # the word its relatives share ("softmax")
    again: tuple                    # torch's Python reimplementations of the ops (torch._refs.softmax)


@functools.cache
def rules(names):
    """The Rules of a tuple of forbidden dotted names (once per process)."""
    return Rules(names)


class Rules:
    def __init__(self, names):
        self.rules = []
        for name in names:
            obj = meaning.resolve(name)
            ops, whole = meaning.ops_of(obj, name) if obj is not None else (frozenset(), False)
            stems = frozenset({meaning.stem(name), *map(meaning.stem, ops)}) - {""}
            again = tuple(meaning.reimplementations(ops, stems)) if ops else ()
            self.rules.append(Rule(name, obj, ops, whole, stems, again))
        self.roots = {r.name.split(".")[0] for r in self.rules if r.obj is not None}
        self.switches = {id(obj): name for name in SWITCHES if (obj := meaning.resolve(name)) is not None}
        self.matched = {}           # dotted name -> (name, rule) or None
        self.footprints = {}        # id(obj) -> (obj, its footprint)

    def match(self, dotted):
        """(the forbidden name it reaches, its rule) for a dotted name a learner's code reaches, or None."""
        if dotted not in self.matched:
            self.matched[dotted] = self._match(dotted) or self._switch(dotted)
        return self.matched[dotted]

    def method(self, attribute):
        """(name, rule) when `.attribute` on a value is a forbidden Tensor method, or None."""
        literal = next((r.name for r in self.rules if r.name == f"torch.Tensor.{attribute}"), None)
        if literal:
            return literal, literal
        if attribute in SWITCH_ATTRIBUTES:
            return f".{attribute}", WATCH
        found = self.match(f"torch.Tensor.{attribute}") if "torch" in self.roots else None
        return (f"torch.Tensor.{attribute}", found[1]) if found else None

    def _switch(self, dotted):
        """(the name, WATCH) when a dotted name is one of SWITCHES, by name or as the same object, or
        takes one of SWITCH_ATTRIBUTES (torch.ops.aten.exp.default.redispatch)."""
        literal = next((n for n in SWITCHES if dotted == n or dotted.startswith(n + ".")), None)
        if literal:
            return literal, WATCH
        parts = dotted.split(".")
        attribute = next((part for part in parts[1:] if part in SWITCH_ATTRIBUTES), None)
        if attribute:
            return f".{attribute}", WATCH
        for cut in range(1, len(parts) + 1):
            name = self.switches.get(id(lookup(".".join(parts[:cut])))) if parts[0] in _ROOTS else None
            if name:
                return ".".join(parts[:cut]), WATCH
        return None

    def _match(self, dotted):
        literal = next((r.name for r in self.rules if dotted == r.name or dotted.startswith(r.name + ".")), None)
        if literal:
            return literal, literal
        if dotted.split(".")[0] not in self.roots:
            return None
        parts = dotted.split(".")
        for cut in range(2, len(parts) + 1):
            obj = lookup(".".join(parts[:cut]))
            if obj is None or isinstance(obj, types.ModuleType):
                continue
            rule = next((r for r in self.rules if r.obj is obj or any(f is obj for f in r.again)), None) \
                or self._same_op(obj, parts[cut - 1])
            if rule:
                return ".".join(parts[:cut]), rule.name
        return None

    def _same_op(self, obj, word):
        """The first rule whose ops `obj` is (its own op) or runs (a relative by name, probed)."""
        own = meaning.own_op(obj)
        rule = next((r for r in self.rules if own in r.ops), None)
        if rule or not any(meaning.holds(word, stem) for r in self.rules for stem in r.stems):
            return rule
        ran = self.footprint(obj)
        return next((r for r in self.rules if r.ops & (ran or set())), None)

    def footprint(self, obj):
        """The ops torch's record shows a probe call of `obj` running (composites too), or None where
        no probe call works; once per object."""
        if id(obj) not in self.footprints:
            found = meaning.footprint(obj, record=True)
            self.footprints[id(obj)] = obj, None if found is None else set(found)
        return self.footprints[id(obj)][1]


_ROOTS = {name.split(".")[0] for name in SWITCHES}


def lookup(dotted):
    """What a dotted name is in the modules already loaded, or None: no import, no module __getattr__."""
    parts = dotted.split(".")
    cut = next((cut for cut in range(len(parts), 0, -1) if ".".join(parts[:cut]) in sys.modules), 0)
    if not cut:
        return None
    obj = sys.modules[".".join(parts[:cut])]
    for part in parts[cut:]:
        try:
            obj = vars(obj).get(part) if type(obj) is types.ModuleType else getattr(obj, part, None)
        except Exception:           # a descriptor that wants an instance, say
            return None
        if obj is None:
            return None
    return obj


class Left(NamedTuple):
    """What one forbidden name leaves open, for check-lab."""
    rule: str                       # the name, as lab.yaml writes it
    said: str                       # what it is refused as, in a sentence
    open: tuple                     # names that may compute it and are not refused: check-lab fails on them
    other: tuple                    # relatives by name that a probe shows computing other ops: allowed, by design


def left_open(names):
    """A Left for each forbidden name. Open: torch's callables named like the rule that the judge
    could not tie to it and no probe could run (a gradient, `backward`, is not what the rule is
    about); a name that is nothing in this torch, or not torch's (never watched at run time)."""
    import torch

    said, found = [], rules(tuple(names))
    for rule in found.rules:
        if rule.obj is None or rule.name.split(".")[0] != "torch":
            said.append(Left(rule.name, f"forbid: {rule.name} is " + (
                f"nothing in this torch ({torch.__version__}): only that name, as written, is refused in the "
                "source, and nothing at run time" if rule.obj is None else
                "not torch's: it is refused in the source alone, under the names the file gives it, never at run "
                "time, where the child watches torch's dispatcher only"), (rule.name,), ()))
            continue
        ops = ", ".join(sorted(rule.ops)) or "none"
        relatives = sorted(((name, obj) for name, obj in _relatives(rule.stems)
                            if not found.match(name) and "backward" not in name.lower()),
                           key=lambda pair: (sum(part.startswith("_") for part in pair[0].split(".")), pair[0]))
        said.append(Left(rule.name, f"forbid: {rule.name} is refused as the ATen ops {ops}, under any name and at "
                         "run time" + ("; calls of it are watched where torch reports them" if rule.whole else "")
                         + ". The same computation from other ops stays allowed, by design",
                         tuple(name for name, obj in relatives if found.footprint(obj) is None),
                         tuple(name for name, obj in relatives if found.footprint(obj) is not None)))
    return said


SPACES = ("torch", "torch.nn", "torch.nn.functional", "torch.special", "torch.linalg", "torch.fft", "torch.sparse",
          "torch.masked", "torch.nested", "torch.distributions", "torch._C._nn", "torch._C._special",
          "torch._C._linalg", "torch._C._fft", "torch._C._sparse", "torch._C._nested", "torch._refs",
          "torch._refs.nn.functional", "torch._refs.special", "torch.ao.nn.quantized")     # relatives looked for here


def _relatives(stems):
    """(dotted name, object) of the callables whose name holds a stem, in torch's namespaces a learner
    may reach (SPACES, the same whatever else is loaded), on Tensor, and the ATen ops of torch.ops.aten."""
    import torch

    seen = set()
    spaces = [(name, vars(space)) for name in SPACES if type(space := meaning.resolve(name)) is types.ModuleType]
    spaces.append(("torch.Tensor", {n: getattr(torch.Tensor, n, None) for n in dir(torch.Tensor)}))
    ops = {op.partition("::")[2] for op in torch._C._dispatch_get_all_op_names() if op.startswith("aten::")}
    spaces.append(("torch.ops.aten", {n: getattr(torch.ops.aten, n, None)
                                      for n in sorted(ops) if any(meaning.holds(n, stem) for stem in stems)}))
    for prefix, space in spaces:
        for name, obj in sorted(space.items()):
            if callable(obj) and not isinstance(obj, types.ModuleType) and id(obj) not in seen \
                    and any(meaning.holds(name, stem) for stem in stems):
                seen.add(id(obj))
                yield f"{prefix}.{name}", obj
