"""Answers by meaning (grader/quiz/matching.py, expressions.py, answers.py): the lab 2 text
question against a table of right and wrong phrasings, each wrong one with its explanation; the
expression rule on its own; and the formats a person types for numbers and choices."""
import time

import pytest
import yaml

from grader.base.errors import QuizError
from grader.quiz.answers import AnswerError, parse_answer
from grader.quiz.grading import check
from grader.quiz.matching import judge
from grader.quiz.model import TextKey, load_quiz
from grader.quiz.number_words import read_runs
from grader.quiz.wording import one_edit

from conftest import LAB2_QUIZ

QUIZ = load_quiz(LAB2_QUIZ)
QUESTIONS = {question.id: question for question in QUIZ.questions}

# The lesson: "the result depends on m − n — relative distance falls out of the maths for free".
RIGHT = [
    "m - n", "n - m", "|m - n|", "|n-m|", "m − n", "m–n", "m-n.", "(m - n)", "'m - n'", "M - N", "m minus n",
    "n minus m", "(m - n) * theta", "(m-n)θ", "θ(m − n)", "2(m - n)", "-(n - m)",
    "the position of the key minus that of the query", "position of key minus position of query",
    "the query's position minus the key's", "query position minus key position", "only m - n, not m + n",
    "how many tokens separate them", "how far apart they are", "the relative distance between them",
    "relative distance m-n", "their offset", "the difference of the positions", "relative position",
    "the gap between positions", "how many positions apart", "their relative positions", "  Relative   DISTANCE ",
    "position delta", "the displacement between query and key", "m - n, the relative position",
    "positional difference", "how far the query is from the key", "the distance between m and n",
    "the difference of their absolute positions", "not the sum but the difference",
    "the difference, not the absolute positions",
    "it does not depend on the absolute positions, only on their difference",
    "neither the sum nor the product: the difference m - n", "the difference rather than the sum",
    "n subtracted from m", "the number of tokens between them", "the lag between query and key",
    "the separation of the two tokens", "the relative offset m - n", "the absolute difference",
    "the absolute value of m - n",
]
HEDGE, RULES_OUT, LIST, NONE = "names more than one candidate", "rules out", "bare list of words", "names none"
NOT_IT, NOT_EXPRESSION = "is not the quantity asked for", "is not m - n, even up to sign or a constant factor"
WRONG = {
    "m + n": NOT_EXPRESSION, "n + m": NOT_EXPRESSION, "m * n": NOT_EXPRESSION, "m/n": NOT_EXPRESSION,
    "m×n": NOT_EXPRESSION, "m times n": NOT_EXPRESSION, "m plus n": NOT_EXPRESSION, "m-n+1": NOT_EXPRESSION,
    "(m - n)^2": NOT_EXPRESSION, "cos((m - n)θ)": NOT_EXPRESSION, "i - j": NONE, "x - y": NONE,
    "m + n or m - n": HEDGE, "m - n or m + n": HEDGE, "the sum or the difference": HEDGE,
    "their sum, their product, their ratio or their difference": HEDGE,
    "maybe the difference, maybe the ratio": HEDGE, "their absolute positions or their difference": HEDGE,
    "difference sum product ratio": HEDGE, "relative absolute": HEDGE,
    "the absolute position of each, not the gap": RULES_OUT, "not the distance": RULES_OUT,
    "it does not depend on how far apart they are": RULES_OUT, "m + n, not m - n": RULES_OUT,
    "difference distance offset gap": LIST, "relative, offset, distance": LIST,
    "the absolute position": NOT_IT, "absolute positions": NOT_IT, "their sum": NOT_IT, "the product": NOT_IT,
    "the ratio of the positions": NOT_IT, "the sum of the positions": NOT_IT, "each position on its own": NOT_IT,
    "the total of m and n": NOT_IT,
    "the angle": NONE, "the rotation angle": NONE, "the frequency": NONE, "theta": NONE, "m": NONE, "n": NONE,
    "position": NONE, "m n": NONE, "m and n": NONE, "mn": NONE, "the dot product": NONE, "the position m": NONE,
    "the query position": NONE, "the key": NONE,
}


def test_the_table_is_large_enough():
    assert len(set(RIGHT)) >= 40 and len(WRONG) >= 40
    assert [q.id for q in QUIZ.questions if q.type == "text"] == ["rope-score"]      # the only text question


@pytest.mark.parametrize("answer", RIGHT)
def test_right_phrasings(answer):
    assert check(QUESTIONS["rope-score"], parse_answer(QUESTIONS["rope-score"], answer)) == (True, "")


@pytest.mark.parametrize("answer", WRONG)
def test_wrong_phrasings_say_why(answer):
    right, why = check(QUESTIONS["rope-score"], parse_answer(QUESTIONS["rope-score"], answer))
    assert not right and WRONG[answer] in why, why


def test_long_answers_are_judged_quickly():
    """Past 1,000 characters an answer is not a short phrase; below, the worst cases (one long
    expression, deep brackets) take well under a second: expressions are read 60 tokens at most."""
    rules = QUESTIONS["rope-score"].answer.rules
    right, why = judge("the difference " * 10_000, rules)
    assert not right and "150,000 characters long" in why
    for answer, expected in [("m * n + " * 124, False), ("(" * 495 + "m - n" + ")" * 495, True),
                             ("|" * 990, False), ("m n " * 240, False), ("not " * 240, False)]:
        start = time.process_time()
        assert judge(answer, rules)[0] is expected
        assert time.process_time() - start < 1.0, answer[:20]


def key(**fields):
    return TextKey.model_validate({"words": ["difference"]} | fields)


def test_expressions_are_compared_as_mathematics():
    exact, signed, scaled = key(expression="a - b"), key(expression="a - b", up_to=["sign"]), \
        key(expression="a - b", up_to=["factor"])
    assert judge("-b + a", exact.rules)[0] and judge("(a^2 - b^2)/(a + b)", exact.rules)[0]
    assert not judge("b - a", exact.rules)[0] and judge("b - a", signed.rules)[0]
    assert judge("|b - a|", signed.rules)[0] and not judge("2(a - b)", signed.rules)[0]
    assert judge("2(a - b)", scaled.rules)[0] and judge("(a - b)/π", scaled.rules)[0]
    assert not judge("a - b + 1", scaled.rules)[0] and not judge("(a - b)a", scaled.rules)[0]
    assert judge("((a - b)^2)^(1/2)", signed.rules)[0] and not judge("(a - b)^2^(1/2)", signed.rules)[0]
    assert not judge("__import__('os').system('x')", exact.rules)[0]           # text, never code


def test_a_key_that_cannot_be_read_fails_at_load(tmp_path):
    data = yaml.safe_load(LAB2_QUIZ.read_text())
    data["questions"][3]["answer"]["expression"] = "m - )"
    (tmp_path / "q.yaml").write_text(yaml.safe_dump(data, allow_unicode=True))
    with pytest.raises(QuizError, match="'rope-score'.*'answer'.*not an expression"):
        load_quiz(tmp_path / "q.yaml")
    data["questions"][3]["answer"] = 42
    (tmp_path / "q.yaml").write_text(yaml.safe_dump(data, allow_unicode=True))
    with pytest.raises(QuizError, match="expected a mapping with words"):
        load_quiz(tmp_path / "q.yaml")


def test_a_quiz_written_before_keys_had_meanings_still_loads(tmp_path):
    """The older form of a text key, a list of phrases that name the answer, is read as `words`."""
    data = yaml.safe_load(LAB2_QUIZ.read_text())
    data["questions"][3]["answer"] = ["m - n", "difference"]
    (tmp_path / "q.yaml").write_text(yaml.safe_dump(data, allow_unicode=True))
    key = load_quiz(tmp_path / "q.yaml").questions[3].answer
    assert key.words == ["m - n", "difference"] and key.expression is None


@pytest.mark.parametrize("typed", ["38.6", "38.6M", "38.6 M", "38.6m", "38.6 million", "38.6 mio", "~38.6",
                                   "about 38.6 million parameters", "38,597,376", "38597376", "38 597 376",
                                   "3.86e7", "3.86E7", "3.86 × 10^7", "3.86x10^7", "3.86·10⁷", "38,6",
                                   "38597.376k", "0.0386B", 38.6, 38597376])
def test_numbers_with_units_and_suffixes(typed):
    question = QUESTIONS["table-size"]
    assert check(question, parse_answer(question, typed))[0], parse_answer(question, typed)


@pytest.mark.parametrize("typed", ["lots", "nan", "inf", "1e999", "fourty", "thirty-eihgt point six"])
def test_not_numbers(typed):
    """No typo is forgiven in a number: a misspelt number word is no number."""
    with pytest.raises(AnswerError, match="is not a number: type digits"):
        parse_answer(QUESTIONS["table-size"], typed)


@pytest.mark.parametrize("typed", ["38.6 thousand", "39M", "38", "386", "3.86e6", "forty", "thirty-eight"])
def test_numbers_in_the_wrong_unit_are_wrong(typed):
    assert not check(QUESTIONS["table-size"], parse_answer(QUESTIONS["table-size"], typed))[0]


@pytest.mark.parametrize("typed", ["a, b and e", "a b e", "A,B,E", "a,b,e", "e b a", "a & b & e", "(a) (b) (e)",
                                   "a; b; e", "abe", "a/b/e", ["a", "b", "e"]])
def test_multiple_choice_forms(typed):
    assert parse_answer(QUESTIONS["order"], typed) == ["a", "b", "e"]


@pytest.mark.parametrize("typed", ["d", "D", "(d)", "d)", "d.", "option d", "ALiBi", "alibi", "ALiBi."])
def test_single_choice_by_letter_or_text(typed):
    assert parse_answer(QUESTIONS["methods"], typed) == "d"


@pytest.mark.parametrize("typed, choice", [("RoPE", "c"), ("rotary", "c"), ("sinusoidal", "b"),
                                           ("learned absolute positions", "a")])
def test_single_choice_by_enough_of_its_words(typed, choice):
    assert parse_answer(QUESTIONS["methods"], typed) == choice


@pytest.mark.parametrize("typed, word, near", [
    ("differnce", "difference", True), ("diffrence", "difference", True), ("differennce", "difference", True),
    ("diffreence", "difference", True), ("differance", "difference", True), ("difference", "difference", False),
    ("diffrnce", "difference", False), ("different", "difference", False), ("distnace", "distance", True),
    ("distant", "distance", False), ("either", "neither", True), ("sum", "summ", True), ("ab", "ba", True),
])
def test_one_edit_is_one_letter_added_dropped_changed_or_two_swapped(typed, word, near):
    assert one_edit(typed, word) is near and one_edit(word, typed) is near


@pytest.mark.parametrize("said, value, scaled", [
    ("thirty-eight point six million", 38.6e6, True), ("three hundred and seventy-six", 376, False),
    ("thirty eight million five hundred ninety-seven thousand three hundred seventy-six", 38597376, True),
    ("a million", 1e6, True), ("a hundred", 100, False), ("zero point zero three eight six billion", 0.0386e9, True),
    ("nineteen", 19, False), ("fifty thousand two hundred fifty-seven", 50257, True),
])
def test_numbers_said_in_words(said, value, scaled):
    words = [part for word in said.split() for part in word.replace("-", " - ").split()]
    [(start, stop, number, is_scaled, _)] = read_runs(words)
    assert (start, stop) == (0, len(words)) and number == pytest.approx(value) and is_scaled is scaled


@pytest.mark.parametrize("said, numbers", [
    ("eight thirty", [8, 30]), ("twenty twenty", [20, 20]), ("thirty-eight and thirty-nine", [38, 39]),
    ("thirty-eight million thirty-nine million", [38e6, 39e6]),
    ("thirty-eight million and thirty-nine million", [38e6, 39e6]), ("the one", [1]), ("point six", [6]),
])
def test_words_that_cannot_go_on_start_a_new_number(said, numbers):
    words = [part for word in said.split() for part in word.replace("-", " - ").split()]
    assert [number for *_, number, _, _ in read_runs(words)] == numbers
