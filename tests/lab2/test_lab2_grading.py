"""Lab 2's positions and invariance checks against the reference, the stubs, and submissions
written to be wrong, alternative, cheating or crashing (tests/submissions/)."""
from pathlib import Path

import pytest
import torch

from grader.judge.sandbox import Sandbox
from grader.lab_api.checks import load_beside

SUBMISSIONS = Path(__file__).resolve().parents[1] / "submissions"
ROOT = Path(__file__).resolve().parents[2]
PARTS = ["positions", "invariance"]          # experiments are graded in test_lab2_experiments.py


CACHE = {}


@pytest.fixture
def graded(grade_lab2):
    """Grade each submission once for this file: graded("mistakes_a") -> LabResults."""
    def get(name):
        if name not in CACHE:
            folder = {"reference": ROOT / "reference/lab2", "stubs": None}.get(name, SUBMISSIONS / name)
            CACHE[name] = grade_lab2(folder, PARTS)
        return CACHE[name]

    return get


@pytest.fixture
def graded_one(grade_lab2):
    """graded_one(folder or tests/submissions name, function) -> LabResults of that function's checks alone."""
    def get(name, function):
        if (name, function) not in CACHE:
            CACHE[name, function] = grade_lab2(name if isinstance(name, Path) else SUBMISSIONS / name, [function])
        return CACHE[name, function]

    return get


def helper(lab2, name):
    """A helper module of lab 2's public checks (rope, layers, slips), as the checks load it."""
    return load_beside(lab2.folder / "public" / "test_positions_properties.py", name)


def points(results, function):
    return results.by_function([function])[function]


def failures(results, function):
    return [c for c in results.checks if c.function == function and c.status != "passed"]


def test_reference_full_marks(graded):
    results = graded("reference")
    assert results.all_passed and results.score == results.max_score > 0
    assert {c.visibility for c in results.checks} == {"visible", "hidden"}


@pytest.mark.parametrize("submission", ["alternative_styles", "orbit_search"])
def test_alternative_styles_full_marks(graded, submission):
    """float64 angles, einsum, complex numbers, every reordering one by one, a search of x's orbit."""
    results = graded(submission)
    own = [c for c in results.checks if c.function == "is_permutation_invariant"]
    assert all(c.status == "passed" for c in own), [c.message for c in own if c.message]
    if submission == "alternative_styles":
        assert results.score == results.max_score, [c.message for c in results.checks if c.message]


def test_complex_rope_views_full_marks(graded, lab2, zygote):
    """cos and sin as the .real and .imag views of torch.polar's result, LLaMA style: carried whatever
    their strides, and graded as the values they are."""
    results = graded("complex_rope")
    for function in ("rope_frequencies", "apply_rope"):
        score, top = points(results, function)
        assert score == top > 0, [c.message for c in failures(results, function)]
    box = Sandbox(lab2, {"positions.py": (SUBMISSIONS / "complex_rope" / "positions.py").read_bytes()}, zygote)
    cos, sin = box.call("rope_frequencies", [2, 1])        # (1, 1) views: stride 2 on size-1 dimensions
    box.close()
    assert torch.equal(cos, torch.ones(1, 1)) and torch.equal(sin, torch.zeros(1, 1))


def test_reference_invariance_is_right_with_repeated_tokens(lab2):
    """The layer weighting positions (1, 2, 1) on x = (a, a, b): a swap of the first two, a rotation
    and the reversal change nothing there, but (a, b, a) changes the sum."""
    from grader.lab_api.trusted import Reference

    reference = Reference.of(lab2)
    layer = reference.toy_attention.Layer(torch.eye(3), torch.tensor([0.0, 1.0, 0.0]), 0.0)
    x = torch.randn(2, 2, 4)[:, [0, 0, 1]]
    assert reference.invariance.is_permutation_invariant(layer, x) is False
    assert reference.invariance.is_permutation_invariant(layer, x[:, [0, 0, 0]]) is True
    assert reference.invariance.is_permutation_invariant(reference.toy_attention.Layer(
        torch.eye(3), torch.zeros(3), 0.0), x) is True


@pytest.mark.parametrize("pos, causal", [("none", False), ("none", True), ("learned", False),
                                         ("sinusoidal", False), ("rope", False), ("alibi", True)])
def test_opaque_attention_matches_the_handout(lab2, pos, causal):
    """The layer handed to students computes what model.attention_layer computes, from weights alone."""
    from grader.lab_api.trusted import Reference

    reference = Reference.of(lab2)
    layer = reference.model.attention_layer(16, n_heads=2, pos=pos, causal=causal, seed=1)
    opaque = reference.toy_attention.Attention(**reference.toy_attention.attention_weights(layer, 7))
    x = torch.randn(3, 7, 16)
    with torch.no_grad():
        assert torch.allclose(opaque(x), layer(x), atol=1e-5)
    assert type(opaque).__name__ == "Attention" and not vars(opaque).get("cfg")
    assert set(dict(opaque.named_buffers())) == {"qkv", "proj", "table", "bias", "cos", "sin"}


def test_layer_names_and_attributes_give_nothing_away(graded):
    """A submission that reads class names, `pattern`, `cfg.pos` or `causal` scores nothing."""
    results = graded("peek_layers")
    assert points(results, "is_permutation_invariant")[0] == 0


def test_reading_the_layers_weights_scores_at_most_a_third(graded):
    """Layers are sealed: rules on the numbers a layer holds (buffers, closure cells), which once
    answered every question, no longer do without running it on reordered inputs."""
    results = graded("read_weights")
    score, top = points(results, "is_permutation_invariant")
    assert score <= top / 3, (score, top)
    assert not [c.message for c in failures(results, "is_permutation_invariant") if c.failure], "it answers"


@pytest.mark.parametrize("answer", ["True", "False"])
def test_a_constant_answer_scores_nothing(grade_lab2, tmp_path, answer):
    (tmp_path / "invariance.py").write_text(f"def is_permutation_invariant(attn, x, atol=1e-5):\n    return {answer}\n")
    assert points(grade_lab2(tmp_path, ["is_permutation_invariant"]), "is_permutation_invariant")[0] == 0


def test_the_questions_no_narrowed_search_answers(lab2):
    """On the 3-cycle layer's x every swap of two positions keeps the sum, a 3-cycle does not; the
    sum-sized layer's sum changes by 3 atol, its mean over 6 positions by half atol."""
    layers = load_beside(lab2.folder / "public" / "test_invariance_basics.py", "layers")
    weights, x = layers.three_cycle(4, 2, 3, 0, torch.device("cpu"))
    layer = layers.toy_attention.Layer(**weights).double()
    summed = lambda order: layer(x.double()[:, order]).sum(1)                  # noqa: E731
    for i, j in [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]:
        order = [0, 1, 2, 3]
        order[i], order[j] = j, i
        assert torch.allclose(summed(order), summed([0, 1, 2, 3]), rtol=0, atol=1e-6)   # x is float32
    assert (summed([1, 2, 0, 3]) - summed([0, 1, 2, 3])).abs().max() > 0.05
    x = layers.inputs(2, 6, 3, 0, torch.device("cpu"))
    assert abs(layers.change(layers.sum_sized(x, 1e-2), x) - 3e-2) < 1e-8       # float32 gains


def test_the_same_layer_can_be_invariant_on_one_input_only(lab2):
    """The gated layer the checks ask about: shut on one input, open on another, and on a third shut
    in row 0 and open in row 1 (not invariant: every row counts)."""
    from grader.lab_api.trusted import Reference

    layers = load_beside(lab2.folder / "public" / "test_invariance_basics.py", "layers")
    weights, shut, opened, mixed = layers.gated(4, 3, 105, torch.device("cpu"))
    assert layers.truth("Layer", weights, shut, 1e-5) is True and layers.truth("Layer", weights, opened, 1e-5) is False
    assert layers.truth("Layer", weights, mixed, 1e-5) is False and layers.truth("Layer", weights, mixed[:1], 1e-5)
    sealed = Reference.of(lab2).toy_attention.sealed("Layer", layers.toy_attention.mask(weights, 7), 7)
    assert torch.allclose(sealed(opened), layers.toy_attention.Layer(**weights)(opened), atol=1e-6)


@pytest.mark.parametrize("submission", ["identity_rope", "constant_rope", "zeros_past_first", "constant_angle",
                                        "pairs_swapped"])
def test_doing_nothing_scores_nothing(graded, submission):
    """Every scored case has an input where the identity, a constant or zeros are wrong."""
    results = graded(submission)
    assert points(results, "rope_frequencies")[0] == 0 and points(results, "apply_rope")[0] == 0


def test_one_mistake_costs_in_one_function(graded):
    """apply_rope is given the right cos and sin: a wrong rope_frequencies costs only its own points."""
    results = graded("exponent_slip")
    score, top = points(results, "rope_frequencies")
    assert score < top and points(results, "apply_rope")[0] == points(results, "apply_rope")[1]
    assert any("the exponent uses i / head_dim" in c.message for c in failures(results, "rope_frequencies"))


def test_a_raised_exception_comes_with_its_known_cause(grade_lab2, tmp_path):
    """lab.yaml's exception_hints: a broadcast error in apply_rope is explained above its traceback."""
    (tmp_path / "positions.py").write_text("def apply_rope(x, cos, sin):\n    return x * cos - x * sin\n")
    results = grade_lab2(tmp_path, ["apply_rope"])
    raised = [c for c in results.checks if "must match the size" in c.message]
    assert raised and all("one angle per pair" in c.hint for c in raised)
    shown = [t.output.splitlines() for t in results.gradescope().tests if "must match the size" in t.output]
    assert len(shown) == len(raised) and all("one angle per pair" in lines[0] for lines in shown)


def test_stubs_score_zero_with_one_line_each(graded):
    results = graded("stubs")
    assert results.score == 0 and results.max_score > 0
    assert all(c.status == "not_implemented" for c in results.checks)
    assert {c.message for c in results.checks if c.tags == [c.function]} == {"not implemented yet"}


@pytest.mark.parametrize("submission, function, hint", [
    ("mistakes_a", "rope_frequencies", "cos and sin are swapped"),
    ("mistakes_a", "apply_rope", "half-split rotate_half"),
    ("mistakes_a", "is_permutation_invariant", "randperm(2)"),
    ("mistakes_b", "rope_frequencies", "positions start at 1"),
    ("mistakes_b", "apply_rope", "wrong sign"),
    ("mistakes_b", "apply_rope", "views of x"),
    ("mistakes_b", "is_permutation_invariant", "attn(x).sum(1)"),
    ("mistakes_b", "is_permutation_invariant", "atol=atol"),
    ("concatenated", "apply_rope", "concatenated [firsts..., seconds...] instead of interleaved"),
    ("inplace_invariance", "is_permutation_invariant", "x[:, perm] makes a copy"),
    ("fixed_reorderings", "is_permutation_invariant", "try every reordering"),
    ("device_ignored", "rope_frequencies", "pass device=device to torch.arange"),
    ("lesson_starter", "is_permutation_invariant", "rather than assert it, and reorder x's own positions"),
    ("mistakes_a", "is_permutation_invariant", "a random shuffle gives different answers from call to call"),
])
def test_mistakes_lose_points_with_their_hint(graded, submission, function, hint):
    results = graded(submission)
    score, top = points(results, function)
    assert score < top
    assert any(hint in c.message for c in failures(results, function)), \
        [c.message for c in failures(results, function)]


def test_mistakes_keep_points_of_correct_checks(graded):
    """A partial solution earns partial credit: properties that still hold still score."""
    results = graded("mistakes_a")
    assert 0 < points(results, "is_permutation_invariant")[0] < points(results, "is_permutation_invariant")[1]


def test_patched_allclose_and_zeros_score_zero(graded):
    results = graded("cheat_allclose")
    assert results.score == 0


def test_exits_fail_their_checks_and_grading_goes_on(graded):
    results = graded("crash_exit")
    assert results.score == 0
    said = lambda function, text: any(text in c.message for c in failures(results, function))
    assert said("rope_frequencies", "SystemExit")
    assert said("apply_rope", "exited with status 3")
    assert said("is_permutation_invariant", "SystemExit: bye")


@pytest.mark.slow
def test_endless_loop_keeps_other_points_and_finishes(graded):
    """One call runs into the loop, to its limit; the function's other checks are not run (it
    finishes in one call limit, however busy the machine: no wall time is asserted)."""
    results = graded("endless_rope")
    assert points(results, "rope_frequencies")[0] == points(results, "rope_frequencies")[1]
    assert points(results, "apply_rope")[0] == 0
    assert sum("no answer within" in c.message for c in results.checks) == 1
    assert sum("timed out in an earlier check" in c.message for c in results.checks) > 1


def test_flood_and_booby_traps_earn_nothing(graded, tmp_path):
    results = graded("flood_and_traps")
    assert results.score == 0
    flooded = [c for c in results.checks if c.output]
    assert flooded and all(len(c.output) < 2200 and "more bytes of output cut" in c.output for c in flooded)
    assert any("not plain data" in c.message for c in results.checks)
    assert not Path("/tmp/grader-was-pwned").exists()


def test_segfault_and_memory_hog_fail_cleanly(graded):
    results = graded("crash_segfault")
    messages = " ".join(c.message for c in results.checks if c.function == "is_permutation_invariant")
    assert "SIGSEGV" in messages and "MemoryError" in messages
    assert points(results, "is_permutation_invariant")[0] == 0


def test_select_one_function(grade_lab2):
    results = grade_lab2(ROOT / "reference/lab2", ["apply_rope"])
    assert results.checks and {c.function for c in results.checks} == {"apply_rope"}


def test_broken_stdout_does_not_break_the_child(graded):
    results = graded("stdout_sabotage")
    own = [c for c in results.checks if c.tags == ["is_permutation_invariant"]]
    assert own and all(c.status == "passed" for c in own)


def test_a_syntax_error_shows_the_line_not_importlib(graded):
    results = graded("syntax_error")
    messages = [c.message for c in results.checks if c.function == "rope_frequencies" and c.status == "failed"]
    assert messages and all("frozen" not in m and "importlib" not in m for m in messages), messages
    assert "SyntaxError: '(' was never closed" in messages[0] and "positions.py line 6" in messages[0]


@pytest.mark.parametrize("submission, function", [
    ("rope_rotation_matrix", "apply_rope"), ("rope_rotation_matrix", "rope_frequencies"),
    ("rope_empty_like", "apply_rope"), ("rope_empty_like", "rope_frequencies"),
    ("complex_rope", "apply_rope"), ("stacked_orders", "is_permutation_invariant"),
    ("device_object_cache", "rope_frequencies"), ("device_object_cache", "apply_rope"),
    ("more_styles", "rope_frequencies"), ("more_styles", "apply_rope"), ("more_styles", "is_permutation_invariant"),
    ("rope_jit", "apply_rope"), ("rope_asserts_circle", "apply_rope"), ("rope_vmap", "apply_rope"),
    ("rope_vmap", "rope_frequencies")])
def test_other_correct_styles_keep_full_marks(graded_one, submission, function):
    """Rotation matrices in x's dtype, float64 angles from Python numbers, empty_like and slices
    written in float32, complex numbers (.type_as(x)), every order stacked and regrouped, the device
    normalised with torch.device(device) and answers cached by it, cos and sin as views in a list, a
    custom autograd.Function, Heap's orders, TorchScript, asserts on the inputs' values, torch.func.vmap
    (whose batched tensors only the real meta device places): right for float64, float16, bfloat16 and
    meta inputs alike."""
    results = graded_one(submission, function)
    score, top = points(results, function)
    assert score == top > 0, [c.message for c in failures(results, function)]


GROUPS = {      # function -> {submission with only that slip: the words of its hint}
    "apply_rope": {"float32_rope": "FORCED_FLOAT32", "zeros_shape_rope": "MADE_ON_CPU",
                   "promoted_rope": "type promotion", "ignores_cos_sin": "the cos and sin it is given are not used"},
    "rope_frequencies": {"cpu_positions": "PART_ON_CPU", "device_ignored": "pass device=device to torch.arange",
                         "integer_exponent": "is integer division", "exponent_slip": "the exponent uses i / head_dim",
                         "exponent_from_one": "counts pairs from 1"},
    "is_permutation_invariant": {
        "mistakes_a": "random", "transpositions_only": "transpositions", "rotations_only": "rotations",
        "first_row_only": "first_row", "mean_not_sum": "mean", "exact_equality": "exact",
        "fixed_reorderings": "few", "inplace_invariance": "x[:, perm] makes a copy", "total_sum": "total",
        "unmoved_position": "unmoved", "first_positions_only": "unmoved", "any_with_own_order": "no_reorder",
        "loose_atol": "atol", "atol_as_rtol": "relative", "norm_of_difference": "norm", "norm_of_sums": "norm",
        "summed_over_batch": "batch", "own_default_atol": "atol", "previous_order": "neighbours",
        "sorted_positions": "sorted", "first_five_positions": "unmoved",
        "mean_abs_change": "average", "last_row_only": "last_row", "swaps_and_rotations": "swaps",
        "mean_over_rows": "average", "spread_of_orders": "spread", "mean_of_orders": "spread"},
}


def hint_words(lab2, function, words):
    """The text a hint starts with: a constant of rope.py or a key of slips.HINTS by name, else `words`."""
    rope, slips = helper(lab2, "rope"), helper(lab2, "slips")
    if function == "is_permutation_invariant" and words in slips.HINTS:
        return slips.HINTS[words][:60]
    return getattr(rope, words, words)[:60]


@pytest.mark.parametrize("function, submission", [(f, s) for f, group in GROUPS.items() for s in group])
def test_each_slip_gets_its_hint_and_no_other_slips(graded_one, lab2, function, submission):
    """The hint is chosen by the function's own answers: a submission with one slip loses points with
    that slip's hint, and gets none of the hints of the other slips of its function."""
    results = graded_one(submission, function)
    group = GROUPS[function]
    hints = [c.hint for c in failures(results, function)]
    own = hint_words(lab2, function, group[submission])
    assert points(results, function)[0] < points(results, function)[1]
    assert any(own in hint for hint in hints), hints
    others = [hint_words(lab2, function, words) for name, words in group.items() if group[name] != group[submission]]
    assert not [o for o in others for hint in hints if o in hint], hints
    assert not [hint for hint in hints if hint and own not in hint], hints      # no check names another slip


@pytest.mark.parametrize("submission", ["norm_of_difference", "norm_of_sums"])
def test_a_norm_costs_the_elementwise_clause_alone(graded_one, submission):
    """Sums compared through a norm (of their difference, or each sum's own) are one slip of one
    clause, "compared elementwise": its public and hidden checks fail, no other."""
    results = graded_one(submission, "is_permutation_invariant")
    assert sorted(c.test.split("::")[-1] for c in failures(results, "is_permutation_invariant")) == \
        ["test_sum_not_order", "test_summed_output"]


MUTANTS = [     # (a correct file, its function, a mutant's description, the words of the hint naming it)
    ("tests/submissions/rope_empty_like/positions.py", "apply_rope", "torch.empty_like(x) -> torch.empty(x.shape)",
     "MADE_ON_CPU"),
    ("reference/lab2/positions.py", "apply_rope", "returned as float32 (.float())", "FORCED_FLOAT32"),
    ("reference/lab2/positions.py", "rope_frequencies",
     "torch.arange(seq_len, device=device) -> torch.arange(seq_len, device='cpu')", "PART_ON_CPU"),
    ("reference/lab2/invariance.py", "is_permutation_invariant", "attn(every).sum(1) -> attn(every).mean(1)", "mean"),
    ("tests/submissions/stacked_orders/invariance.py", "is_permutation_invariant", "x[:, orders] -> x[0:1, orders]",
     "first_row"),
    ("reference/lab2/invariance.py", "is_permutation_invariant",
     "itertools.permutations(range(seq)) -> the swaps of two of it", "transpositions"),
    ("reference/lab2/invariance.py", "is_permutation_invariant",
     "itertools.permutations(range(seq)) -> the rotations of it", "rotations"),
    ("reference/lab2/invariance.py", "is_permutation_invariant",
     "itertools.permutations(range(seq)) -> one random order of it", "random"),
]


def mutant_folder(tmp_path, file, function, description):
    """A folder holding the mutant of `file` that grade.py mutants describes so."""
    from grader.author.mutate import mutants

    source = (ROOT / file).read_text()
    found = [m for m in mutants(source, Path(file).name, function) if m.description == description]
    assert found, [m.description for m in mutants(source, Path(file).name, function)]
    (tmp_path / Path(file).name).write_text(found[0].source)
    return tmp_path


@pytest.mark.slow
@pytest.mark.parametrize("file, function, description, words", MUTANTS, ids=[m[2] for m in MUTANTS])
def test_the_new_mutant_classes_lose_points_with_their_hint(grade_lab2, lab2, tmp_path, file, function,
                                                           description, words):
    """grade.py mutants' new classes (a new tensor's dtype/device, sum/mean, the batch index, the
    orders tried), made of correct code, lose points in the course with the hint that names them."""
    results = grade_lab2(mutant_folder(tmp_path, file, function, description), [function])
    assert points(results, function)[0] < points(results, function)[1]
    assert any(hint_words(lab2, function, words) in c.hint for c in failures(results, function)), \
        [c.hint for c in failures(results, function)]


def test_the_truths_are_computed_once_per_process(grade_lab2, lab2, monkeypatch):
    """A batch worker's or --watch's next grading asks the same questions: their truths (over every
    reordering, in float64) are not computed again."""
    layers = helper(lab2, "layers")
    computed = []
    change = layers._change
    monkeypatch.setattr(layers, "CHANGES", {})
    monkeypatch.setattr(layers, "_change", lambda *args: computed.append(1) or change(*args))
    first = grade_lab2(ROOT / "reference/lab2", ["invariance.py"])
    once = len(computed)
    second = grade_lab2(ROOT / "reference/lab2", ["invariance.py"])
    assert first.all_passed and second.all_passed and once == len(layers.CHANGES) > 10
    assert len(computed) == once


DROP_IN = {     # a submission that breaks apply_rope in the lab's own model only -> the words of its hint
    "view_noncontig": "NOT_CONTIGUOUS", "no_grad_rope": "NO_GRADIENT", "reshape_cos_inplace": "SECOND_CALL",
    "inplace_rope": "IN_PLACE"}


@pytest.mark.parametrize("submission", DROP_IN)
def test_full_marks_mean_drop_in(graded_one, lab2, submission):
    """Right on every tidy input, wrong in the lab's model (a permuted, non-contiguous q; a backward
    pass; the same cos and sin twice): every scored check of apply_rope fails, with the hint that
    names the slip, from one model call per grading."""
    results = graded_one(submission, "apply_rope")
    assert points(results, "apply_rope")[0] == 0
    own = hint_words(lab2, "apply_rope", DROP_IN[submission])
    hints = [c.hint for c in failures(results, "apply_rope")]
    assert all(own in hint or "cos.unsqueeze_" in hint for hint in hints), hints


def test_an_argument_reshaped_in_place_fails_unchanged(grade_lab2, tmp_path):
    """cos reshaped in place by a resize_ that a second call survives: the model works, and the
    check that arguments are left unchanged (shape and strides as well as values) fails, alone."""
    source = (SUBMISSIONS / "reshape_cos_inplace" / "positions.py").read_text()
    (tmp_path / "positions.py").write_text(source.replace(
        "cos.unsqueeze_(0).unsqueeze_(0)\n    sin.unsqueeze_(0).unsqueeze_(0)",
        "cos.resize_(1, 1, *cos.shape[-2:])\n    sin.resize_(1, 1, *sin.shape[-2:])"))
    results = grade_lab2(tmp_path, ["apply_rope"])
    failed = failures(results, "apply_rope")
    assert failed and all("unchanged" in c.name for c in failed), [c.name for c in failed]
    assert all("cos was changed in place from shape" in c.message and "cos.unsqueeze_" in c.hint for c in failed)


def test_the_lessons_apply_rope_loses_only_the_dtype_clause(graded_one, lab2):
    """The lesson's listing as typed: its float32 result for a half x costs the dtype checks alone
    (the device and model checks ask float32), each with the hint that names type promotion."""
    results = graded_one("lesson_apply_rope", "apply_rope")
    failed = failures(results, "apply_rope")
    assert failed and all("dtype" in c.name for c in failed), [c.name for c in failed]
    assert all(hint_words(lab2, "apply_rope", "PROMOTED")[:20] in c.hint for c in failed)
    assert sum(c.points for c in failed) == 3
    assert points(graded_one("lesson_apply_rope", "rope_frequencies"), "rope_frequencies")[0] > 0


def test_a_float64_result_loses_only_the_dtype_clause(graded_one, lab2):
    """Computed in float64 and returned so for every x: for a float32 x its values are right, and
    only the checks of x's dtype (a float16 or bfloat16 x: one public, two hidden) charge it, with
    the hint that names it; the value, device, new-tensor and model checks do not charge it again."""
    results = graded_one("rope_float64_out", "apply_rope")
    failed = failures(results, "apply_rope")
    assert failed and all("dtype" in c.name for c in failed), [c.name for c in failed]
    assert all(hint_words(lab2, "apply_rope", "FORCED_FLOAT64")[:20] in c.hint for c in failed)
    assert sum(c.points for c in failed) == 3


def test_returning_x_itself_is_caught_by_the_new_tensor_clause(graded_one, lab2):
    """x itself when nothing turns (one position): the checks that the result is a new tensor fail,
    saying so; no device check, and no other, is charged."""
    results = graded_one("returns_x_unturned", "apply_rope")
    failed = failures(results, "apply_rope")
    assert failed and all("new" in c.name and "x itself" in c.message for c in failed), [c.name for c in failed]
    assert all(hint_words(lab2, "apply_rope", "RETURNED_X") in c.hint for c in failed)


@pytest.mark.parametrize("submission, words", [
    ("half_positions", "positions in float16"), ("squeezed_frequencies", ".squeeze() drops it")])
def test_edge_slips_of_rope_frequencies(graded_one, submission, words):
    """Half-precision positions (wrong only past 2048) and a squeezed single position lose
    rope_frequencies' points with their hint."""
    results = graded_one(submission, "rope_frequencies")
    assert points(results, "rope_frequencies")[0] < points(results, "rope_frequencies")[1]
    assert any(words in c.hint for c in failures(results, "rope_frequencies"))


def test_exponents_from_a_float_step_lose_the_shape_check(graded_one):
    """torch.arange(0, 1, 2 / head_dim) for the exponents: right at most head_dims, one too many where the
    float step rounds (98): the hidden check of odd sizes asks head_dim 98 and fails it, alone."""
    results = graded_one("float_step_exponents", "rope_frequencies")
    failed = failures(results, "rope_frequencies")
    assert [c.points for c in failed] == [2] and "shape (4, 49)" in failed[0].message, [c.message for c in failed]


def test_float64_frequencies_lose_only_the_dtype_clause(graded_one):
    """cos and sin right but float64: the checks that ask float32 (one public, one hidden) fail,
    with the hint that says so; the value, base and size checks do not charge the dtype again."""
    results = graded_one("float64_frequencies", "rope_frequencies")
    failed = failures(results, "rope_frequencies")
    assert failed and all("float32" in c.name for c in failed), [c.name for c in failed]
    assert all("return cos and sin in float32" in c.hint for c in failed)
    assert sum(c.points for c in failed) == 2


def test_frequencies_shaped_for_broadcasting_lose_only_the_form_clause(graded_one, lab2):
    """cos and sin right, float32, where asked, but (1, 1, seq_len, head_dim // 2): the checks that ask
    the answer's form (float32, of its shape: one public, one hidden) fail with the hint that says so;
    the value, base, size and device checks judge the values they hold."""
    results = graded_one("broadcast_frequencies", "rope_frequencies")
    failed = failures(results, "rope_frequencies")
    assert failed and all("float32" in c.name for c in failed), [c.name for c in failed]
    assert all(hint_words(lab2, "rope_frequencies", "BROADCAST_SHAPE") in c.hint for c in failed)
    assert sum(c.points for c in failed) == 2


@pytest.mark.parametrize("submission, words", [
    ("rope_clockwise", "the angle has the wrong sign"), ("rope_half_split", "half-split rotate_half")])
def test_a_rotation_slip_costs_the_value_checks_alone(graded_one, submission, words):
    """Pairs turned the wrong way (or the wrong pairs), in x's dtype, where x is, as a new tensor:
    the value checks fail with the hint that names the slip; the dtype, device and new-tensor checks,
    whose clauses hold, do not charge it again."""
    results = graded_one(submission, "apply_rope")
    failed = failures(results, "apply_rope")
    assert failed and all(words in c.hint for c in failed), [c.hint for c in failed]
    kept = {c.name for c in results.checks if c.function == "apply_rope" and c.status == "passed"}
    assert sum("dtype" in name for name in kept) == 4, kept
    assert sum("where x is" in name for name in kept) == 2 and sum("unchanged" in name for name in kept) == 2, kept


def test_a_frequency_slip_costs_the_value_checks_alone(graded_one):
    """Positions from 1, as float32 on the device asked for: the value checks fail with the hint that
    names it; the device checks (a public one, two hidden), whose clause holds, do not charge it again."""
    results = graded_one("positions_from_one", "rope_frequencies")
    failed = failures(results, "rope_frequencies")
    assert failed and all("positions start at 1" in c.hint for c in failed), [c.hint for c in failed]
    kept = [c.name for c in results.checks if c.function == "rope_frequencies" and c.status == "passed"]
    assert len(kept) == 3 and all("device" in name for name in kept), kept


@pytest.mark.parametrize("submission, function", [("exponent_over_half_dim", "rope_frequencies"),
                                                  ("rope_sign_typo", "apply_rope"),
                                                  ("rope_second_sign_typo", "apply_rope")])
def test_a_slip_no_hint_names_costs_the_value_checks_alone(graded_one, submission, function):
    """A value slip no mistake of rope.py explains (the exponent over head_dim // 2; a sign typo in either
    output), in float32, where asked, as a new tensor: the value checks fail, with no hint (at base 100
    the exponent slip gives base 10000's angles: not the base ignored, which its default base shows);
    the dtype, device and new-tensor checks, whose clauses hold, do not charge it again."""
    results = graded_one(submission, function)
    failed = failures(results, function)
    assert failed and not [c.hint for c in failed if c.hint], [c.hint for c in failed]
    kept = [c.name for c in results.checks if c.function == function and c.status == "passed"]
    if function == "rope_frequencies":      # and head_dim 2, whose one pair has exponent 0 either way
        assert sum("device" in name for name in kept) == 3 and len(kept) == 4, kept
    else:
        assert sum("dtype" in name for name in kept) == 4, kept
        assert sum("where x is" in name for name in kept) == 2 and sum("unchanged" in name for name in kept) == 2, kept


def test_unsealing_a_layer_answers_no_one_token_question(graded):
    """The sealed layer holds what recovers its weights (it must, to run): rules read off the unsealed
    weights answer False for a position-weighted layer on x of one token, which no reordering changes,
    a question most checks ask: they score almost nothing, and no hint blames atol."""
    results = graded("unseal_weights")
    score, top = points(results, "is_permutation_invariant")
    assert score <= top / 10, (score, top)
    assert not [c.hint for c in failures(results, "is_permutation_invariant") if "atol" in c.hint]


def test_reordering_the_features_is_not_called_an_atol_slip(graded_one):
    """Every order of dim 2 (features), none of the positions: it answers True only where every
    feature of a token is the same, which once matched the atol slip's rule; no hint names atol."""
    results = graded_one("features_reordered", "is_permutation_invariant")
    hints = [c.hint for c in failures(results, "is_permutation_invariant")]
    assert points(results, "is_permutation_invariant")[0] == 0
    assert hints and not [h for h in hints if "atol" in h], hints


def test_reordering_the_batch_is_not_called_an_atol_slip(graded_one, lab2):
    """Every order of the batch, none of the positions: its answers depend on the batch size, which
    once matched the atol slip's rule (a one-row question True, a two-row one False); no hint names atol."""
    results = graded_one("batch_reordered", "is_permutation_invariant")
    hints = [c.hint for c in failures(results, "is_permutation_invariant")]
    assert hints and not [h for h in hints if hint_words(lab2, "is_permutation_invariant", "atol") in h], hints
