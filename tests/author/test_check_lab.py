"""`grade.py check-lab`: the guide's example lab is sound (its reference earns full marks, its stubs
nothing), and copies of it broken on purpose each fail with a sentence naming the problem."""
import re
import shutil
from pathlib import Path

import pytest
import torch

from grader.author.check_lab import _left_open, check_lab, manifest_fields
from grader.learner.cli import main
from grader.readers.manifest import find_lab

from conftest import lab_in_form

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "tests" / "labs" / "example"


def broken_copy(tmp_path, path, old, new):
    """A copy of the example lab with `old` replaced by `new` in one file (the text must be there)."""
    lab = tmp_path / "example"
    shutil.copytree(EXAMPLE, lab, ignore=shutil.ignore_patterns("__pycache__"))
    text = (lab / path).read_text()
    assert old in text
    (lab / path).write_text(text.replace(old, new, 1))
    return find_lab(lab)


@pytest.mark.slow
def test_example_lab_is_sound(zygote):
    problems, notes = check_lab(find_lab(EXAMPLE), zygote)
    assert problems == [] and [n for n in notes if not n.startswith("forbid: ")] == []   # what forbid: leaves open


def test_a_rule_that_leaves_names_open_is_not_sound(tmp_path):
    """check-lab lists what a forbid: rule leaves open (named like it, refused by none, computing what
    no probe could show) and fails until lab.yaml's forbid_allowed names each."""
    lab = tmp_path / "norms"
    shutil.copytree(ROOT / "tests" / "labs" / "forbid_norms", lab, ignore=shutil.ignore_patterns("__pycache__"))
    assert _left_open(find_lab(lab))[0] == []
    text = (lab / "lab.yaml").read_text()
    (lab / "lab.yaml").write_text(text.replace("forbid_allowed: [torch.ao.nn.quantized.LayerNorm]", "")
                                  .replace(", torch._refs.native_layer_norm_fake]", "]"))
    problems, notes = _left_open(find_lab(lab))
    assert problems == ["forbid: torch.nn.functional.layer_norm leaves open torch.ao.nn.quantized.LayerNorm, "
                        "torch._refs.native_layer_norm_fake: named like it, none is refused and the judge could not "
                        "tell whether it computes the same; forbid each that does, and name the others in lab.yaml's "
                        "forbid_allowed"]
    assert "forbid: torch.nn.functional.layer_norm is refused as the ATen ops aten::layer_norm, " \
           "aten::native_layer_norm, under any name and at run time. The same computation from other ops stays " \
           "allowed, by design" in notes


def test_a_name_that_is_nothing_in_torch_is_not_sound(tmp_path):
    lab = broken_copy(tmp_path, "lab.yaml", "torch.Tensor.softmax,", "torch.Tensor.softmax, torch.sofmax,")
    assert [p for p in _left_open(lab)[0] if "torch.sofmax" in p] == [
        f"forbid: torch.sofmax is nothing in this torch ({torch.__version__}): only that name, as written, is "
        "refused in the source, and nothing at run time: forbid a name of torch's, or name it in lab.yaml's "
        "forbid_allowed"]


def test_reference_failing_a_check(tmp_path, zygote):
    lab = broken_copy(tmp_path, "reference/attention.py", "positions[None, :] <= positions[:, None]",
                      "positions[None, :] >= positions[:, None]")
    problems, _ = check_lab(lab, zygote)      # the hidden checks take their truth from the reference itself
    assert problems == ["the reference fails public/test_attention_public.py::test_causal_mask_three (failed): "
                        "expected [[1, 0, 0], [1, 1, 0], [1, 1, 1]]"]


def test_stubs_that_earn_points(tmp_path, zygote):
    lab = broken_copy(tmp_path, "handout/attention.py", '''that is when j <= i.
    """
    raise NotImplementedError''', '''that is when j <= i.
    """
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)''')
    problems, _ = check_lab(lab, zygote)
    assert "the pristine stubs pass hidden/test_attention.py::test_causal_mask[1]: an unwritten function " \
           "earns 2 points" in problems
    assert any(p.startswith("the stub of causal_mask does not raise NotImplementedError") for p in problems)


def test_check_without_points(tmp_path):
    lab = broken_copy(tmp_path, "hidden/test_attention.py", "@pytest.mark.grade(points=1, tags=[\"softmax\"])\n"
                      "def test_softmax_large", "@pytest.mark.grade(tags=[\"softmax\"])\ndef test_softmax_large")
    problems, _ = check_lab(lab)
    assert problems == ["check hidden/test_attention.py::test_softmax_large_inputs has no points: give its "
                        "marker points=N with N > 0 (it has None)"]


def test_check_with_unknown_tag_and_no_marker(tmp_path):
    lab = broken_copy(tmp_path, "public/test_attention_public.py", 'tags=["causal_mask"])',
                      'tags=["causal_masks"])\ndef test_spare(student):\n    pass\n\n\ndef test_unmarked(student):\n'
                      '    pass\n\n\n@pytest.mark.grade(points=1, tags=["causal_mask"])')
    problems, _ = check_lab(lab)
    assert problems == [
        "check public/test_attention_public.py::test_spare is tagged 'causal_masks', not a function of this lab "
        "(softmax, causal_mask)",
        "check public/test_attention_public.py::test_unmarked has no @pytest.mark.grade(points=N, tags=[...]): "
        "it cannot be scored"]


def test_public_check_using_the_reference(tmp_path, zygote):
    lab = broken_copy(tmp_path, "public/test_attention_public.py", "def test_causal_mask_three(student):",
                      "def test_causal_mask_three(student, reference):")
    problems, _ = check_lab(lab, zygote)
    assert problems == ["public check public/test_attention_public.py::test_causal_mask_three uses the reference "
                        "fixture, which a release does not ship: learners would see it skipped; move it to "
                        "hidden/, or compute what it expects in the check"]


def test_forbidden_call_in_the_reference(tmp_path, zygote):
    lab = broken_copy(tmp_path, "reference/attention.py", "    return exp / exp.sum(dim=dim, keepdim=True)",
                      "    return torch.nn.functional.softmax(x, dim)")
    problems, _ = check_lab(lab, zygote)
    assert problems == ["the reference's attention.py line 8 uses torch.nn.functional.softmax, which lab.yaml "
                        "forbids in softmax"]


def test_function_without_checks_and_stray_checks(tmp_path, zygote):
    lab = broken_copy(tmp_path, "lab.yaml", "attention.py: [softmax, causal_mask]",
                      "attention.py: [softmax, causal_mask, scaled_scores]")
    (lab.folder / "checks").mkdir()
    (lab.folder / "checks" / "test_more.py").write_text("def test_nothing():\n    pass\n")
    problems, _ = check_lab(lab, zygote)
    assert problems == ["checks/test_more.py is outside public/ and hidden/: its checks never run",
                        "scaled_scores (attention.py) has no check: add one with tags=['scaled_scores']"]


def test_command_line(tmp_path, capsys):
    lab = broken_copy(tmp_path, "hidden/test_attention.py", "points=2, tags=[\"causal_mask\"]",
                      "points=0, tags=[\"causal_mask\"]")
    assert main(["check-lab", str(lab.folder)]) == 1
    out = capsys.readouterr().out
    assert "test_causal_mask[1] has no points" in out and "example: 4 problems" in out
    assert main(["check-lab"]) == 2


def test_guide_lists_every_field():
    """docs/authoring.md's lab.yaml table is the one generated from the pydantic models."""
    guide = (ROOT / "docs" / "authoring.md").read_text()
    table = re.search(r"<!-- fields: python grade.py check-lab --fields -->\n(.*?)\n<!-- end of fields -->",
                      guide, re.S)
    assert table, "the guide has lost its generated table's markers"
    assert table.group(1).strip() == manifest_fields()


# -- labs written for earlier forms, and quiz files that do not load -------------------------------------
FORMS = {"first_form": "lab.yaml has no stubs: and the lab no stubs/ (an earlier form)",
         "reject_form": "`answer: [...]` with `reject: [...]` is an earlier form"}


def test_labs_of_every_earlier_form_still_grade(zygote, tmp_path):
    """tests/labs/forms/ keeps the example lab's lab.yaml and quiz in each earlier form: each is sound
    (its reference graded to full marks, its stubs to 0), with a note on what was translated."""
    for name, note in FORMS.items():
        problems, notes = check_lab(find_lab(lab_in_form(name, tmp_path)), zygote)
        assert problems == [], (name, problems)
        assert any(note in n for n in notes), (name, notes)


def test_the_earlier_quiz_forms_are_read_as_they_meant():
    forms = ROOT / "tests" / "labs" / "forms"
    from grader.quiz.answers import parse_answer
    from grader.quiz.grading import check
    from grader.quiz.model import load_quiz

    text = load_quiz(forms / "reject_form" / "quiz.yaml").questions[4]
    marks = {answer: check(text, parse_answer(text, answer))[0]
             for answer in ["s - t", "t-s", "their difference", "s + t", "the sum", "s - t or s + t"]}
    assert marks == {"s - t": True, "t-s": True, "their difference": True, "s + t": False, "the sum": False,
                     "s - t or s + t": False}
    first = load_quiz(forms / "first_form" / "quiz.yaml").questions[4]
    assert check(first, parse_answer(first, "minus infinity"))[0] and not check(first, parse_answer(first, "0"))[0]
    exam = load_quiz(forms / "reject_form" / "exam.yaml")
    assert not exam.keyed and exam.hard_questions[0].reveal is None and "reveals are dropped" in exam.notes[0]


BROKEN_QUIZ = [("quiz.yaml", "    answer: b\n", "    answer: z\n"),
               ("quiz.yaml", "  - id: mask-count\n", "  - id: mask-count\n    hint: count them\n")]


def broken_quiz_copy(tmp_path):
    lab = broken_copy(tmp_path, *BROKEN_QUIZ[0])
    path = lab.folder / BROKEN_QUIZ[1][0]
    path.write_text(path.read_text().replace(*BROKEN_QUIZ[1][1:], 1))
    return lab


def test_a_broken_quiz_file_never_stops_the_labs_grading(tmp_path, capsys):
    lab = broken_quiz_copy(tmp_path)
    code = main([str(lab.folder), "--submission", str(lab.reference)])
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0, out                                                    # graded: all passed
    assert "Total 25/25" in out
    assert "Lesson test its file is broken:" in out and "'shift' (#1), field 'answer'" in out
    assert "the lab is graded as usual" in out


def test_check_lab_reports_every_problem_not_the_first(tmp_path, zygote):
    lab = broken_quiz_copy(tmp_path)
    reference = lab.folder / "reference" / "attention.py"
    reference.write_text(reference.read_text().replace("positions[None, :] <= positions[:, None]",
                                                       "positions[None, :] >= positions[:, None]"))
    problems, _ = check_lab(lab, zygote)
    assert [p for p in problems if p.startswith("the quiz does not load")] == [
        f"the quiz does not load: {lab.quiz}: question 'shift' (#1), field 'answer': expected one of the choice "
        "keys a, b, c, got 'z'",
        f"the quiz does not load: {lab.quiz}: question 'mask-count' (#2), field 'hint': unknown field (check its "
        "spelling against the quiz schema in grader/quiz/model.py)"]
    assert any(p.startswith("the reference fails public/test_attention_public.py::test_causal_mask_three")
               for p in problems)                      # the quiz did not stop the grading
