"""Batch grading: bad submissions each get a row and never stop the batch; scores equal single
grading; a rerun reuses unchanged results; Ctrl-C keeps what was graded and leaves nothing running."""
import csv
import io
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from rich.console import Console

from grader.core import submissions
from grader.core.results import Check, GradescopeResults, LabResults
from grader.instructor import batch
from grader.instructor.records import BatchRow, BatchSummary, StudentRecord
from grader.judge.launchers import launcher_for
from grader.lab_api import memo
from grader.readers.manifest import find_lab

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "reference" / "lab2"
SUBMISSIONS = Path(__file__).resolve().parents[1] / "submissions"
ONLY = ["-k", "invariance"]         # the point here is the batch, not the experiments


def grade_py(*args, **kwargs):
    return subprocess.run([sys.executable, str(ROOT / "grade.py"), *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "COLUMNS": "200", **kwargs.pop("env", {})}, **kwargs)


def zip_folder(path, folder, top=""):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in sorted(folder.glob("*.py")):
            archive.write(file, top + file.name)


@pytest.fixture(scope="module")
def lab():
    return find_lab("lab2")


# -- reading one submission: no grading, fast -------------------------------------------------------
def read(lab, path):
    files, status, detail = submissions.read_submission(lab, path)
    return sorted(files), status, detail


def test_folder_and_wrapped_zip_give_the_same_files(lab, tmp_path):
    zip_folder(tmp_path / "wrapped.zip", REFERENCE, top="my-lab2/")
    shutil.copytree(REFERENCE, tmp_path / "wrapped" / "inner")
    expected = (["experiments.py", "invariance.py", "positions.py"], "graded", "")
    assert read(lab, REFERENCE) == read(lab, tmp_path / "wrapped.zip") == read(lab, tmp_path / "wrapped") == expected


@pytest.mark.parametrize("entries, message", [
    ({"positions.py": b"x = 1\n", "../../x": b"escaped"}, "unsafe path in the zip: '../../x'"),
    ({"/etc/evil": b"x"}, "unsafe path in the zip: '/etc/evil'"),
    ({"positions.py": b"\0" * (50 * 2**20)}, "positions.py unzips to more than 1.0 MiB (a zip bomb?)"),
], ids=["traversal", "absolute", "bomb"])
def test_unsafe_zips_are_rejected(lab, tmp_path, entries, message):
    with zipfile.ZipFile(tmp_path / "s.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    files, status, detail = read(lab, tmp_path / "s.zip")
    assert (files, status) == ([], "rejected") and message in detail
    assert not (tmp_path.parent / "x").exists() and sorted(os.listdir(tmp_path)) == ["s.zip"]


def test_zip_limits(lab, tmp_path, monkeypatch):
    zip_folder(tmp_path / "s.zip", REFERENCE)
    monkeypatch.setattr(submissions, "ZIP_MAX_BYTES", 100)
    assert read(lab, tmp_path / "s.zip")[2].startswith("s.zip is 0.0 MiB; a submission .zip may have at most")
    monkeypatch.setattr(submissions, "ZIP_MAX_BYTES", 2**20)
    monkeypatch.setattr(submissions, "ZIP_MAX_ENTRIES", 2)
    assert read(lab, tmp_path / "s.zip")[2] == "the zip holds 3 entries; at most 2"
    monkeypatch.setattr(submissions, "ZIP_MAX_ENTRIES", 10)
    monkeypatch.setattr(submissions, "ZIP_MAX_UNZIPPED", 1000)
    assert "(a zip bomb?)" in read(lab, tmp_path / "s.zip")[2]
    (tmp_path / "bad.zip").write_bytes(b"PK\3\4 not really a zip")
    assert read(lab, tmp_path / "bad.zip") == ([], "rejected", "bad.zip is not a readable zip (File is not a zip file)")


def test_folder_problems(lab, tmp_path):
    (tmp_path / "empty").mkdir()
    assert read(lab, tmp_path / "empty")[1] == "empty"
    (tmp_path / "syntax").mkdir()
    (tmp_path / "syntax" / "positions.py").write_text("def rope_frequencies(:\n")
    shutil.copy(REFERENCE / "invariance.py", tmp_path / "syntax")
    files, status, detail = read(lab, tmp_path / "syntax")
    assert (files, status) == (["invariance.py", "positions.py"], "broken_code")
    assert detail == "positions.py line 1: invalid syntax; not submitted, graded as the stubs: experiments.py"
    (tmp_path / "binary").mkdir()
    (tmp_path / "binary" / "positions.py").write_bytes(bytes(range(256)))
    assert read(lab, tmp_path / "binary")[2].startswith("positions.py is not Python source (binary data)")
    (tmp_path / "big").mkdir()
    (tmp_path / "big" / "positions.py").write_bytes(b"#" * (2**20 + 1))
    assert read(lab, tmp_path / "big") == ([], "rejected",
                                           "positions.py is 1.0 MiB; a student file may have at most 1.0 MiB")
    (tmp_path / "link").mkdir()
    (tmp_path / "link" / "positions.py").symlink_to(REFERENCE / "positions.py")
    assert read(lab, tmp_path / "link") == ([], "rejected", "positions.py is a symbolic link; submit the file itself")


def test_listing_names_students_and_flags_duplicates(lab, tmp_path):
    (tmp_path / "alice").mkdir()
    zip_folder(tmp_path / "alice.zip", REFERENCE)
    zip_folder(tmp_path / "bob.zip", REFERENCE)
    (tmp_path / "notes.txt").write_text("hi")
    (tmp_path / "stray.py").write_text("x = 1")
    (tmp_path / ".DS_Store").write_text("")
    found = {s.student: (s.status, s.detail) for s in submissions.list_submissions(lab, tmp_path)}
    assert found == {"alice": ("rejected", "2 submissions for one student: 'alice', 'alice.zip' (names are compared "
                               "in any case and Unicode form): keep one"), "bob": ("graded", ""),
                     "stray.py": ("rejected", "stray.py is neither a folder nor a .zip: put each student's files "
                                              "in a folder (or .zip) of their own, named for them")}
    assert submissions.class_entries(lab, tmp_path)[1] == ["notes.txt"]       # listed as ignored


def test_one_student_in_two_forms_is_a_collision_graded_over_neither(lab, tmp_path):
    """Ada/ beside ada/ (one folder on macOS and Windows), José in NFC beside José in NFD, a name
    with a zero-width space, a name that only a disk that ignores case and trailing dots merges."""
    for name in ("Ada", "ada", "Jos\u00e9", "Jose\u0301.zip", "bo\u200bb", "Bob", "eve.", "EVE", "zed"):
        zip_folder(tmp_path / name, REFERENCE) if name.endswith(".zip") else shutil.copytree(REFERENCE, tmp_path / name)
    found = {s.student: s for s in submissions.list_submissions(lab, tmp_path)}
    assert {s: (sub.status, sub.collision) for s, sub in found.items()} == {
        "Ada": ("rejected", ("Ada", "ada")), "Jose\u0301": ("rejected", ("Jose\u0301.zip", "Jos\u00e9")),
        "Bob": ("rejected", ("Bob", "bo\ufffdb")), "EVE": ("rejected", ("EVE", "eve.")), "zed": ("graded", ())}
    assert all(not sub.files for sub in found.values() if sub.collision)


def test_a_file_named_in_another_case_is_named_with_the_expected_name(lab, tmp_path):
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "Positions.py").write_text("x = 1\n")
    shutil.copy(REFERENCE / "invariance.py", tmp_path / "s")
    files, status, detail = read(lab, tmp_path / "s")
    assert status == "incomplete" and "found 'Positions.py', expected 'positions.py'" in detail
    zip_folder(tmp_path / "z.zip", tmp_path / "s")
    assert "found 'Positions.py', expected 'positions.py'" in read(lab, tmp_path / "z.zip")[2]


# -- a class, through the command line ------------------------------------------------------------
@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    """A class of good, wrong and bad submissions, batch-graded once: (submissions, out, run)."""
    folder = tmp_path_factory.mktemp("class")
    subs = folder / "submissions"
    subs.mkdir()
    shutil.copytree(REFERENCE, subs / "ref")
    shutil.copytree(SUBMISSIONS / "mistakes_b", subs / "mistakes_b")
    zip_folder(subs / "wrapped.zip", REFERENCE, top="lab2-work/")
    (subs / "empty").mkdir()
    (subs / "corrupt.zip").write_bytes(b"not a zip at all")
    with zipfile.ZipFile(subs / "bomb.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("positions.py", b"\0" * (50 * 2**20))
    with zipfile.ZipFile(subs / "traversal.zip", "w") as archive:
        archive.writestr("invariance.py", (REFERENCE / "invariance.py").read_bytes())
        archive.writestr("../../escaped.py", b"print('out')")
    (subs / "syntax").mkdir()
    (subs / "syntax" / "positions.py").write_text("def rope_frequencies(:\n")
    shutil.copy(REFERENCE / "invariance.py", subs / "syntax")
    (subs / "binary").mkdir()
    (subs / "binary" / "positions.py").write_bytes(bytes(range(256)) * 8)
    out = folder / "out"
    run = grade_py("batch", "lab2", subs, "--out", out, "--workers", "2", *ONLY)
    return subs, out, run


def rows(out):
    with open(out / "grades.csv", newline="") as file:
        return {row["student"]: row for row in csv.DictReader(file)}


def test_every_submission_gets_a_row(graded_class):
    subs, out, run = graded_class
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    table = rows(out)
    top = table["ref"]["max_score"]
    assert {s: (r["status"], r["score"]) for s, r in table.items()} == {
        "ref": ("graded", top), "wrapped": ("graded", top), "mistakes_b": ("incomplete", table["mistakes_b"]["score"]),
        "syntax": ("broken_code", table["syntax"]["score"]), "binary": ("broken_code", "0"), "empty": ("empty", "0"),
        "corrupt": ("rejected", "0"), "bomb": ("rejected", "0"), "traversal": ("rejected", "0")}
    assert 0 < float(table["mistakes_b"]["score"]) < float(top)
    assert float(table["syntax"]["score"]) > 0          # invariance.py is graded beside the broken file
    assert table["ref"]["is_permutation_invariant"] == top and table["ref"]["passed"] == "yes"
    assert "unsafe path in the zip: '../../escaped.py'" in table["traversal"]["detail"]
    assert not list(subs.parent.rglob("escaped.py"))
    for student in table:                       # the Gradescope shape, graded or not
        results = GradescopeResults.model_validate_json((out / "students" / student / "results.json").read_text())
        assert results.score == float(table[student]["score"])
    summary = BatchSummary.model_validate_json((out / "summary.json").read_text())
    assert summary.students == 9 and summary.statuses["rejected"] == 3
    assert summary.checks[0].rate <= summary.checks[-1].rate
    assert any(m.students == ["mistakes_b"] and "attn(x).sum(1)" in m.hint for m in summary.mistakes)
    assert {p.student for p in summary.problems} == {"syntax", "binary", "empty", "corrupt", "bomb", "traversal"}
    assert "class summary" in run.stdout and "worst pass rate first" in run.stdout
    assert (out / "report.html").is_file() and all((out / "students" / s / "feedback.md").is_file() for s in table)


@pytest.mark.slow
def test_scores_equal_single_grading(graded_class, tmp_path):
    subs, out, _ = graded_class
    single = tmp_path / "single.json"
    run = grade_py("lab2", "--submission", subs / "mistakes_b", *ONLY, "--json", single)
    assert run.returncode == 1, run.stdout + run.stderr
    alone = GradescopeResults.model_validate_json(single.read_text())
    batched = GradescopeResults.model_validate_json((out / "students" / "mistakes_b" / "results.json").read_text())
    assert [(t.name, t.status, t.score) for t in batched.tests] == [(t.name, t.status, t.score) for t in alone.tests]
    assert batched.score == alone.score


@pytest.mark.slow
def test_rerun_reuses_unchanged_and_regrades_changed(graded_class):
    subs, out, _ = graded_class
    started = time.monotonic()
    run = grade_py("batch", "lab2", subs, "--out", out, *ONLY)
    assert run.returncode == 0 and time.monotonic() - started < 30, run.stdout + run.stderr
    assert BatchSummary.model_validate_json((out / "summary.json").read_text()).graded_now == 0
    before = rows(out)
    shutil.copy(REFERENCE / "invariance.py", subs / "mistakes_b" / "invariance.py")
    run = grade_py("batch", "lab2", subs, "--out", out, *ONLY)
    summary = BatchSummary.model_validate_json((out / "summary.json").read_text())
    after = rows(out)
    assert summary.graded_now == 1 and float(after["mistakes_b"]["score"]) > float(before["mistakes_b"]["score"])
    assert {s: r["score"] for s, r in after.items() if s != "mistakes_b"} == \
        {s: r["score"] for s, r in before.items() if s != "mistakes_b"}


def test_a_grade_made_with_a_memo_that_changed_since_is_not_reused(tmp_path, monkeypatch):
    """The judge's memos (grader/lab_api/memo.py) are part of what was graded: one that holds something
    else now (found unsound, computed again) regrades those graded with it; one deleted does not."""
    monkeypatch.setattr(memo, "STATE", tmp_path / ".grade")
    monkeypatch.setattr(memo, "_memory", {})
    monkeypatch.setattr(memo, "_used", {})
    memo.keep("recipe", ("run",), [1.0])
    results = LabResults(lab="lab2", title="t", submission="s", device="cpu", sandbox="process",
                         execution_time=0.0, checks=[], done_when=[], memos=memo.used())
    folder = tmp_path / "students" / "s"
    folder.mkdir(parents=True)
    (folder / "results.json").write_text("{}")
    (folder / "graded.json").write_text(StudentRecord(hash="h", row=BatchRow(student="s", status="graded"),
                                                      results=results).model_dump_json())
    assert batch._reusable(folder, "h") is not None
    memo.keep("recipe", ("run",), [1.5])
    assert batch._reusable(folder, "h") is None
    (tmp_path / ".grade" / memo.file_name("recipe", ("run",))).unlink()
    assert batch._reusable(folder, "h") is not None


@pytest.mark.slow
def test_force_regrades(tmp_path):
    (tmp_path / "subs").mkdir()
    zip_folder(tmp_path / "subs" / "solo.zip", REFERENCE)

    def graded_now(*args):
        run = grade_py("batch", "lab2", tmp_path / "subs", "--out", tmp_path / "out", "-k", "invariance",
                       "--workers", "1", *args)
        assert run.returncode == 0, run.stdout + run.stderr
        return BatchSummary.model_validate_json((tmp_path / "out" / "summary.json").read_text()).graded_now

    assert (graded_now(), graded_now(), graded_now("--force")) == (1, 0, 1)


@pytest.mark.slow
def test_ctrl_c_keeps_finished_results_and_leaves_nothing_running(lab, tmp_path):
    subs, scratch, out = tmp_path / "subs", tmp_path / "tmp", tmp_path / "out"
    scratch.mkdir()
    shutil.copytree(REFERENCE, subs / "a_ref")
    shutil.copytree(SUBMISSIONS / "endless_rope", subs / "b_endless")   # apply_rope never returns
    shutil.copytree(SUBMISSIONS / "mistakes_a", subs / "c_mistakes")
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "grade.py"), "batch", "lab2", str(subs), "--out", str(out), "-k", "positions",
         "--workers", "1"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True, env={**os.environ, "TMPDIR": str(scratch)})
    try:
        deadline = time.monotonic() + 180
        while not (out / "students" / "a_ref" / "graded.json").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1.0)                         # b_endless is being graded now
        os.killpg(process.pid, signal.SIGINT)   # what Ctrl-C in a terminal does
        output = process.communicate(timeout=60)[0]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, output
    assert "Traceback" not in output
    table = rows(out)
    assert table["a_ref"]["status"] == "graded" and table["a_ref"]["score"] == table["a_ref"]["max_score"]
    assert table["b_endless"]["status"] == table["c_mistakes"]["status"] == "pending"
    assert BatchSummary.model_validate_json((out / "summary.json").read_text()).interrupted
    record = StudentRecord.model_validate_json((out / "students" / "a_ref" / "graded.json").read_text())
    files = submissions.read_submission(lab, subs / "a_ref")[0]
    fingerprint = batch.lab_fingerprint(lab, ["positions"], "auto", launcher_for("auto").name)
    assert record.hash == batch.submission_hash(fingerprint, files)
    time.sleep(0.5)
    running = [pid for pid in os.listdir("/proc") if pid.isdigit() and _cwd(pid).startswith(str(scratch))]
    assert not running and not list(scratch.iterdir())


def _cwd(pid):
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return ""


# -- what students cannot do to the gradebook ----------------------------------------------------------
def test_student_names_cannot_replace_or_poison_the_gradebook(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    names = ["grades.csv", "summary.json", "students", '=HYPERLINK("x")', "red\x1b[31mname"]
    for name in names:
        (subs / name).mkdir(parents=True)           # empty: each is a row, nothing to grade
    for _ in range(2):                              # and again: a rerun must not break either
        run = grade_py("batch", "lab2", subs, "--out", out, *ONLY)
        assert run.returncode == 0, run.stdout + run.stderr
        table = rows(out)
        assert len(table) == len(names) and BatchSummary.model_validate_json((out / "summary.json").read_text())
    assert "'=HYPERLINK(\"x\")" in table and "\x1b" not in run.stdout + (out / "grades.csv").read_text()
    assert (out / "students" / "grades.csv" / "results.json").is_file()


def late_writers():
    return [p for p in os.listdir("/proc") if p.isdigit() and os.path.exists(f"/proc/{p}/cmdline")
            and b"late-writer-marker" in open(f"/proc/{p}/cmdline", "rb").read()]


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", ["process", "auto"])
def test_no_daemon_outlives_the_batch(tmp_path, sandbox):
    """A daemon that waits for the batch to end, then rewrites its gradebook, is dead by then."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    shutil.copytree(SUBMISSIONS / "late_writer", subs / "late")
    run = grade_py("batch", "lab2", subs, "--out", out, "--sandbox", sandbox, "-k", "rope_frequencies")
    assert run.returncode == 0, run.stdout + run.stderr
    written = (out / "grades.csv").read_text()
    assert late_writers() == []
    time.sleep(5)
    assert (out / "grades.csv").read_text() == written and "late_writer,100" not in written


# -- without grading: a stand-in for the workers ---------------------------------------------------------
def stand_in(lab, todo, workers, options, done):
    """A backend that grades nothing: every submission gets 0 points on one check."""
    check = Check(name="works", test="hidden/test_x.py::test_works", tags=[next(iter(lab.functions))], points=1,
                  score=0, status="failed", visibility="hidden")
    for sub in todo:
        done(sub, "graded", LabResults(lab=lab.name, title="t", submission="", device="cpu", sandbox="process",
                                       execution_time=0, checks=[check], done_when=[]).model_dump(mode="json"))
    return 1


def test_a_name_with_control_characters_forges_no_line(lab, tmp_path):
    subs = tmp_path / "subs"
    name = "evil\n✓ forged  74 of 74 graded\x1b[2K"
    (subs / name).mkdir(parents=True)
    shutil.copy(REFERENCE / "invariance.py", subs / name)
    terminal = io.StringIO()
    batch.grade_class(lab, subs, tmp_path / "out", Console(file=terminal, width=200), backend=stand_in)
    written = [terminal.getvalue(), *(p.read_text() for p in (tmp_path / "out").rglob("*") if p.is_file())]
    assert not any(line.lstrip().startswith("✓ forged") for text in written for line in text.splitlines())
    assert not any("\x1b" in text or "\\n✓" in text or "\\u001b" in text for text in written)
    safe = name.replace("\n", " ").replace("\x1b", "\ufffd")
    assert [p.name for p in (tmp_path / "out" / "students").iterdir()] == [safe]


@pytest.mark.slow
def test_the_resume_cache_is_keyed_on_content_not_on_where_the_course_lies(lab, tmp_path):
    """The same course in another folder reuses every grade; a changed lab file regrades."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    zip_folder(subs / "a.zip", REFERENCE)
    shutil.copytree(REFERENCE, subs / "b")
    batch.grade_class(lab, subs, out, Console(file=io.StringIO()), backend=stand_in)
    clone = tmp_path / "elsewhere" / "course"
    clone.mkdir(parents=True)
    for name in ("grade.py", "grader", "assignments", "reference", "quizzes"):
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy2
        copy(ROOT / name, clone / name, **({"ignore": shutil.ignore_patterns("__pycache__")}
                                           if copy is shutil.copytree else {}))
    script = ("import io, sys, grader; from rich.console import Console; from grader.instructor import batch\n"
              "from grader.readers.manifest import find_lab\n"
              "def refuse(lab, todo, *_): print('regraded', sorted(s.student for s in todo)); return 1\n"
              "batch.grade_class(find_lab('lab2'), sys.argv[1], sys.argv[2], Console(file=io.StringIO()), "
              "backend=refuse); print(grader.__file__)")

    def rerun():
        return subprocess.run([sys.executable, "-c", script, subs, out], cwd=clone, capture_output=True, text=True,
                              timeout=120, env={**os.environ, "PYTHONPATH": str(clone)})

    run = rerun()
    assert run.returncode == 0 and run.stdout.strip() == str(clone / "grader" / "__init__.py"), run.stdout + run.stderr
    (clone / "grader" / "labs" / "lab2" / "hidden" / "test_positions.py").write_text("# changed\n", "utf-8")
    assert "regraded ['a', 'b']" in rerun().stdout


def test_an_entry_skipped_for_its_name_is_listed_unless_it_is_known_junk(lab, tmp_path):
    """A student's `__ada.zip` or `.ada/` was dropped without a word; __MACOSX, .DS_Store and
    .git stay unlisted."""
    for junk in ("__MACOSX", ".git", "__pycache__"):
        (tmp_path / junk).mkdir()
    (tmp_path / ".DS_Store").write_text("")
    zip_folder(tmp_path / "__ada.zip", REFERENCE)
    (tmp_path / ".bob").mkdir()
    (tmp_path / "carl").mkdir()
    assert submissions.class_entries(lab, tmp_path)[1] == [".bob (a name starting with . or __ is never a "
                                                           "student's)", "__ada.zip (a name starting with . or __ "
                                                           "is never a student's)"]


def test_a_workers_layout_of_a_notebook_keeps_the_readers_sentences(tmp_path):
    from grader.instructor.workers import Plan, WarmGrader
    from grader.readers import notebook as reader

    lab = find_lab("lab2")
    path = tmp_path / "ada.ipynb"
    path.write_text('{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "code", '
                    '"metadata": {}, "source": "print(1)\\ndef apply_rope(x, cos, sin):\\n    return x\\n"}]}')
    files, status, detail = submissions.read_submission(lab, path)
    worker = WarmGrader.__new__(WarmGrader)     # its layout only: no zygote
    worker.lab, worker.plan, worker.scratch = lab, Plan(), tmp_path / "scratch"
    request = worker.request(files)
    laid, _ = submissions.submission_files(lab, request.submission, laid_out=request.laid_out)
    assert reader.notes(laid) == reader.notes(files) != []      # what grading did not run, said in its feedback
