"""What the names of a lab's `forbid:` stand for, to the judge reading a submission (grader/forbid.py).

Each name is resolved to its object in the judge's own import of torch, and to the ATen ops that
are it (grader/judge/meaning.py, which the child's trap asks too: the name's own op, the one op it comes
down to, and their in-place twins). A name a learner writes is then forbidden when it is the
rule's name or a name inside it, the same object under another name, an op object or builtin
whose own op is one of those ops, or, for a name that shares the rule's stem (softmax in
torch.special.softmax, nn.Softmax2d, F.gumbel_softmax), something whose call on a small probe
runs one of them. Learners' names are looked up in modules the judge has already loaded, never
imported, and only torch's things are ever probed.
"""
import functools
import sys
import types
from typing import NamedTuple

from grader.judge import meaning


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
            ops, whole = meaning.ops_of(obj) if obj is not None else (frozenset(), False)
            stems = frozenset({meaning.stem(name), *map(meaning.stem, ops)}) - {""}
            again = tuple(meaning.reimplementations(ops, stems)) if ops else ()
            self.rules.append(Rule(name, obj, ops, whole, stems, again))
        self.roots = {r.name.split(".")[0] for r in self.rules if r.obj is not None}
        self.matched = {}           # dotted name -> (name, rule) or None
        self.footprints = {}        # id(obj) -> (obj, its footprint)

    def match(self, dotted):
        """(the forbidden name it reaches, its rule) for a dotted name a learner's code reaches, or None."""
        if dotted not in self.matched:
            self.matched[dotted] = self._match(dotted)
        return self.matched[dotted]

    def method(self, attribute):
        """(name, rule) when `.attribute` on a value is a forbidden Tensor method, or None."""
        literal = next((r.name for r in self.rules if r.name == f"torch.Tensor.{attribute}"), None)
        if literal:
            return literal, literal
        found = self.match(f"torch.Tensor.{attribute}") if "torch" in self.roots else None
        return (f"torch.Tensor.{attribute}", found[1]) if found else None

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
        if rule or not any(stem in word.lower() for r in self.rules for stem in r.stems):
            return rule
        if id(obj) not in self.footprints:
            self.footprints[id(obj)] = obj, set(meaning.footprint(obj) or ())
        ran = self.footprints[id(obj)][1]
        return next((r for r in self.rules if r.ops & ran), None)


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


def left_open(names, limit=8):
    """Sentences for check-lab: what each forbidden name still leaves open."""
    import torch

    said, found = [], rules(tuple(names))
    for rule in found.rules:
        if rule.obj is None:
            said.append(f"forbid: {rule.name} is nothing in this torch ({torch.__version__}): only that name, "
                        "as written, is refused in the source, and nothing at run time")
            continue
        ops = ", ".join(sorted(rule.ops)) or "none"
        said.append(f"forbid: {rule.name} is refused as the ATen ops {ops}, under any name and at run time"
                    + ("; calls of it are watched where torch reports them, not what it runs inside"
                       if rule.whole else "") + ". The same computation from other ops (a softmax as "
                    "torch.exp(x) / torch.exp(x).sum(-1, keepdim=True)) stays allowed, by design")
        open_ = sorted((name for name, obj in _relatives(rule.stems) if not found.match(name)),
                       key=lambda name: (sum(part.startswith("_") for part in name.split(".")), name))
        if open_:
            said.append(f"forbid: {rule.name}: relatives by name the judge could not tie to it (other ops, "
                        "or nothing it could probe) stay allowed: "
                        + ", ".join(open_[:limit]) + (f" and {len(open_) - limit} more" if len(open_) > limit else ""))
    return said


def _relatives(stems):
    """(dotted name, object) of the callables of torch's loaded modules and Tensor whose name holds a stem."""
    import torch

    seen = set()
    spaces = [(name, vars(m)) for name, m in sorted(sys.modules.items())
              if (name == "torch" or name.startswith("torch.")) and type(m) is types.ModuleType]
    for prefix, space in spaces + [("torch.Tensor", {n: getattr(torch.Tensor, n, None) for n in dir(torch.Tensor)})]:
        for name, obj in list(space.items()):
            if callable(obj) and not isinstance(obj, types.ModuleType) and id(obj) not in seen \
                    and any(stem in name.lower() for stem in stems):
                seen.add(id(obj))
                yield f"{prefix}.{name}", obj
