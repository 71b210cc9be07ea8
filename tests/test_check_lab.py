"""`grade.py check-lab`: the guide's example lab is sound (its reference earns full marks, its stubs
nothing), and copies of it broken on purpose each fail with a sentence naming the problem."""
import re
import shutil
from pathlib import Path

from grader.author.check_lab import check_lab, manifest_fields
from grader.cli import main
from grader.labs import find_lab

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "tests" / "labs" / "example"


def broken_copy(tmp_path, path, old, new):
    """A copy of the example lab with `old` replaced by `new` in one file (the text must be there)."""
    lab = tmp_path / "example"
    shutil.copytree(EXAMPLE, lab, ignore=shutil.ignore_patterns("__pycache__"))
    text = (lab / path).read_text()
    assert old in text
    (lab / path).write_text(text.replace(old, new, 1))
    return find_lab(lab)


def test_example_lab_is_sound(zygote):
    problems, notes = check_lab(find_lab(EXAMPLE), zygote)
    assert problems == [] and [n for n in notes if not n.startswith("forbid: ")] == []   # what forbid: leaves open


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


def test_public_check_using_the_reference(tmp_path):
    lab = broken_copy(tmp_path, "public/test_attention_public.py", "def test_causal_mask_three(student):",
                      "def test_causal_mask_three(student, reference):")
    problems, _ = check_lab(lab)
    assert problems == ["public check public/test_attention_public.py::test_causal_mask_three uses the reference "
                        "fixture, which a release does not ship: learners would see it skipped; move it to "
                        "hidden/, or compute what it expects in the check"]


def test_forbidden_call_in_the_reference(tmp_path):
    lab = broken_copy(tmp_path, "reference/attention.py", "    return exp / exp.sum(dim=dim, keepdim=True)",
                      "    return torch.nn.functional.softmax(x, dim)")
    problems, _ = check_lab(lab)
    assert problems == ["the reference's attention.py line 8 uses torch.nn.functional.softmax, which lab.yaml "
                        "forbids in softmax"]


def test_function_without_checks_and_stray_checks(tmp_path):
    lab = broken_copy(tmp_path, "lab.yaml", "attention.py: [softmax, causal_mask]",
                      "attention.py: [softmax, causal_mask, scaled_scores]")
    (lab.folder / "checks").mkdir()
    (lab.folder / "checks" / "test_more.py").write_text("def test_nothing():\n    pass\n")
    problems, _ = check_lab(lab)
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
