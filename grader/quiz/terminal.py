"""The lesson test on screen (rich): take it, see the score and review, try the hard questions.

Three ways in, one per mode of `python grade.py quiz`:
  take_practice  keyed quiz: one question at a time, feedback after each, score, review, hard questions
  take_exam      exam form: the same questions, no feedback; answers go to a response file
  grade_answers / grade_class  no prompting: an answers file, or a class CSV into a gradebook
Answers given so far are saved after each one, so Ctrl-C or end of input loses nothing.
"""
import select
import signal
import sys
from pathlib import Path

from rich.console import Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from grader.quiz import grading, progress


def _shown(path):
    """A path as short as it can be shown: relative to where the learner is, when it is inside."""
    path = Path(path).resolve()
    return escape(str(path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path))


HOW_TO_ANSWER = {
    "single": "type the letter of one choice",
    "multiple": "type every letter that applies, e.g. a c",
    "numeric": "type a number",
    "text": "type a word or short phrase",
}


def take_practice(quiz, name, console):
    """The practice quiz; its QuizResult (also recorded), or None when stopped early."""
    saved_file = progress.progress_file(name)
    answers = _ask_all(quiz, console, saved_file, feedback=True)
    if answers is None:
        return None
    result = grading.grade(quiz, answers, name)
    progress.record_attempt(result)
    saved_file.unlink(missing_ok=True)
    show_result(quiz, result, console, lesson=progress.lesson_status(name))
    _hard_questions(quiz, console)
    return result


def take_exam(quiz, console, response_file):
    """The exam form: answers go to `response_file` for the instructor. True once all are answered."""
    if _ask_all(quiz, console, response_file, feedback=False) is None:
        return False
    console.print(Panel(f"All {len(quiz.questions)} questions answered. Your responses are in "
                        f"[bold]{_shown(response_file)}[/]: hand that file in to be graded.",
                        title="Done", border_style="cyan"))
    _hard_questions(quiz, console)
    return True


def grade_answers(quiz, name, answers_file, console):
    """Grade an answers file without prompting (an instructor's check): never recorded as an attempt."""
    result = grading.grade(quiz, grading.load_answers(quiz, answers_file), name)
    show_result(quiz, result, console)
    return result


def grade_class(quiz, name, responses_csv, gradebook_csv, console):
    """Grade a class's responses CSV into a gradebook CSV and summarise it on screen."""
    from grader.quiz import classroom  # the gradebook's CSV rules: not on a learner's path

    answers = classroom.grade_class(quiz, name, responses_csv, gradebook_csv)
    rows = answers.rows
    table = Table(title=Text(f"{quiz.title} · class results"), title_justify="left")
    for column in ("row", "student", "score", "status"):
        table.add_column(column)
    for row in rows:
        if row.result is None:
            score, status = "—", Text(row.status, style="yellow")
        else:
            score = f"{row.result.score}/{row.result.max}"
            status = Text("PASS", style="green") if row.result.passed else Text("FAIL", style="red")
            status.append("".join(f"\n{note}" for note in row.notes), style="yellow")
        table.add_row(str(row.row), Text(row.student[:60]), score, status)
    console.print(table)
    graded = [row for row in rows if row.result]
    duplicates = sum(row.status.startswith("duplicate") for row in rows)
    unread = sum(note.startswith(tuple(f"{q.id}: not read" for q in quiz.questions))
                 for row in graded for note in row.notes)
    not_graded = len(rows) - len(graded) - duplicates
    problems = [f"{not_graded} not graded (see status)" * bool(not_graded),
                f"{duplicates} duplicate rows not counted" * bool(duplicates),
                f"{unread} cells not read, each counted wrong (see notes)" * bool(unread)]
    read = "" if answers.kind == "responses" else " (read from a gradebook, not graded again)"
    console.print(f"Gradebook written to [bold]{_shown(gradebook_csv)}[/]{read}: {len(graded)} graded, "
                  f"{sum(row.result.passed for row in graded)} passed"
                  + "".join(f", [yellow]{problem}[/]" for problem in problems if problem))
    return rows


# ------------------------------------------------------------------------------------- asking

def _ask_all(quiz, console, saved_file, feedback):
    """Ask each unanswered question, saving after each answer; a question skipped with Enter comes
    back after the others. None if stopped early."""
    total = len(quiz.questions)
    answers = grading.load_answers(quiz, saved_file) if saved_file.exists() else {}
    mode = "practice: feedback after each answer" if feedback else "exam: answers go to the instructor"
    console.print(Panel(f"{total} questions. Get {quiz.needed} right ({quiz.pass_fraction:.0%}) to pass "
                        f"and complete this lesson.\nEnter skips a question: it comes back at the end. "
                        f"Ctrl-C stops; the answers you gave are kept.",
                        title=Text(f"Lesson test · {quiz.title}"), subtitle=mode, border_style="cyan"))
    if answers:
        console.print(f"Continuing: {len(answers)} of {total} answered earlier, kept in "
                      f"{_shown(saved_file)} (delete it to start over).")
    pending = [(number, q) for number, q in enumerate(quiz.questions, 1) if q.id not in answers]
    try:
        with CTRL_C:
            for last_round in (False, True):
                skipped = []
                for number, question in pending:
                    given = _ask(question, number, total, console, last_round)
                    if given is None:
                        skipped.append((number, question))
                        console.print("[dim]Skipped: " + ("left unanswered.[/]\n" if last_round else
                                                           "it comes back at the end.[/]\n"))
                        continue
                    answers[question.id] = given
                    grading.write_answers(saved_file, answers)
                    if feedback:
                        _feedback(question, given, console)
                if skipped and not last_round:
                    console.print(f"[bold]Back to the {len(skipped)} question(s) you skipped[/] "
                                  "(Enter again leaves one unanswered).")
                pending = skipped
    except (KeyboardInterrupt, EOFError):
        kept = (f" Your answers are kept in {_shown(saved_file)}; run the same command again "
                "to continue." if answers else "")
        console.print(f"\n[yellow]Stopped[/] with {len(answers)} of {total} answered.{kept}")
        return None
    return answers


def _ask(question, number, total, console, last_round=False):
    """Show one question and read answers until one is in the expected form; None for an Enter
    (skipped, or on the last round left unanswered)."""
    body = [Text(question.prompt)]
    if question.choices:
        choices = Table.grid(padding=(0, 2))
        for key, text in question.choices.items():
            choices.add_row(Text(key, style="bold cyan"), Text(text))
        body += [Text(""), choices]
    how = HOW_TO_ANSWER[question.type] + (" · Enter leaves it unanswered" if last_round else " · Enter skips")
    console.print(Panel(Group(*body), title=f"Question {number} of {total}", title_align="left",
                        subtitle=how, subtitle_align="right"))
    while True:
        typed = _read_line(console, "[bold cyan]›[/] ")
        if not typed.strip():
            return None
        try:
            return grading.parse_answer(question, typed)
        except grading.AnswerError as error:
            console.print(Text(str(error), style="yellow"))


class _CtrlC:
    """Ctrl-C during the quiz: raises KeyboardInterrupt as usual, and is remembered.

    Python can lose a KeyboardInterrupt raised while C code is failing: seen when Ctrl-C lands as
    rich first measures a non-ASCII character (it tries int("latest") and catches the ValueError).
    `_read_line` raises a remembered Ctrl-C again while it waits for the learner.
    """

    def __enter__(self):
        self.pressed = False
        self.previous = signal.signal(signal.SIGINT, self._press)
        return self

    def __exit__(self, *exc_info):
        signal.signal(signal.SIGINT, self.previous)

    def _press(self, signum, frame):
        self.pressed = True
        raise KeyboardInterrupt


CTRL_C = _CtrlC()


def _read_line(console, prompt):
    """input() after a rich prompt, except that at a terminal a Ctrl-C is never missed.

    input() waits in read(), where a Ctrl-C that came just before is noticed only after the next
    Enter; short select() waits let Python act on it within 0.2 s. A terminal hands over one whole
    line once select() says it is ready.
    """
    console.print(prompt, end="")
    if not sys.stdin.isatty() or sys.platform == "win32":     # Windows cannot select() on a console
        return input()
    while not select.select([sys.stdin], [], [], 0.2)[0]:
        if CTRL_C.pressed:
            raise KeyboardInterrupt
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line.rstrip("\n")


def _feedback(question, given, console):
    correct, why = grading.check(question, given)
    if correct:
        console.print("[green]✓ Right.[/]\n")
    else:
        why = f" {why[0].upper()}{why[1:]}." if why else ""
        console.print(Text.assemble(("✗ Not quite.", "red"), f"{why} The answer: {_show_key(question)}\n"))


def _show_answer(question, answer):
    """An answer as the learner would recognise it: 'x) the choice's text', 'x, z', '2.5'."""
    if answer is None:
        return "(no answer)"
    if not grading.in_key_form(question, answer):          # judged wrong as written
        return f"“{answer if len(answer) <= 80 else answer[:80] + '…'}”"
    if question.type == "single":
        return f"{answer}) {question.choices[answer]}"
    if question.type == "multiple":
        return ", ".join(answer)
    if question.type == "numeric":
        return f"{answer:g}" + (f" {question.unit}" if question.unit else "")
    return answer


def _show_key(question):
    if question.type == "numeric" and question.tolerance:
        return f"{_show_answer(question, question.answer)} (± {question.tolerance:g})"
    if question.type == "text":
        return question.answer.shown()
    return _show_answer(question, question.answer)


# ------------------------------------------------------------------------------------- results

def show_result(quiz, result, console, lesson=None):
    """Each question with the answer given, the key and the explanation; then score and PASS/FAIL,
    and, for a recorded attempt, where the lesson stands (`lesson`, a LessonStatus)."""
    console.rule("Review")
    review = Table.grid(padding=(0, 1))
    for number, (question, graded) in enumerate(zip(quiz.questions, result.questions), 1):
        mark = Text("✓", style="green") if graded.correct else Text("✗", style="red")
        answers = [Text(f"your answer: {_show_answer(question, graded.given)}")]
        if not graded.correct:
            answers.append(Text(f"the answer: {_show_key(question)}"))
        if graded.why:
            answers.append(Text(f"why not: {graded.why}", style="yellow"))
        lines = Group(Text(question.prompt, style="bold"), *answers,
                      Text(question.explanation, style="dim"), Text(""))
        review.add_row(mark, Text(f"{number}."), lines)
    console.print(review)
    if not result.passed:
        verdict, advice, colour = "FAIL", "read the explanations above and take it again", "red"
        if lesson is not None and lesson.test and lesson.test.attempts > 1:
            best = lesson.test
            advice += (f" · your best of {best.attempts} attempts counts: {best.score} of {best.max}, "
                       + ("passed" if best.passed else "not passed yet"))
    elif lesson is None:
        verdict, advice, colour = "PASS", "an answers file: graded, not recorded as an attempt", "green"
    else:
        verdict, colour = "PASS", "green"
        advice = lesson.line(result.quiz)
    console.print(Panel(f"[bold {colour}]{verdict}[/]  {result.score} of {result.max} right "
                        f"(pass: {result.needed} of {result.max}) · {advice}",
                        title=Text(f"Lesson test · {quiz.title}"), border_style=colour))


def _hard_questions(quiz, console):
    """Unscored: the learner types an attempt, then sees the reveal; Enter skips one until the end
    (the reveal waits for an attempt). Ctrl-C skips the rest."""
    if not quiz.hard_questions:
        return
    console.rule("Hard questions · unscored")
    console.print("Try to answer before you reveal: type your attempt, then Enter (Enter alone skips one "
                  "until the end)." if quiz.keyed else "Try each one: type your attempt, then Enter (the answers "
                  "come with the lesson, not the exam).")
    total, pending = len(quiz.hard_questions), list(enumerate(quiz.hard_questions, 1))
    try:
        with CTRL_C:
            for last_round in (False, True):
                skipped = []
                for number, hard in pending:
                    console.print(Panel(Text(hard.prompt), title_align="left",
                                        title=f"Hard question {number} of {total}"))
                    if not _read_line(console, "[bold cyan]your attempt ›[/] ").strip():
                        skipped.append((number, hard))
                        console.print("[dim]Skipped" + (": its reveal waits for an attempt.[/]" if last_round
                                                        else ": it comes back at the end.[/]"))
                    elif hard.reveal:
                        console.print(Panel(Text(hard.reveal), title="Reveal", title_align="left",
                                            border_style="green"))
                pending = skipped
    except (KeyboardInterrupt, EOFError):
        console.print("\n[dim]Hard questions skipped.[/]")
