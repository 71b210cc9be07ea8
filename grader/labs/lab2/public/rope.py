"""The truth about RoPE and the usual mistakes, for the public and the hidden checks of positions.py
alike (a helper, not checks: pytest collects only test_*.py).

Tolerances come from floating-point arithmetic, not from anyone's rounding: the truth is computed
in float64, and an element may be off by what steps of the working precision can explain, that
of float32 (eps = 2**-23) or of x's own dtype when it is coarser (float16, bfloat16). For an angle
a = p * base**(-2i/d): rounding the exponent, the power and the product each cost a few epsilons
relative to a, the exponent's error amplified by ln(base); so |error| <= eps * (|a| * (ln(base) + 8) + 4).
Any of float32 or float64 angles, complex numbers, einsum or rotation matrices fits within that;
the mistakes named in hints miss it by far. apply_rope is always given the right cos and sin, so
that a mistake costs in one function only; cos and sin are float32, as rope_frequencies returns
them, whatever x's dtype, so computing in float32 and returning x's dtype is right.

When a dtype or a device is wrong, the hint comes from the function's answers on inputs that tell
the usual slips apart (a float64 x, a meta x): never from a rule that fires for right code too.

Full marks mean drop-in: every scored check of apply_rope also asks, once per grading, how it does
in the lab's own model (lab.yaml's model_calls, ../model_calls.py): q and k permuted views of one
projection, several heads, one call after the other with the same cos and sin, and a backward pass
whose gradients must reach them.
"""
import math
import weakref

import torch

from grader.lab_api import CallFailed, valued_meta
from grader.lab_api.checks import (
    CheckFailed,
    describe,
    diagnose,
    expect,
    expect_close,
    expect_tensor,
    expect_unchanged,
    max_error,
)

EPS = 2.0 ** -23
DEVICE_SLACK = {"cpu": 1.0, "cuda": 4.0}
META = torch.device("meta")
FLOATS = (torch.float64, torch.float16, torch.bfloat16)        # x's dtypes besides float32
ON_DEVICE = "pass device=device to torch.arange (or create the tensors there): asked for {asked}, they are on {seen}"
PART_ON_CPU = ("part of it is made on the CPU: every new tensor (the positions' torch.arange as well as the "
               "frequencies') needs device=device")
CACHED = ("asked for sizes it had answered before, on another device, it answers where it first made them, while "
          "new sizes come back where asked: a cache of its answers must be keyed by the device (and dtype) too")
DEVICE_OBJECT = ("device may be a torch.device as well as a string: hand it on to torch (device=device) "
                 "rather than reading it as text")
MADE_ON_CPU = ("torch.zeros(x.shape) (like torch.empty or torch.tensor without dtype= and device=) makes a float32 "
               "tensor on the CPU whatever x is: torch.zeros_like(x) or torch.empty_like(x) keep x's dtype and device")
DEVICE_LOST = ("the result must be where x is: a tensor made without device= is on the CPU; use torch.empty_like(x) "
               "(or device=x.device)")
FORCED_FLOAT32 = ("it comes back float32 whatever x is (.float(), or dtype=torch.float32): compute in float32 if you "
                  "like, but return the result in x's dtype, .to(x.dtype) (or .type_as(x))")
FORCED_FLOAT64 = ("it comes back float64 for a {dtype} x (.double(), or float64 cos and sin): compute in float64 if "
                  "you like, but return the result in x's dtype, .to(x.dtype) (or .type_as(x))")
PROMOTED = ("x * cos is float32 when x is {dtype} and cos float32 (type promotion): return the result in x's dtype, "
            ".to(x.dtype) (or turn cos and sin to x.dtype first)")
IN_MODEL = ("apply_rope to work as the lab's model calls it: q and k permuted views of one projection "
            "(not contiguous), 3 heads, turned one after the other by the same cos and sin, then backward")
NOT_CONTIGUOUS = ("in the model q and k are permuted views of one projection, not contiguous, and .view needs "
                  "contiguous memory: use .reshape, .flatten or .unflatten, which copy only when they must")
NO_GRADIENT = ("no gradient reaches q and k through apply_rope (torch.no_grad(), .detach(), .data or .numpy()): "
               "the RoPE model could not learn; compute with ordinary tensor operations")
SECOND_CALL = ("the first call was right and the second, with the same cos and sin, was not: apply_rope changes "
               "cos or sin in place (cos.unsqueeze_, resize_, ...); cos[None, None] or cos.view(...) is a new view "
               "that leaves the caller's tensor as it was")
WRITES_X = "write results into new tensors; slices like x[..., 0::2] are views of x"
IN_PLACE = (WRITES_X + ": apply_rope changes x in place, and in the model autograd refuses that for q and k, views "
            "of one projection")
RETURNED_X = ("return a new tensor even where nothing turns (one position: every angle is 0): x itself is the "
              "caller's tensor, and whatever changes the result in place would change x")
MIXED_DTYPES = ("x is {dtype} and cos, sin float32: an operation that needs one dtype (matmul, view_as_complex) "
                "refuses the mix; compute in float32 (x.float()) and return .to(x.dtype), as LLaMA's .type_as(x) does")


BROADCAST_SHAPE = ("cos and sin are (seq_len, head_dim // 2): dimensions of size 1 for broadcasting over batch and "
                   "heads are apply_rope's to add (cos[None, None])")
BASE_IGNORED = "the base argument is ignored (10000 used instead)"


# -- rope_frequencies ---------------------------------------------------------------------------
def exact_angles(head_dim, seq_len, base, start=0, exponents=None):
    """Angle p * base ** -exponents[i] for positions start.. and pairs i; exponents 2i / head_dim
    unless given (a mistake's)."""
    i = torch.arange(head_dim // 2, dtype=torch.float64)
    inv = base ** -(2 * i / head_dim if exponents is None else exponents(i, head_dim))
    pos = torch.arange(start, start + seq_len, dtype=torch.float64)
    return torch.outer(pos, inv)                                     # (seq_len, head_dim/2)


def angle_tolerance(angles, base, device):
    return EPS * (angles.abs() * (math.log(base) + 8) + 4) * DEVICE_SLACK.get(device.type, 1.0)


def frequency_mistakes(head_dim, seq_len, base):
    """{the mistake in words: the (cos, sin) it gives}, in float64."""
    exact = exact_angles(head_dim, seq_len, base)
    turned = lambda angles: (angles.cos(), angles.sin())                # noqa: E731
    mistakes = {
        "cos and sin are swapped": (exact.sin(), exact.cos()),
        "the angle has the wrong sign: sin should be positive for small positive angles":
            (exact.cos(), -exact.sin()),
        "positions start at 1; the first position is p = 0 (angle 0)":
            turned(exact_angles(head_dim, seq_len, base, start=1)),
        "the exponent uses i / head_dim; pair i needs base ** (-2i / head_dim)":
            turned(exact_angles(head_dim, seq_len, base, exponents=lambda i, d: i / d)),
        "the exponent is rounded to a whole number: 2i // head_dim is integer division; use / (true division)":
            turned(exact_angles(head_dim, seq_len, base, exponents=lambda i, d: 2 * i // d)),
        "the exponent is rounded to a whole number: -2i // head_dim is integer division (rounding down); "
        "use / (true division)": turned(exact_angles(head_dim, seq_len, base, exponents=lambda i, d: -(-2 * i // d))),
        "the exponent counts pairs from 1, 2(i + 1) / head_dim: pair 0 has exponent 0 (frequency 1), pair i "
        "turns at base ** (-2i / head_dim)":
            turned(exact_angles(head_dim, seq_len, base, exponents=lambda i, d: (2 * i + 2) / d)),
        "the exponent is (2i + 1) / head_dim: torch.arange(1, head_dim, 2) starts at 1; the exponents are "
        "torch.arange(0, head_dim, 2) / head_dim":
            turned(exact_angles(head_dim, seq_len, base, exponents=lambda i, d: (2 * i + 1) / d)),
        "the frequencies grow with i; pair i turns at base ** (-2i / head_dim), slower for larger i":
            turned(exact_angles(head_dim, seq_len, 1 / base)),
        "every angle is 0: each position must turn by p * base ** (-2i / head_dim)":
            turned(torch.zeros_like(exact)),
        "positions in float16, which counts whole numbers exactly only up to 2048: make them float32 "
        "(torch.arange(seq_len, device=device).float())": turned(
            torch.outer(torch.arange(seq_len).half().double(), exact_angles(head_dim, 2, base)[1])),
        "positions in bfloat16, which counts whole numbers exactly only up to 256: make them float32 "
        "(torch.arange(seq_len, device=device).float())": turned(
            torch.outer(torch.arange(seq_len).bfloat16().double(), exact_angles(head_dim, 2, base)[1])),
    }
    if base != 10000.0:
        mistakes[BASE_IGNORED] = turned(exact_angles(head_dim, seq_len, 10000.0))
    return {name: torch.cat(pair, dim=-1) for name, pair in mistakes.items()}


def frequencies_answer(student, head_dim, seq_len, on, dtype_clause=False, **kwargs):
    """rope_frequencies(head_dim, seq_len, **kwargs) -> (cos, sin): two float32 tensors of the right
    shape `on` that device, or CheckFailed naming what is not. float64 passes unless `dtype_clause`:
    its values are as right, and a check about values charging for the dtype would charge one slip
    in every check (the checks of the device argument ask float32 too). So do leading dimensions of
    size 1 (shaped for broadcasting), judged as the (seq_len, head_dim // 2) values they hold."""
    result = student.rope_frequencies(head_dim, seq_len, **kwargs)
    expect(isinstance(result, (tuple, list)) and len(result) == 2, "a pair (cos, sin)", describe(result))
    shape = (seq_len, head_dim // 2)
    answer = []
    for name, value in zip(("cos", "sin"), result):
        broadcast = isinstance(value, torch.Tensor) and value.dim() > 2 and tuple(value.shape[-2:]) == shape \
            and set(value.shape[:-2]) == {1}
        if broadcast and dtype_clause:
            raise CheckFailed(f"{name} of shape {shape}", describe(value), BROADCAST_SHAPE)
        if broadcast:           # the values are judged; the checks of the answer's form charge the shape
            value = value.reshape(shape)
        if isinstance(value, torch.Tensor) and tuple(value.shape) == (seq_len, head_dim):
            raise CheckFailed(f"{name} of shape {shape}", describe(value),
                              "one value per pair of dimensions, not per dimension: the "
                              "lesson's interleaved convention needs no cat((freqs, freqs))")
        if isinstance(value, torch.Tensor) and 1 in shape and tuple(value.shape) == tuple(n for n in shape if n != 1):
            raise CheckFailed(f"{name} of shape {shape}", describe(value),
                              "a dimension of size 1 is still a dimension (one position, or one pair): "
                              ".squeeze() drops it")
        if isinstance(value, torch.Tensor) and shape[0] != shape[1] and tuple(value.shape) == shape[::-1]:
            raise CheckFailed(f"{name} of shape {shape}", describe(value),
                              "rows are positions, columns pairs: torch.outer(pos, inv), not (inv, pos)")
        hint = None
        if isinstance(value, torch.Tensor) and value.device.type != torch.device(on).type:
            hint = device_hint(student, on, value.device.type, kwargs)
        elif isinstance(value, torch.Tensor) and value.dtype == torch.float64:
            hint = "float64 angles are fine, but return cos and sin in float32: .float()"
        dtypes = (torch.float32,) if dtype_clause else (torch.float32, torch.float64)
        expect(isinstance(value, torch.Tensor) and tuple(value.shape) == shape and value.dtype in dtypes
               and value.device.type == torch.device(on).type,
               f"{name} to be a float32 tensor of shape {shape} on {torch.device(on).type}", describe(value), hint)
        answer.append(value)
    return tuple(answer)


FRESH_SIZES = (10, 11)      # head_dim, seq_len no check asks for: an answer no cache holds yet


def device_hint(student, on, seen, kwargs):
    """Why rope_frequencies answered on `seen` when asked for `on`: ON_DEVICE when it does so for
    sizes never asked before too, CACHED when those come back where asked (its answers for the
    sizes asked before were kept), else None."""
    try:
        fresh = student.rope_frequencies(*FRESH_SIZES, **kwargs)
    except CallFailed as failure:
        if failure.kind in ("raised", "not_implemented", "bad_answer"):
            return None
        raise
    places = {t.device.type for t in fresh if isinstance(t, torch.Tensor)} \
        if isinstance(fresh, (tuple, list)) and len(fresh) == 2 else set()
    if places == {torch.device(on).type}:
        return CACHED
    return ON_DEVICE.format(asked=torch.device(on).type, seen=seen) if places == {seen} else None


def check_frequencies(student, head_dim, seq_len, exact_base, on, dtype_clause=False, values=True, **kwargs):
    """Call rope_frequencies(head_dim, seq_len, **kwargs); the result must be right and `on` that
    device (and float32, where `dtype_clause`). A check of the device (not `values`) lets through
    values that a named mistake explains, or that are angles of some other rule (turning), the
    value checks' to charge; all angles 0, or numbers that are no angles, still fail it."""
    cos, sin = frequencies_answer(student, head_dim, seq_len, on, dtype_clause, **kwargs)
    exact = exact_angles(head_dim, seq_len, exact_base)
    tolerance = angle_tolerance(exact, exact_base, torch.device(on))
    both = torch.cat((cos.cpu(), sin.cpu()), dim=-1)
    hint = None
    if max_error(both, torch.cat((exact.cos(), exact.sin()), dim=-1)) > 1e-3:
        hint = diagnose(both, frequency_mistakes(head_dim, seq_len, exact_base), 4 * tolerance.repeat(1, 2))
        hint = hint if hint and confirmed(student, hint, exact_base, seq_len) else None
        if not values and (turning(cos.cpu(), sin.cpu()) if hint is None else not hint.startswith("every angle is 0")):
            return
    expect_close(cos.cpu(), exact.cos(), "cos", tolerance, hint)
    expect_close(sin.cpu(), exact.sin(), "sin", tolerance, hint)


def turning(cos, sin):
    """Whether (cos, sin) are the cosines and sines of angles p * w_i, position times a frequency of
    each pair, whatever the frequencies: a value slip no hint names, not a table that does nothing
    (every angle 0) or that is no turn (angles that do not grow with the position)."""
    turns = torch.complex(cos.double(), sin.double())                        # (seq, pairs): e^(i p w)
    if turns.shape[0] < 2 or max_error(sin[1:], torch.zeros_like(sin[1:])) <= 1e-3:
        return False
    p = torch.arange(turns.shape[0], dtype=torch.float64)[:, None]
    return max_error(torch.view_as_real(turns), torch.view_as_real(turns[1] ** p)) < 1e-3


TELLING = (8, 6)            # head_dim, seq_len where every mistake of frequency_mistakes gives values of its own


def confirmed(student, mistake, base, seq_len=TELLING[1]):
    """Whether rope_frequencies' answer at TELLING's head_dim (and at least its length: a mistake that
    shows only at long lengths is asked there again; on the CPU, with this base) shows `mistake` too:
    at small sizes several mistakes give the same values (at head_dim 2 an angle of 2 pi p is an
    angle of 0), and a hint names only what the answers single out. `mistake` None: whether that
    answer is right. The base ignored is confirmed only where the default base's answer is right."""
    telling = (TELLING[0], max(TELLING[1], seq_len))
    if mistake == BASE_IGNORED and not confirmed(student, None, 10000.0, seq_len):
        return False            # other bases can give the default's angles by another slip (4i / d at base 100)
    try:
        answer = student.rope_frequencies(*telling, **({} if base == 10000.0 else {"base": base}))
    except CallFailed as failure:
        if failure.kind in ("raised", "not_implemented", "bad_answer"):
            return False
        raise
    if not (isinstance(answer, (tuple, list)) and len(answer) == 2
            and all(isinstance(t, torch.Tensor) and t.device.type != "meta" for t in answer)):
        return False
    exact = exact_angles(*telling, base)
    both = torch.cat([t.detach().cpu().double() for t in answer], dim=-1)
    slack = 4 * angle_tolerance(exact, base, torch.device("cpu")).repeat(1, 2)
    if mistake is None:
        return bool(((both - torch.cat((exact.cos(), exact.sin()), dim=-1)).abs() <= slack).all())
    return diagnose(both, frequency_mistakes(*telling, base), slack) == mistake


def check_device_honoured(student, head_dim, seq_len, device, dtype_clause=False):
    """Asked for the meta device (tensors with a dtype and a shape, and no values: any machine has
    it), as a string and as a torch.device, (cos, sin) are there (float32, where `dtype_clause`);
    and on CUDA when grading there."""
    asked = [("meta", "meta"), (META, "meta")] + ([("cuda", "cuda"), (torch.device("cuda"), "cuda")]
                                                  if torch.device(device).type == "cuda" else [])
    for given, on in asked:
        try:
            frequencies_answer(student, head_dim, seq_len, on, dtype_clause, device=given)
        except CallFailed as failure:
            if failure.kind not in ("raised", "not_implemented"):
                raise
            works_as_text = isinstance(given, torch.device) and _answers(student, head_dim, seq_len, str(given))
            raise CheckFailed(f"(cos, sin) on {on}, asked for device={given!r}", raised(failure),
                              DEVICE_OBJECT if works_as_text else PART_ON_CPU) from None


def raised(failure):
    """What a call raised, and where in the learner's files, as a check's failure shows it."""
    return f"{failure.function} raised {failure.message}" + "".join(f"\n  at {w}" for w in failure.where or ())


def _answers(student, head_dim, seq_len, device):
    try:
        frequencies_answer(student, head_dim, seq_len, device, device=device)
    except (CallFailed, CheckFailed):
        return False
    return True


# -- apply_rope ---------------------------------------------------------------------------------
def rotate(x, cos, sin, split="interleaved", sign=1.0):
    """Rotate pairs of x in float64: the truth (interleaved, sign 1) and the usual mistakes."""
    x, cos, sin = x.double(), cos.double(), sin.double() * sign
    if split == "half":
        half = x.shape[-1] // 2
        a, b = x[..., :half], x[..., half:]
        return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)
    a, b = x[..., 0::2], x[..., 1::2]
    first, second = a * cos - b * sin, a * sin + b * cos
    if split == "concatenated":
        return torch.cat((first, second), dim=-1)
    return torch.stack((first, second), dim=-1).flatten(-2)


def rope_tolerance(x, device):
    """A few steps of the working precision (float32's, or x's own when coarser) of each pair's
    magnitude, elementwise."""
    eps = max(torch.finfo(x.dtype).eps, EPS)
    a, b = x.double()[..., 0::2].abs(), x.double()[..., 1::2].abs()
    size = (a + b).repeat_interleave(2, dim=-1)
    return eps * (4 * size + 1e-3) * DEVICE_SLACK.get(device.type, 1.0)


def rope_mistakes(x, cos, sin):
    """{the mistake in words: what it makes of x}, in float64."""
    mistakes = {
        "this looks like the half-split rotate_half convention (pairs i and i + head_dim/2); "
        "the lesson pairs adjacent dimensions (2i, 2i+1)": rotate(x, cos, sin, "half"),
        "the angle has the wrong sign: pairs turn clockwise (check the signs of the sin terms)":
            rotate(x, cos, sin, sign=-1.0),
        "cos and sin are swapped": rotate(x, sin, cos),
        "the rotated pairs are concatenated [firsts..., seconds...] instead of interleaved; put each "
        "pair back in place: torch.stack((out1, out2), dim=-1).flatten(-2)": rotate(x, cos, sin, "concatenated"),
        UNROTATED: x.double(),
    }
    default = exact_angles(x.shape[-1], x.shape[-2], 10000.0)
    if max_error(cos, default.cos()) > 1e-3:
        mistakes["the cos and sin it is given are not used (frequencies of base 10000 made anew): rotate by the "
                 "cos and sin arguments, whatever base made them"] = rotate(x, default.cos(), default.sin())
    return mistakes


def rope_inputs(shape, seed, device, base=10000.0, dtype=torch.float32):
    """Random x of `dtype`, and the right float32 cos and sin for it (computed here, in float64)."""
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(dtype)
    angles = exact_angles(shape[-1], shape[-2], base)
    return x.to(device), angles.cos().float().to(device), angles.sin().float().to(device)


UNROTATED = "x came back unrotated"


def expect_rotated(student, out, x, cos, sin, device, values=True):
    """apply_rope's answer `out` for (x, cos, sin) is right, or the mistake is named. A check of
    another clause (dtype, device, a new tensor: not `values`) lets through values that are a named
    rotation mistake, or the function's own turn (own_turn): the value checks charge that slip;
    doing nothing (x unturned, zeros, a constant) still fails it. A float64 answer for a float32 x
    holds its values: only the dtype checks (x of another dtype) charge that slip."""
    dtypes = (x.dtype, torch.float64) if x.dtype == torch.float32 else (x.dtype,)
    placed = isinstance(out, torch.Tensor) and out.dtype in dtypes and out.device.type == x.device.type
    if isinstance(out, torch.Tensor) and tuple(out.shape) == tuple(x.shape) and not placed:
        raise CheckFailed(f"apply_rope(x, cos, sin) to be {x.dtype} on {x.device.type}, as x is",
                          describe(out), placement_hint(student, x, out))
    expect_tensor(out, "apply_rope(x, cos, sin)", x.shape, out.dtype, device)
    if x.device.type == "meta":
        return
    x, cos, sin = x.cpu(), cos.cpu(), sin.cpu()
    truth, tolerance = rotate(x, cos, sin), rope_tolerance(x, device)
    hint = None
    if max_error(out.cpu(), truth) > 1e-3:
        hint = diagnose(out.cpu(), rope_mistakes(x, cos, sin), 4 * tolerance)
        if not values and hint not in (None, UNROTATED):
            return
    try:
        expect_close(out.cpu(), truth, "apply_rope(x, cos, sin)", tolerance, hint)
    except CheckFailed:         # own_turn asks more of apply_rope: only of an answer that is not right
        if not values and hint is None and own_turn(student, out, x, cos, sin, device):
            return
        raise


def own_turn(student, out, x, cos, sin, device):
    """Whether `out` (for x, cos and sin on the CPU) is apply_rope's own answer for x in float32 on
    the grading device, the value checks' kind of input, keeping each pair's length where every
    angle is 0, and the function turns (turns). A value slip no hint names is the value checks' to
    charge; zeroing what should turn, or moving x whatever the angles, is no turn."""
    still = (cos == 1).all(-1) & (sin == 0).all(-1)            # (seq,): positions of angle 0
    own = _answer(student, x, cos, sin, device)
    if own is None or not still.any() or not turns(student, device):
        return False
    slack = 4 * rope_tolerance(x, torch.device(device))       # x's own dtype's steps
    pairs = lambda t: t.unflatten(-1, (-1, 2)).square().sum(-1).sqrt()         # noqa: E731
    return bool((out.cpu().double() - own).abs().le(slack).all()) \
        and bool((pairs(own) - pairs(x.double()))[..., still, :].abs().le(slack[..., still, ::2]).all()) \
        and (still.all() or _turned(own, x, still, _answer(student, x, *_unturned(cos, sin), device)))


def turns(student, device):
    """Whether apply_rope, on an x of 5 positions, is a turn of some kind: about as large as x past
    angle 0 (a turn keeps each pair's length; a sign typo, on average), and depending on the angles
    (given angle 0 everywhere, it answers otherwise there)."""
    x, cos, sin = (t.cpu() for t in rope_inputs((1, 2, 5, 6), 38, device))
    still = torch.arange(5) == 0
    own, unturned = _answer(student, x, cos, sin, device), _answer(student, x, *_unturned(cos, sin), device)
    return own is not None and _turned(own, x, still, unturned)


def _unturned(cos, sin):
    return torch.ones_like(cos), torch.zeros_like(sin)


def _turned(own, x, still, unturned):
    moved, was = own[..., ~still, :].square().sum(), x.double()[..., ~still, :].square().sum()
    return unturned is not None and bool(0.5 * was <= moved <= 2 * was) \
        and max_error(own[..., ~still, :], unturned[..., ~still, :]) > 1e-3


def _answer(student, x, cos, sin, device):
    """apply_rope's answer for x in float32 with cos and sin, on the device, in float64 on the CPU;
    None when it raised or is no tensor of x's shape."""
    try:
        answer = student.apply_rope(x.float().to(device), cos.to(device), sin.to(device))
    except CallFailed as failure:
        if failure.kind in ("raised", "not_implemented", "bad_answer"):
            return None
        raise
    if not isinstance(answer, torch.Tensor) or tuple(answer.shape) != tuple(x.shape) or answer.device.type == "meta":
        return None
    return answer.detach().cpu().double()


def placement_hint(student, x, out):
    """Why apply_rope's answer came back in another dtype or on another device than x: from its
    answers for a float64 x (type promotion with float32 cos keeps float64; a float32 made anew
    does not) and for x on the meta device (a tensor made without device= is not there)."""
    float64 = _placed(student, (1, 1, 2, 4), torch.float64, "cpu")
    on_meta = _placed(student, (1, 1, 2, 4), x.dtype, META)
    kept_float64 = float64 is not None and float64.dtype == torch.float64
    kept_meta = on_meta is not None and on_meta.device.type == "meta"
    if not kept_float64 and not kept_meta:
        return MADE_ON_CPU
    if not kept_meta:       # an answer elsewhere shows it; one that raised there does not
        return DEVICE_LOST if on_meta is not None else None
    if not kept_float64:
        return FORCED_FLOAT32
    if out.dtype == torch.float32 and x.dtype in (torch.float16, torch.bfloat16):
        return PROMOTED.format(dtype=str(x.dtype).removeprefix("torch."))
    if out.dtype == torch.float64 and out.device.type == x.device.type:
        return FORCED_FLOAT64.format(dtype=str(x.dtype).removeprefix("torch."))
    return None


def _placed(student, shape, dtype, device):
    """apply_rope's answer (a tensor) for an x of this dtype on this device, or None."""
    x, cos, sin = rope_inputs(shape, 0, "cpu", dtype=dtype)
    x, cos, sin = (t.to(device) if device != META else valued_meta(t) for t in (x, cos, sin))
    try:
        out = student.apply_rope(x, cos, sin)
    except CallFailed as failure:
        if failure.kind in ("raised", "not_implemented", "bad_answer"):
            return None
        raise
    return out if isinstance(out, torch.Tensor) else None


def check_rope(student, x, cos, sin, device, values=True):
    """apply_rope(x, cos, sin) is right (its values too, where `values`: see expect_rotated), and it
    works in the lab's model."""
    try:
        out = student.apply_rope(x, cos, sin)
    except CallFailed as failure:       # torch refused the mix of x's dtype with float32 cos and sin
        mixed = any(word in failure.message.lower() for word in ("dtype", "scalar type"))
        if failure.kind != "raised" or x.dtype == torch.float32 or not mixed:
            raise
        raise CheckFailed(f"apply_rope to take a {x.dtype} x with float32 cos and sin", raised(failure),
                          MIXED_DTYPES.format(dtype=str(x.dtype).removeprefix("torch."))) from None
    expect_rotated(student, out, x, cos, sin, device, values)
    expect_in_model(student, device)


def check_rope_dtypes(student, shape, seed, device, base=10000.0):
    """x of each dtype but float32 (cos and sin float32): the answer is in x's dtype (and right, or
    a named rotation mistake: the value checks' to charge)."""
    for dtype in FLOATS:
        check_rope(student, *rope_inputs(shape, seed, device, base, dtype), device, values=False)


def check_rope_on_meta(student, shape, seed, device):
    """Right on the grading device, then x, cos and sin on the meta device (no values, any machine
    has it): the answer is there, in x's shape and dtype. Float32, as cos and sin are: a dtype slip
    is the dtype check's, not this one's."""
    check_rope(student, *rope_inputs(shape, seed, device), device, values=False)
    x, cos, sin = (valued_meta(t) for t in rope_inputs(shape, seed, "cpu"))
    try:
        out = student.apply_rope(x, cos, sin)
    except CallFailed as failure:
        if failure.kind not in ("raised", "not_implemented"):
            raise
        raise CheckFailed("apply_rope on an x on the meta device to answer there", raised(failure),
                          placement_hint(student, x, x)) from None
    expect_rotated(student, out, x, cos, sin, META)
    expect_in_model(student, device)


def check_rope_leaves_inputs(student, x, cos, sin, device):
    """x, cos and sin are unchanged after the call (values, shape, strides, dtype), the answer is a
    new tensor, not x itself, and it is right."""
    echo = student.with_inputs("apply_rope", x, cos, sin)
    out, after = echo
    for name, before, now in zip(("x", "cos", "sin"), (x, cos, sin), after):
        expect_unchanged(before, now, name, "apply_rope", WRITES_X)
    expect(0 not in echo.returned, "apply_rope(x, cos, sin) to be a new tensor",
           "x itself (or a view of x)", RETURNED_X if x.shape[-2] == 1 else None)
    expect_rotated(student, out, x, cos, sin, device, values=False)
    expect_in_model(student, device)


# -- apply_rope in the lab's model: one call per grading, its verdict asked by every scored check ------
MODEL = dict(batch=2, seq=5, heads=3, head_dim=8, max_len=7)
# student -> {device: the verdict (None, or what to raise)}
_in_model: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def in_model_inputs(device):
    """((projection, cos, sin, weights) for model_calls.apply_rope_in_model, the truth: (q and k
    turned, the projection's gradient, q and k), in float64). The gradient of sum(w * x turned) is
    w turned back, by the opposite angles."""
    b, t, h, d = MODEL["batch"], MODEL["seq"], MODEL["heads"], MODEL["head_dim"]
    generator = torch.Generator().manual_seed(36)
    projection = torch.randn((b, t, 3, h, d), generator=generator)
    weights = torch.randn((2, b, h, t, d), generator=generator)
    angles = exact_angles(d, MODEL["max_len"], 10000.0)
    cos, sin = angles.cos().float(), angles.sin().float()
    q, k = (projection[:, :, i].permute(0, 2, 1, 3) for i in (0, 1))
    turned = [rotate(v, cos[:t], sin[:t]) for v in (q, k)]
    grad = torch.zeros(projection.shape, dtype=torch.float64)
    for i in (0, 1):
        grad[:, :, i] = rotate(weights[i], cos[:t], sin[:t], sign=-1.0).permute(0, 2, 1, 3)
    inputs = tuple(v.to(device) for v in (projection, cos, sin, weights))
    return inputs, (turned, grad, (q, k))


def expect_in_model(student, device):
    """apply_rope works in the lab's model (IN_MODEL): asked once per grading and device, the verdict
    kept for every later check (a failure is raised again, as it was)."""
    verdicts = _in_model.setdefault(student, {})
    key = torch.device(device).type
    if key not in verdicts:
        try:
            _judge_in_model(student, device)
            verdicts[key] = None
        except (CheckFailed, CallFailed) as failure:
            verdicts[key] = failure
    verdict = verdicts[key]
    if isinstance(verdict, CheckFailed):
        raise CheckFailed(verdict.expected, verdict.seen, verdict.hint, verdict.mistake)
    if verdict is not None:
        raise verdict


def _own_answers(student, inputs, xs, turned, device):
    """apply_rope's own answers for the model's q and k given tidy (contiguous, one call each), in
    float64, where they are not the rotation: None when they are (the model call is then held to the
    truth), so that a value slip costs the value clauses, not every case the model call is part of."""
    cos, sin = (t[: xs[0].shape[-2]] for t in inputs[1:3])
    own = []
    for x in xs:
        out = student.apply_rope(x.contiguous().to(device), cos.contiguous(), sin.contiguous())
        if not (isinstance(out, torch.Tensor) and tuple(out.shape) == tuple(x.shape)):
            return None             # no answer to hold the model's to: the truth is
        own.append(out.detach().cpu().double())
    close = all((o - t).abs().le(rope_tolerance(x, torch.device(device))).all() for o, t, x in zip(own, turned, xs))
    return None if close else own


def _judge_as_its_own(answer, own, xs, device):
    """The model call of an apply_rope whose values are wrong: in the model it must answer as it does
    on tidy inputs (strides, heads, a second call with the same cos and sin), and let gradients through."""
    for name, out, mine, x in zip(("q", "k"), (answer["q"], answer["k"]), own, xs):
        seen = f"apply_rope({name}, cos, sin) in the model"
        if not (isinstance(out, torch.Tensor) and tuple(out.shape) == tuple(x.shape)):
            raise CheckFailed(f"{seen} to be a tensor of shape {tuple(x.shape)}", describe(out))
        expect_close(out.cpu(), mine, f"{seen}, as apply_rope answers for {name} made contiguous",
                     rope_tolerance(x, torch.device(device)), SECOND_CALL if name == "k" else None)
    expect(answer["grad"] is not None, "gradients to reach q and k through apply_rope, as training needs",
           "no gradient at all", NO_GRADIENT)


def _changes_x(student, device):
    """Whether apply_rope, on tidy inputs, leaves x changed: what its in-place autograd error in
    the model is about."""
    x, cos, sin = rope_inputs((1, 1, 3, 4), 37, device)
    try:
        _, (x_after, _, _) = student.with_inputs("apply_rope", x, cos, sin)
    except CallFailed as failure:
        if failure.kind in ("raised", "not_implemented", "bad_answer"):
            return False
        raise
    return isinstance(x_after, torch.Tensor) and not torch.equal(x_after.cpu(), x.cpu())


def _judge_in_model(student, device):
    inputs, (turned, grad, xs) = in_model_inputs(device)
    try:
        answer = student.in_model("apply_rope", *inputs)
    except CallFailed as failure:
        if failure.kind != "raised":
            raise
        view = "view size is not compatible with input tensor's size and stride" in failure.message
        hint = NOT_CONTIGUOUS if view else IN_PLACE if "modified inplace" in failure.message \
            and _changes_x(student, device) else None
        raise CheckFailed(IN_MODEL, raised(failure), hint) from None
    expect(isinstance(answer, dict) and set(answer) == {"q", "k", "grad"}, IN_MODEL, describe(answer))
    own = _own_answers(student, inputs, xs, turned, device)
    if own is not None:             # a value slip, charged where values are asked: here, only drop-in
        _judge_as_its_own(answer, own, xs, device)
        return
    right = []
    for name, out, truth, x in zip(("q", "k"), (answer["q"], answer["k"]), turned, xs):
        seen = f"apply_rope({name}, cos, sin) in the model"
        hint = SECOND_CALL if name == "k" and all(right) else None
        if not (isinstance(out, torch.Tensor) and tuple(out.shape) == tuple(x.shape)):
            raise CheckFailed(f"{seen} to be a tensor of shape {tuple(x.shape)}", describe(out), hint)
        tolerance = rope_tolerance(x, torch.device(device))
        right.append(bool((out.cpu().double() - truth).abs().le(tolerance).all()))
        expect_close(out.cpu(), truth, seen, tolerance, hint)
    got = answer["grad"]
    expect(got is not None, "gradients to reach q and k through apply_rope, as training needs",
           "no gradient at all", NO_GRADIENT)
    expect_tensor(got, "the gradient that reached q and k", grad.shape)
    expect_close(got.cpu(), grad, "the gradient that reached q and k (the loss's weights turned back)",
                 rope_tolerance(grad, torch.device(device)), NO_GRADIENT)
