"""Similar code: a copy with renamed variables and new formatting is one cluster; an independent
correct solution in another style is not; what the course gave (the stubs, the lesson's code)
counts for nothing, so a class that typed in the lesson is not flagged; alike to the reference is
a signal of its own."""
import ast
from pathlib import Path

from synthetic_class import COPIED, lesson_class

from grader.instructor import similarity
from grader.readers.manifest import Manifest

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "reference" / "lab2"
STUBS = ROOT / "grader" / "labs" / "lab2" / "stubs"
LESSON = ROOT / "grader" / "labs" / "lab2" / "given_code" / "lesson.py"
FUNCTIONS = {"rope_frequencies": "positions.py", "apply_rope": "positions.py",
             "is_permutation_invariant": "invariance.py"}


def files(folder):
    return {path.name: path.read_text() for path in Path(folder).glob("*.py")}


def compare(sources, lesson=True, reference=None):
    given = [*files(STUBS).values(), *([LESSON.read_text()] if lesson else [])]
    return similarity.similarity(sources, FUNCTIONS, given, reference)


def test_a_renamed_reformatted_copy_is_one_cluster():
    found = compare({"ada": {"invariance.py": COPIED[0]}, "bob": {"invariance.py": COPIED[1]},
                     "cy": files(REFERENCE)})
    [cluster] = found.clusters
    assert cluster.students == ["ada", "bob"] and cluster.functions == ["is_permutation_invariant"]
    assert cluster.pairs[0].score > 0.8 and "largest = max(largest, diff)" in cluster.pairs[0].code[1]


def test_an_independent_solution_in_another_style_is_not():
    found = compare({"ada": files(REFERENCE), "cy": files(ROOT / "tests" / "submissions" / "alternative_styles")})
    assert found.clusters == []


def test_comments_docstrings_formatting_and_names_change_no_token():
    def tokens(source):
        return similarity.tokens(ast.parse(source).body[0])
    plain = "def f(x, n):\n    total = x * n\n    return total.sum(dim=0)\n"
    dressed = 'def f(values, count):\n    """Doc."""\n    # a comment\n    acc = (values *\n           count)\n' \
              "    return acc.sum(\n        dim=0)\n"
    assert tokens(plain) == tokens(dressed)
    assert tokens(plain) != tokens(plain.replace("dim=0", "dim=1")) != tokens(plain.replace("sum", "mean"))
    renamed = "def f(values, count):\n    acc  =  values*count   # times\n    return acc.sum(dim=0)\n"
    assert similarity.line_shapes(renamed) == similarity.line_shapes(plain)      # lines up, whatever the names
    assert similarity.line_shapes(renamed) != similarity.line_shapes(plain.replace("dim=0", "dim=1"))


def test_what_the_handout_gave_counts_for_nothing():
    stub = files(STUBS)
    assert compare({"ada": stub, "bob": stub, "cy": files(REFERENCE)}).clusters == []     # two untouched stubs
    given = similarity.given_hashes([stub["invariance.py"]])
    kept = similarity.fingerprints(files(REFERENCE)["invariance.py"], "is_permutation_invariant", given)
    assert given & kept.whole and not given & kept.own


def test_a_class_that_typed_in_the_lesson_is_not_flagged(lab2, tmp_path):
    folders = lesson_class(lab2, tmp_path)
    sources = {folder.name: files(folder) for folder in folders}
    found = compare(sources, reference=files(REFERENCE))
    assert [c.students for c in found.clusters] == [["learner03", "learner08"]]       # their own code, shared
    assert {p.function for p in found.reference} == {"is_permutation_invariant"}       # learner00 has the reference's
    small = {name: sources[name] for name in list(sources)[:5]}        # too few for the class's idioms to go
    assert compare(small).clusters == []
    assert [c.students for c in compare(small, lesson=False).clusters] == [list(small)]   # the lesson, not given


def test_alike_to_the_reference_is_a_signal_of_its_own():
    found = compare({"ada": files(REFERENCE), "bob": {"invariance.py": COPIED[0]}}, reference=files(REFERENCE))
    assert found.clusters == [] and [(p.students, p.function) for p in found.reference] == [
        (("ada", similarity.REFERENCE), "is_permutation_invariant")]


def test_clusters_are_connected_groups_shown_once():
    def pair(a, b, score, function="f"):
        return similarity.Pair(function, (a, b), score, 1, ("", ""))
    found = similarity.clusters([pair("a", "b", 0.6), pair("d", "e", 0.9), pair("b", "c", 0.8, "g")])
    assert [c.students for c in found] == [["a", "b", "c"], ["d", "e"]]
    assert [p.score for p in found[0].pairs] == [0.8, 0.6] and found[0].functions == ["f", "g"]


def test_the_classes_idioms_are_left_out_of_a_large_class():
    same = {f"s{i}": files(REFERENCE) for i in range(similarity.COMMON_MIN)}
    assert compare(same).clusters == []                 # everyone's code: the lab's idiom, no lead
    [cluster] = compare(dict(list(same.items())[:3])).clusters
    assert cluster.students == ["s0", "s1", "s2"] and len(cluster.pairs) == 3       # a small class: one cluster


def test_given_code_is_an_optional_field_of_the_manifest(lab2):
    minimal = Manifest.model_validate({"title": "t", "handout": "h", "student_files": {"a.py": ["f"]}})
    assert minimal.given_code == [] and lab2.given_code == [LESSON]
