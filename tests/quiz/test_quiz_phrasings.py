"""Quiz answers as learners type them, against lab 2's quiz: choices by letter, by text or both,
sets, numbers, arithmetic, dashes and hedges; thousands separators by the answer's own evidence,
numbers in words, units that are no count, negations and verdicts scoped to their own choices,
reasons that name no choice, symbols multiplied, one-edit typos: each marked as a teacher would,
every leniency beside wrong answers it must still refuse. An answer a teacher would mark is never
refused: a hedge, a choice ruled out, a letter whose text is another choice's or a percentage given
for a count is judged wrong with its reason, the same at the terminal, in an answers file and in a
class export."""
import csv

import pytest

from grader.quiz.answers import AnswerError, parse_answer
from grader.quiz.grading import check
from grader.quiz.model import load_quiz

from conftest import LAB2_QUIZ, RIGHT, answers_file, run_cli

QUESTIONS = {question.id: question for question in load_quiz(LAB2_QUIZ).questions}
TWO, RULED_OUT, LETTER = "names more than one choice", "but names no choice", "its letter names"
NUMBERS, RANGE, NO_NUMBER = "more than one number", "is not one number", "but gives no number"
MEASURE = "not a count in millions"

# (question, answer, right, for a wrong answer judged as written: a fragment of its reason)
TABLE = [
    # one choice: by letter, text or both, in the forms people type
    ("methods", "d", True, ""), ("methods", "D", True, ""), ("methods", "d)", True, ""),
    ("methods", "(d)", True, ""), ("methods", "d.", True, ""), ("methods", "option d", True, ""),
    ("methods", "d)ALiBi", True, ""), ("methods", "d - ALiBi", True, ""), ("methods", "d – ALiBi", True, ""),
    ("methods", "d — ALiBi", True, ""), ("methods", "(d) ALiBi", True, ""), ("methods", "d: ALiBi", True, ""),
    ("methods", "ALiBi (d)", True, ""), ("methods", "ALiBi", True, ""), ("methods", "alibi.", True, ""),
    ("methods", "the answer is d", True, ""), ("methods", "I'd go with d", True, ""),
    ("methods", "probably ALiBi", True, ""), ("methods", "attention with linear biases", True, ""),
    ("methods", "I think it is ALiBi, because it adds a penalty to the scores", True, ""),
    ("methods", "ALiBi, not RoPE", True, ""), ("methods", "d not c", True, ""),
    ("methods", "The one that adds a bias is ALiBi (d), unlike RoPE which rotates", True, ""),
    ("methods", "d, since RoPE rotates queries and keys instead", True, ""),
    ("methods", "neither RoPE nor sinusoidal: ALiBi", True, ""),
    ("methods", "c", False, ""), ("methods", "RoPE", False, ""), ("methods", "rotary", False, ""),
    ("methods", "c) RoPE (rotary)", False, ""), ("methods", "sinusoidal positions", False, ""),
    ("methods", "learned absolute positions", False, ""), ("methods", "the answer is a", False, ""),
    ("methods", "ALiBi or RoPE", False, TWO), ("methods", "c or d", False, TWO), ("methods", "ALiBi/RoPE", False, TWO),
    ("methods", "d (or maybe c)", False, TWO), ("methods", "not ALiBi", False, RULED_OUT),
    ("methods", "not RoPE", False, RULED_OUT), ("methods", "d) RoPE", False, LETTER),
    ("methods", "c - ALiBi", False, LETTER),
    ("tied", "c", True, ""), ("tied", "c) weight tying", True, ""), ("tied", "weight tying", True, ""),
    ("tied", "tied embeddings", True, ""), ("tied", "c - weight tying", True, ""), ("tied", "I'd say c.", True, ""),
    ("tied", "The embedding matrix is reused, transposed, to produce logits", True, ""),
    ("tied", "Weight tying: the output projection reuses the embedding matrix", True, ""),
    ("tied", "c, because the output layer shares the embedding matrix instead of looking up a fixed meaning",
     True, ""),
    ("tied", "it's not a fixed meaning, it's weight tying", True, ""),
    ("tied", "a", False, ""), ("tied", "A", False, ""), ("tied", "sentence embeddings", False, ""),
    ("tied", "b or c", False, TWO), ("tied", "weight tying or sentence embeddings", False, TWO),
    ("tied", "not sentence embeddings", False, RULED_OUT),
    # sets
    ("order", "a, b, e", True, ""), ("order", "a b e", True, ""), ("order", "abe", True, ""),
    ("order", "A, B, E", True, ""), ("order", "options a, b, e", True, ""), ("order", "a, b and e", True, ""),
    ("order", "a) b) e)", True, ""), ("order", "b, a, e", True, ""), ("order", "a, b, e, not c or d", True, ""),
    ("order", "all except c and d", True, ""), ("order", "all but c and d", True, ""),
    ("order", "everything except c, d", True, ""), ("order", "a and b and e", True, ""),
    ("order", "a, b or e", True, ""), ("order", "a, b, e — position must be injected", True, ""),
    ("order", "bag of vectors, equivariant, and position must be injected", True, ""),
    ("order", "a,b,e are true; c and d are false", True, ""), ("order", "a, b, e (c is false, d is false)", True, ""),
    ("order", "c and d are not true, the rest are", True, ""), ("order", "[a, b, e]", True, ""),
    ("order", "a b", False, ""), ("order", "a, b, d", False, ""), ("order", "all of the above", False, ""),
    ("order", "none of them", False, ""), ("order", "all except c", False, ""),
    ("order", "a or b", False, "'or' offers a or b"),
    # numbers, in the question's unit (millions), with working and arithmetic
    ("table-size", "38.6", True, ""), ("table-size", "38.6M", True, ""), ("table-size", "≈ 38.6M", True, ""),
    ("table-size", "38,597,376", True, ""), ("table-size", "38597376", True, ""), ("table-size", "3.86e7", True, ""),
    ("table-size", "3.86 × 10^7", True, ""), ("table-size", "38,6", True, ""), ("table-size", "38.6?", True, ""),
    ("table-size", "50257*768 = 38,597,376", True, ""), ("table-size", "50257 × 768", True, ""),
    ("table-size", "50257 × 768 ≈ 38.6M", True, ""), ("table-size", "768*50257/1e6 = 38.6", True, ""),
    ("table-size", "about 38.6 million parameters (50257 x 768)", True, ""),
    ("table-size", "50257 rows times 768 columns, so 38.6M", True, ""),
    ("table-size", "It has 38.6 million parameters.", True, ""), ("table-size", "not 77.2 but 38.6", True, ""),
    ("table-size", "38.6 or 38,597,376", True, ""), ("table-size", "100 - 61.4", True, ""),
    ("table-size", "39", False, ""), ("table-size", "77.2", False, ""), ("table-size", "38.6 thousand", False, ""),
    ("table-size", "50257 + 768", False, ""), ("table-size", "−38.6", False, ""), ("table-size", "12.3", False, ""),
    ("table-size", "38.6 or 77.2", False, NUMBERS), ("table-size", "38.6 or 40", False, NUMBERS),
    ("table-size", "38.6-40", False, RANGE), ("table-size", "38.6 - 40", False, RANGE),
    ("table-size", "38–39", False, RANGE), ("table-size", "between 38 and 39", False, RANGE),
    ("table-size", "not 38.6", False, NO_NUMBER),
    # round four: thousands separators by the answer's own evidence
    ("table-size", "38.597.376", True, ""), ("table-size", "38 597 376", True, ""),
    ("table-size", "38'597'376", True, ""), ("table-size", "38\u2009597\u2009376", True, ""),
    ("table-size", "38.597.376,0", True, ""), ("table-size", "38,597,376.0", True, ""),
    ("table-size", "38.597", True, ""), ("table-size", "38,597", False, ""),
    ("table-size", "38,597 Mio.", True, ""), ("table-size", "38.597 Mio.", True, ""),
    ("table-size", "38,597 Millionen Parameter", True, ""), ("table-size", "38,597 million", False, ""),
    ("table-size", "38.597.376 ≈ 38,6 Mio", True, ""), ("table-size", "38,597 (38.597.376)", True, ""),
    ("table-size", "38.597.376 ≈ 38.597 thousand", True, ""), ("table-size", "38.597.3761", False, ""),
    ("table-size", "3.859.737", False, ""), ("table-size", "385.973.760", False, ""),
    # numbers in words: no typo forgiven in one
    ("table-size", "thirty-eight point six million", True, ""), ("table-size", "about 38.6 million", True, ""),
    ("table-size", "thirty eight million five hundred ninety-seven thousand three hundred seventy-six", True, ""),
    ("table-size", "thirty-eight million, five hundred and ninety-seven thousand, three hundred and seventy-six",
     True, ""),
    ("table-size", "thirty-eight point six", True, ""), ("table-size", "38.6M, i.e. one table", True, ""),
    ("table-size", "thirty-eight point six thousand", False, ""), ("table-size", "seventy-seven point two million",
                                                                    False, ""),
    ("table-size", "thirty-nine million", False, ""), ("table-size", "a million", False, ""),
    ("table-size", "thrity-eight point six million", False, ""), ("table-size", "thirty-eight point sixx", False, ""),
    ("table-size", "thirty-eight million and thirty-nine million", False, RANGE),
    ("table-size", "thirty-eight million or thirty-nine million", False, NUMBERS),
    ("table-size", "thirty-eight point six or seventy-seven point two", False, NUMBERS),
    ("table-size", "the one with thirty-eight point six million", True, ""), ("table-size", "38,597 or 38,6", True, ""),
    ("table-size", "38,597 or 37,5", False, NUMBERS),
    # units decide: a percentage or a memory size is not a count
    ("table-size", "38.6 million params", True, ""), ("table-size", "38.6M (154 MB in float32)", True, ""),
    ("table-size", "38.6%", False, MEASURE), ("table-size", "38.6 percent", False, MEASURE),
    ("table-size", "38.6 GB", False, MEASURE), ("table-size", "38.6 MB", False, MEASURE),
    ("table-size", "38.6MiB", False, MEASURE), ("table-size", "38.6 million bytes", False, MEASURE),
    ("table-size", "38.6 %", False, MEASURE), ("table-size", "38.6M params (about 15% of GPT-2)", True, ""),
    ("table-size", "386 hundred thousand", True, ""),
    ("table-size", "0.386 hundred million", True, ""), ("table-size", "38.6 M parameters ≈ 154 MB", True, ""),
    ("table-size", "38.6M is 31% of 124M", True, ""), ("table-size", "3.86 crore", True, ""),
    ("table-size", "50257 × 768 × 4 bytes = 154 MB", False, MEASURE), ("table-size", "31% of 124M", False, MEASURE),
    ("table-size", "38.6 GFLOPs", False, "an amount of compute"), ("table-size", "38,6 Mrd", False, ""),
    ("table-size", "38.6 trillion", False, ""), ("table-size", "77.2M is 62% of 124M", False, ""),
    ("table-size", "38.6 hundred thousand", False, ""),
    # negations scoped to the choices they name; a reason names no choice
    ("order", "a, b, e - c and d are false", True, ""), ("order", "a, b, e — c and d are wrong", True, ""),
    ("order", "a, b, e while c and d are false", True, ""), ("order", "c and d are false - a, b, e", True, ""),
    ("order", "a (because bag of words) and b and e", True, ""),
    ("order", "a, b, e - c and d are true", False, ""), ("order", "a, b - c, d and e are false", False, ""),
    ("order", "a, b, e, c and d are false", False, RULED_OUT), ("order", "a, b, e - not c", True, ""),
    ("order", "a, b, e are true and c, d are false", True, ""),
    ("order", "a: true, b: true, c: false, d: false, e: true", True, ""),
    ("order", "a true, b true, c false, d false, e true", True, ""),
    ("order", "a) true b) true c) false d) false e) true", True, ""),
    ("order", "a, b, e. c and d are not.", True, ""), ("order", "true: a, b, e; false: c, d", True, ""),
    ("order", "a, b, e apply, c and d don't", True, ""), ("order", "a is true, b is true, e is true", True, ""),
    ("tied", "a is wrong, c is right", True, ""),
    ("order", "a: true, b: true, c: true, d: false, e: true", False, ""), ("order", "a, b, c: false", False, RULED_OUT),
    ("order", "a true, b false, e true", False, ""), ("order", "true: a, b; false: c, d, e", False, ""),
    ("order", "a, b, e are true and c, d are too", False, ""), ("tied", "a is right, c is wrong", False, ""),
    ("order", "a b e (d - more heads - is false)", True, ""), ("order", "a, b, e - more heads is false", False, ""),
    ("methods", "(not c) d", True, ""), ("methods", "d because it biases, but not c", True, ""),
    ("tied", "c (because unlike b, it has nothing to do with word arithmetic)", True, ""),
    ("tied", "c (since unlike sentence embeddings it is reused for the output)", True, ""),
    ("tied", "c (because, unlike a, it is weight tying)", True, ""),
    ("tied", "a (because unlike c, it is a fixed meaning)", False, ""),
    ("tied", "c (because unlike b) and d", False, TWO),
    ("methods", "d (because unlike c, which rotates, it adds linear biases)", True, ""),
    ("methods", "c (because unlike ALiBi it rotates)", False, ""),
    ("methods", "d (because it adds a bias) or c", False, TWO),
    ("methods", "d (RoPE rotates instead)", True, ""), ("methods", "ALiBi (RoPE rotates instead)", True, ""),
    ("methods", "d (sinusoidal and learned positions are added to the embeddings)", True, ""),
    ("tied", "c (a token's vector is not a fixed meaning)", True, ""),
    ("tied", "c (sentence embeddings are a different model)", True, ""),
    ("order", "a, b, e (more heads don't help)", True, ""),
    ("methods", "d (rotary embeddings)", False, LETTER), ("methods", "d (rotray)", False, LETTER),
    ("methods", "d (ALiBi, as in BLOOM)", True, ""), ("methods", "d (RoPE works too)", False, ""),
    ("methods", "d (RoPE is also correct)", False, ""), ("methods", "d (maybe RoPE)", False, ""),
    ("methods", "d (RoPE is correct)", False, ""), ("methods", "c (ALiBi adds a bias instead)", False, ""),
    ("methods", "d (RoPE rotates) or c", False, TWO),
    # one-edit typos in a word the answer needs, never in a letter or a number
    ("methods", "alibl", True, ""), ("tied", "wieght tying", True, ""),
    ("order", "bag of vecotrs, permutation equivraiant, position must be injcted", True, ""),
    ("methods", "sinusiodal", False, ""), ("methods", "rotray", False, ""), ("tied", "sentense embeddings", False, ""),
    ("tied", "weight tieing", True, ""), ("tied", "they tie the input and output matrices", True, ""),
    # a function of the difference is not the difference; a myth or a lie is a verdict
    ("rope-score", "m - n squared", False, "more than one candidate"),
    ("rope-score", "the square of m - n", False, "is not the quantity asked for"),
    ("rope-score", "the log of the distance", False, "is not the quantity asked for"),
    ("rope-score", "sqrt of the difference", False, "is not the quantity asked for"),
    ("rope-score", "the squared difference", False, "more than one candidate"),
    ("rope-score", "the root cause is the difference", True, ""),
    ("rope-score", "the difference is a myth", False, "rules out"),
    ("tied", "tied embeddings are a myth", False, "rules out"), ("tied", "c is nonsense", False, "rules out"),
    ("tied", "a is a myth, c", True, ""), ("tied", "c. b is nonsense", True, ""),
    ("rope-score", "the difference, where the relative position lies", True, ""),
    # a function is named by its own words: "square" alone is a shape, "long" and "sort" are no typos of log and sqrt
    ("rope-score", "m - n, as long as both use the same θ", True, ""),
    ("rope-score", "the difference, however long the sequence is", True, ""),
    ("rope-score", "sort of the relative distance", True, ""),
    ("rope-score", "the difference; the rotation matrix is square", True, ""),
    ("rope-score", "m - n (the log of it is not needed)", True, ""),
    ("rope-score", "the difference, absolute positions are a fiction here", True, ""),
    ("rope-score", "the difference is a fiction", False, "rules out"),
    ("rope-score", "the logg of the distance", False, "is not the quantity asked for"),
    ("rope-score", "the cube root of the distance", False, "is not the quantity asked for"),
    ("tied", "c - tie the input and output embeddings", True, ""),
    ("tied", "a square matrix is reused transposed", True, ""),
    ("order", "a, b, e — c and d are myths", True, ""), ("order", "a, b, e are myths", False, ""),
    ("rope-score", "the differnce", True, ""), ("rope-score", "their distnace", True, ""),
    ("rope-score", "relatve position", True, ""), ("rope-score", "the seperation", True, ""),
    ("rope-score", "the positon of the key minus the positon of the query", True, ""),
    ("rope-score", "the diffrnce", False, "names none"), ("rope-score", "not the differnce", False, "rules out"),
    ("rope-score", "the differnce or the summ", False, "more than one candidate"),
    ("rope-score", "the summ", False, "is not the quantity asked for"),
    ("rope-score", "the differnce, either way", True, ""),
    ("rope-score", "the prodcut", False, "is not the quantity asked for"),
    # a reason after the answer names no candidate, unless it hedges
    ("rope-score", "m - n (because the absolute positions cancel)", True, ""),
    ("rope-score", "the difference, since the absolute positions cancel out", True, ""),
    ("rope-score", "m-n, whereas absolute position is lost", True, ""),
    ("rope-score", "because of their difference", True, ""), ("rope-score", "m - n, since it is not m + n", True, ""),
    ("rope-score", "the sum (because the difference cancels)", False, "is not the quantity asked for"),
    ("rope-score", "the difference, because it could also be the sum", False, "more than one candidate"),
    ("rope-score", "m - n (because maybe m + n)", False, "more than one candidate"),
    ("rope-score", "m - n (since absolute positions cancel) or m + n", False, "more than one candidate"),
    ("rope-score", "m - n. The sum matters too.", False, "more than one candidate"),
    # symbols written together are multiplied
    ("rope-score", "mθ - nθ", True, ""), ("rope-score", "m θ - n θ", True, ""), ("rope-score", "nθ − mθ", True, ""),
    ("rope-score", "mtheta - ntheta", True, ""), ("rope-score", "2mθ - 2nθ", True, ""),
    ("rope-score", "mθ-nθ", True, ""), ("rope-score", "mθ−nθ, the relative position", True, ""),
    ("rope-score", "mθ+nθ", False, "is not m - n"),
    ("rope-score", "the relative distance, mθ+nθ", False, "more than one"),
    ("rope-score", "mθ + nθ", False, "is not m - n"), ("rope-score", "mθ·nθ", False, "is not m - n"),
    ("rope-score", "mθ - nθ + 1", False, "is not m - n"), ("rope-score", "mn - nm", False, "names none"),
    # text: dashes by context
    ("rope-score", "Their difference — m−n", True, ""), ("rope-score", "m — n", True, ""),
    ("rope-score", "difference - m-n", True, ""), ("rope-score", "the query-key offset", True, ""),
    ("rope-score", "m – n", True, ""), ("rope-score", "m + n — not their difference", False, "rules out"),
    # a verdict after a mention rules it out in its own clause only
    ("rope-score", "the difference is irrelevant", False, "rules out"),
    ("rope-score", "the difference doesn't matter", False, "rules out"),
    ("rope-score", "m - n is wrong", False, "rules out"), ("rope-score", "m-n is false", False, "rules out"),
    ("rope-score", "the difference plays no role", False, "rules out"),
    ("rope-score", "the sum is irrelevant, only the difference matters", True, ""),
    ("rope-score", "absolute positions don't matter, only m - n", True, ""),
    ("rope-score", "their difference, absolute positions are irrelevant", True, ""),
    ("rope-score", "the difference (the sum would be wrong)", True, ""),
    ("rope-score", "m + n is wrong; m - n", True, ""), ("rope-score", "the sum is right", False, ""),
    # a dash ends a negation; "anything but" takes choices out of all of them
    ("methods", "Not RoPE — ALiBi", True, ""), ("methods", "not c - d", True, ""), ("tied", "not a - it's c", True, ""),
    ("methods", "not d - c", False, ""), ("methods", "anything but ALiBi", False, TWO),
    ("methods", "anything except d", False, TWO), ("order", "anything except c and d", True, ""),
    ("methods", "d, not anything else", True, ""), ("methods", "any but d", False, TWO),
    ("order", "any except c and d", True, ""),
    # LaTeX as typed; the whole after a share of it explains; "millions of bytes" is a memory size
    ("table-size", "$50257 \\times 768 = 38{,}597{,}376$", True, ""),
    ("table-size", "$3.86 \\cdot 10^7$", True, ""),
    ("table-size", "about 38.6 million, a third of a 100M model", True, ""),
    ("table-size", "38.6M, roughly a third of GPT-2's 124M", True, ""),
    ("table-size", "77.2M, half of 154M", False, ""),
    ("table-size", "38.6 or a third of 124M", False, NUMBERS), ("table-size", "a third of 124M", False, ""),
    ("table-size", "38.6 millions of bytes", False, MEASURE), ("table-size", "38.6 millions of parameters", True, ""),
    # a distance from the start is an absolute position
    ("rope-score", "the distance from the start", False, "is not the quantity asked for"),
    ("rope-score", "distance to the first token", False, "is not the quantity asked for"),
    ("rope-score", "the distance from the query to the key", True, ""),
    # a gloss after a list of letters may name any choice the list names by letter
    ("order", "a, b, e (permutation equivariant)", True, ""), ("order", "a, b, e (bag of vectors)", True, ""),
    ("order", "a, e (permutation equivariant)", False, LETTER), ("order", "a, b, e (more heads)", False, LETTER),
    # "rule out" rules out; "no" before punctuation answers what came before, ruling out nothing after
    ("methods", "I'd rule out d", False, RULED_OUT), ("methods", "d, ruling out c", True, ""),
    ("table-size", "I'd rule out 38.6", False, NO_NUMBER),
    ("rope-score", "I'd rule out the difference", False, "rules out"),
    ("rope-score", "ruling out the sum, the difference", True, ""),
    ("methods", "d? no, c", False, TWO), ("table-size", "38.6? no, 77.2", False, NUMBERS),
    ("methods", "no RoPE, ALiBi", True, ""), ("methods", "No. d", True, ""),
    # "+-" is ±; "not only", "anything but" rule out; "X is not what matters" is a verdict
    ("rope-score", "m +- n", False, ""), ("rope-score", "m +/- n", False, ""),
    ("rope-score", "not only the difference", False, "rules out"),
    ("rope-score", "anything but the difference", False, "rules out"),
    ("rope-score", "the difference is not what matters", False, "rules out"),
    ("rope-score", "not only the difference but also the sum", False, ""),
    ("rope-score", "absolute position difference", True, ""), ("rope-score", "m + -n", True, ""),
    # a number a verdict follows is ruled out; a bound is no number
    ("table-size", "38.6 is incorrect", False, NO_NUMBER), ("table-size", "38.6 is false", False, NO_NUMBER),
    ("table-size", "anything but 38.6", False, NO_NUMBER), ("table-size", "77.2 is wrong, 38.6", True, ""),
    ("table-size", "38.6 is wrong, 77.2", False, ""), ("table-size", "38.6M; 77.2 is wrong", True, ""),
    ("table-size", "over 38.6 million", False, "a bound"), ("table-size", "at least 38.6M", False, "a bound"),
    ("table-size", "> 38.6", False, "a bound"), ("table-size", "<38.6", False, "a bound"),
    ("table-size", "more than 38.6", False, "a bound"),
    ("table-size", "768 params per token over 50257 tokens = 38.6M", True, ""), ("methods", "d not so sure", True, ""),
    ("table-size", "38.6M (over a third of a 100M model)", True, ""),
    # a verdict "not ..." after a choice, "exclude", "no wait", a choice's own words denied
    ("methods", "ALiBi is not the answer", False, RULED_OUT), ("methods", "d isn't it", False, RULED_OUT),
    ("tied", "weight tying is not used", False, RULED_OUT), ("methods", "I'd exclude d", False, RULED_OUT),
    ("methods", "d - no wait, c", False, TWO),
    ("tied", "the embedding matrix is never reused", False, "names and rules out"),
    ("tied", "the embedding matrix, transposed, gives the logits", True, ""), ("tied", "c? not sure", True, ""),
    ("methods", "d, not the rotary one", True, ""), ("tied", "weight tying, not sentence embeddings", True, ""),
    # "|" joins letters; "the others are false" rules out only the others; "(c) and (d) are false" both
    ("order", "a | b | e", True, ""), ("order", "a b e — the others are false", True, ""),
    ("order", "a, b, e; (c) and (d) are false", True, ""), ("order", "a, b; (c), (d) and (e) are false", False, ""),
    ("order", "a b — the others are false", False, ""),
    # a name given a value ("d = 768") starts no chain with the answer before it
    ("table-size", "38.6M with d=768", True, ""), ("table-size", "38.6M, d_model = 768", True, ""),
    ("table-size", "77.2M with d=768", False, ""), ("table-size", "50257 × 768 = 38,597,376", True, ""),
    # "as opposed to", "unlike", "contrary to" rule out, in text answers too
    ("rope-score", "the difference, as opposed to the sum", True, ""),
    ("rope-score", "the difference, unlike absolute embeddings", True, ""),
    ("rope-score", "the sum, as opposed to the difference", False, "rules out"),
    ("methods", "ALiBi, as opposed to RoPE", True, ""), ("methods", "RoPE as opposed to ALiBi", False, ""),
    ("table-size", "38.6M, as opposed to 77.2M", True, ""), ("table-size", "77.2M as opposed to 38.6M", False, ""),
    ("tied", "the input embedding and the output projection share weights", True, ""),
    ("tied", "weight sharing between embedding and LM head", True, ""),
    ("tied", "not weight sharing", False, RULED_OUT),
    # what cancels or drops out is ruled out; a list with a phrase ruled out is a statement; "mθ" names m alone
    ("rope-score", "m - n. The sum cancels.", True, ""),
    ("rope-score", "the relative position m − n (absolute positions cancel)", True, ""),
    ("rope-score", "m-n (the offset). Absolute positions drop out.", True, ""),
    ("rope-score", "the absolute positions, the difference cancels", False, "rules out"),
    ("rope-score", "relative distance, not absolute", True, ""),
    ("rope-score", "relative distance rather than absolute position", True, ""),
    ("rope-score", "their relative position: the rotation by mθ and nθ leaves (m−n)θ", True, ""),
    ("rope-score", "mθ", False, "names none"), ("rope-score", "m² - n²", False, "is not m - n"),
    ("rope-score", "(m-n)²", False, "is not m - n"), ("rope-score", "(m−n)⁻¹", False, "is not m - n"),
    ("rope-score", "query pos - key pos", True, ""), ("rope-score", "the diff", True, ""),
    ("methods", "Ali Bi", True, ""),
    # a letter that "is" false is ruled out alone, a comma before it joins nothing
    ("tied", "c, d is wrong since sentence embeddings come from a different model", True, ""),
    ("order", "a b e, d is bogus", True, ""), ("order", "a, b, e, c is false", True, ""),
    ("order", "a, b, d is false", False, ""),
    # a prompt's number quoted after the answer ends no chain; "just under" is about; a share beside the answer explains
    ("table-size", "38.6M — each row is a 768-dim vector", True, ""),
    ("table-size", "just under 38.6M", True, ""), ("table-size", "slightly over 38.6 million", True, ""),
    ("table-size", "a bit under 38.6M", True, ""), ("table-size", "just under 40M", False, ""),
    ("table-size", "38.6 M (≈1/3 of 124M)", True, ""), ("table-size", "38.6 M, 1/3 of GPT-2", True, ""),
    ("table-size", "77.2M (2/3 of 124M)", False, ""), ("table-size", "1/3 of 124M", False, NUMBERS),
    # a constant's index is the constant; "position m" is m
    ("rope-score", "$m\\theta_i - n\\theta_i$", True, ""), ("rope-score", "(m-n)\\theta_{i}", True, ""),
    ("rope-score", "mθ_i + nθ_i", False, "is not m - n"), ("rope-score", "position m minus position n", True, ""),
    ("rope-score", "position m plus position n", False, "is not m - n"),
    # more functions of the difference, a distance from position 0 and a summed distance are not it
    ("rope-score", "the exponential of the distance", False, "is not the quantity asked for"),
    ("rope-score", "the sine of the offset", False, "is not the quantity asked for"),
    ("rope-score", "the inverse of the distance", False, "is not the quantity asked for"),
    ("rope-score", "the distance from position 0", False, "is not the quantity asked for"),
    ("rope-score", "how far apart they are, summed", False, "more than one candidate"),
    ("rope-score", "the distance from position n to position m", True, ""),
    ("rope-score", "the difference, since the rotations are inverse of each other", True, ""),
    # a verdict rules out its own clause only ("after", "when"... start one); "slightly less than" is about
    ("rope-score", "the difference remains after the absolute angles cancel", True, ""),
    ("rope-score", "the sum remains when the differences cancel", False, "rules out"),
    ("table-size", "slightly less than 38.6M", True, ""), ("table-size", "a little under 38.6M", True, ""),
    ("table-size", "a bit over 40M", False, ""),
    # short forms learners type
    ("rope-score", "rel. position", True, ""), ("rope-score", "rel pos", True, ""),
    ("rope-score", "dist(m, n)", True, ""), ("rope-score", "the relative pos m-n", True, ""),
    ("rope-score", "the absolute pos of each token", False, "is not the quantity asked for"),
    ("tied", "shared input/output embeddings", True, ""), ("tied", "tied input and output embeddings", True, ""),
    # a bracket whose letters each begin an unconditional claim gives a reason and names no choice
    ("methods", "d (c rotates instead)", True, ""), ("tied", "c (b comes from word2vec)", True, ""),
    ("order", "a, b and e (c: token ids are not positions; d: heads don't add order)", True, ""),
    ("order", "a, b (and e)", True, ""), ("order", "a, b, e (c if ids are in order)", False, ""),
    ("methods", "d (c is also correct)", False, TWO),
    # a colon ends a negation, even before a letter ("false: c, d" still lists what is false)
    ("tied", "not a, not b, not d: c", True, ""), ("methods", "not c: d", True, ""),
    ("order", "not c, not d: a, b, e", True, ""), ("tied", "not c: a", False, ""),
    # "yes" and "no" after a letter are its verdict
    ("order", "a: yes, b: yes, c: no, d: no, e: yes", True, ""), ("order", "a yes b yes c no d no e yes", True, ""),
    ("methods", "a: no, b: no, c: no, d: yes", True, ""), ("tied", "c: no", False, RULED_OUT),
    ("order", "a: yes, b: no, c: no, d: no, e: yes", False, ""),
    # a precision after a number is how it is rounded, not a second value
    ("table-size", "38.6 (1 d.p.)", True, ""), ("table-size", "38.6 (rounded to 1 decimal)", True, ""),
    ("table-size", "38.6M to 3 significant figures", True, ""), ("table-size", "38.6 (3 s.f.)", True, ""),
    ("table-size", "38.5 (1 d.p.)", False, ""), ("table-size", "1 decimal place", False, "a precision"),
    # a prompt's number in brackets is still the prompt's number, quoted as working
    ("table-size", "(50257)(768) = 38,597,376", True, ""), ("table-size", "(50,257)(768) ≈ 38.6M", True, ""),
    ("table-size", "(50257)(768)(2) = 77.2M", False, ""),
    # a choice whose letter is ruled out is not named again by its alias: the alias gives the reason
    ("order", "a, b, e. Not c: ids don't encode position. Not d: more heads don't help.", True, ""),
    ("order", "a, b, e; d is false: more heads are as blind", True, ""), ("order", "a, b, e, more heads", False, ""),
    # the numbers of a numbered list of letters are no choice
    ("order", "1) a 2) b 3) e", True, ""), ("order", "1. a 2. b 3. e", True, ""), ("order", "1) a 2) b", False, ""),
    # a quantity said to be absent ("never appears", "is lost", "vanishes") is ruled out in its clause
    ("rope-score", "m - n; the absolute positions don't appear", True, ""),
    ("rope-score", "the difference m - n; the sum m + n never appears", True, ""),
    ("rope-score", "The relative position m−n. Absolute position information is lost in the dot product.", True, ""),
    ("rope-score", "the sum vanishes, the difference survives", True, ""),
    ("rope-score", "the difference never appears", False, "rules out"),
    ("rope-score", "m + n; m - n is lost", False, "rules out"),
    # e raised to the difference is a function of it, as exp(m - n) is
    ("rope-score", "e^(m-n)", False, "is not m - n"), ("rope-score", "$e^{m-n}$", False, "is not m - n"),
    ("rope-score", "e**(m - n)", False, "is not m - n"), ("rope-score", "m - n, e.g. 5 - 2", True, ""),
    # the whole after a percentage "of the" explains, as after "of"
    ("table-size", "38.6 (so ~31% of the 124M model)", True, ""),
    ("table-size", "38.6M, 31% of a 124M model", True, ""),
    ("table-size", "31% of the 124M model", False, MEASURE), ("table-size", "77.2M (62% of the 124M model)", False, ""),
    # "a" before a hedge ("a too", "a also", "a as well") is a letter, never an article
    ("tied", "c, a too", False, TWO), ("tied", "c (a also holds)", False, TWO), ("tied", "c, a as well", False, TWO),
    ("tied", "c, a matrix reused as the output layer", True, ""),
    # "a trap" and "a distractor" are verdicts, as "a myth" is
    ("order", "a, b, e; c is a trap", True, ""), ("order", "a, b, e; c and d are distractors", True, ""),
    ("tied", "c is a trap", False, RULED_OUT), ("rope-score", "m - n; the sum is a trap", True, ""),
    ("rope-score", "the difference is a trap", False, "rules out"),
    # round five: markup and control characters are no part of an answer; a line break ends an item
    ("table-size", "<b>38.6</b>", True, ""), ("table-size", "<p>38.6M</p>", True, ""),
    ("table-size", "3.86 × 10<sup>7</sup>", True, ""), ("table-size", "38.6\x1b[0m", True, ""),
    ("table-size", "<b>77.2</b>", False, ""), ("methods", "<b>d</b>", True, ""), ("methods", "<i>c</i>", False, ""),
    ("methods", "d\x07", True, ""),
    ("order", "a, b, e\nc and d are false", True, ""), ("order", "a\nb\ne", True, ""),
    ("order", "a, b, e\nnot c or d", True, ""), ("order", "a, b,\ne", True, ""),
    ("order", "a, b\nc, d and e are false", False, ""), ("order", "a, b, e\nd", False, ""),
    # "minus" before a number is its sign
    ("table-size", "minus 38.6", False, ""), ("table-size", "negative 38.6", False, ""),
    ("table-size", "38.6 (not negative)", True, ""),
    # a verdict before a reason ends its clause; "a=true" is a verdict; a list joined otherwise ends at a comma
    ("tied", "c — a is wrong since later layers rewrite the vector", True, ""),
    ("tied", "c — a is right since later layers keep it", False, TWO),
    ("order", "a=true b=true c=false d=false e=true", True, ""),
    ("order", "a=true b=false c=false d=false e=true", False, ""),
    ("order", "a b e, c and d are false", True, ""), ("order", "a, b and e, c and d are false", True, ""),
    ("order", "a b, c and d are false", False, ""),
    # "=" ends an expression: each side is read on its own
    ("rope-score", "mθ − nθ = (m − n)θ", True, ""), ("rope-score", "Δ = m − n", True, ""),
    ("rope-score", "mθ − nθ = (m + n)θ", False, "more than one candidate"),
    ("rope-score", "m + n = m - n", False, "more than one candidate"),
    # Indian grouping; digits with scale words are one number; "point" between digits; gigaflops compute
    ("table-size", "3,85,97,376", True, ""), ("table-size", "7,71,94,752", False, ""),
    ("table-size", "38,59,73,76", False, NUMBERS), ("table-size", "38 million 597 thousand 376", True, ""),
    ("table-size", "38 million 600 thousand", True, ""), ("table-size", "38 million 500 thousand", False, ""),
    ("table-size", "38 thousand 600", False, ""), ("table-size", "38 point 6", True, ""),
    ("table-size", "77 point 2", False, ""), ("table-size", "38.6 gigaflops", False, "an amount of compute"),
    # "not right", "isn't it" after a number rule it out; a value ruled out continues no chain
    ("table-size", "38.6 is not right", False, NO_NUMBER), ("table-size", "38.6 isn't it", False, NO_NUMBER),
    ("table-size", "38.6 isn’t correct, 77.2", False, ""), ("table-size", "77.2 is not right, 38.6", True, ""),
    ("table-size", "38.6 is not 77.2", True, ""), ("table-size", "77.2 is not 38.6", False, ""),
    # "yes"/"no" after "a)" or after a choice's name is its verdict; "→" ends a negation
    ("tied", "a) no b) no c) yes d) no", True, ""), ("order", "a) yes b) no c) no d) no e) yes", False, ""),
    ("methods", "Rope no, Alibi yes", True, ""), ("methods", "RoPE: no, ALiBi: yes", True, ""),
    ("methods", "ALiBi: no", False, RULED_OUT), ("tied", "weight tying: no", False, RULED_OUT),
    ("methods", "learned: no, sinusoidal: no, RoPE: yes, ALiBi: no", False, ""),
    ("order", "bag of vectors: yes, equivariant: yes, more heads: no, ids give the order: no, inject position: yes",
     True, ""),
    ("methods", "not a/b/c → d", True, ""), ("methods", "not c → a", False, ""),
    # a closing "? no" refuses what it asked; "? no, x" still changes its mind
    ("methods", "d? no", False, RULED_OUT), ("methods", "ALiBi? no", False, RULED_OUT), ("methods", "d? yes", True, ""),
    ("methods", "d? no idea", True, ""), ("order", "a, b, e? no", False, RULED_OUT),
    ("table-size", "38.6? no", False, NO_NUMBER), ("table-size", "50257 × 768 = 38.6M? no", False, NO_NUMBER),
    ("table-size", "50257 × 768 = 38.6M is wrong", False, NO_NUMBER),
    ("table-size", "50257 × 768 = 77.2M is wrong, 38.6", True, ""),
    ("rope-score", "m - n? no", False, "rules out"), ("rope-score", "the difference? no", False, "rules out"),
    ("rope-score", "m - n? no idea", True, ""),
    # a clause of a choice's own words alone names it beside a letter, as an alias does
    ("methods", "d. RoPE", False, TWO), ("methods", "d; RoPE", False, TWO), ("methods", "d\nRoPE", False, ""),
    ("methods", "d. ALiBi", True, ""), ("tied", "c. weight tying", True, ""),
    ("methods", "d, since RoPE rotates", True, ""),
    # "a. yes" marks a letter as "a: yes" does; "1 / X" and "X squared" are functions of X, after "between" too
    ("order", "a. yes\nb. yes\nc. no\nd. no\ne. yes", True, ""),
    ("order", "a. yes\nb. no\nc. no\nd. no\ne. yes", False, ""),
    ("methods", "c. no, d", True, ""), ("methods", "d. no", False, RULED_OUT),
    ("rope-score", "1 / distance", False, "is not m - n"), ("rope-score", "2/distance", False, "is not m - n"),
    ("rope-score", "distance / 2", True, ""),
    ("rope-score", "the distance between them squared", False, "more than one"),
    ("rope-score", "the difference in their absolute positions", True, ""),
    ("rope-score", "the distance from the first token", False, "more than one"),
    ("rope-score", "the distance from query to key", True, ""),
    # a line that ends on a word no sentence ends on goes on in the next line
    ("methods", "d because\nRoPE rotates", True, ""),
    ("methods", "d because unlike\nRoPE it does not rotate", True, ""),
    ("tied", "c since the\nembedding matrix is tied", True, ""),
    # full-width and mathematical letters, the ideographic comma; "<-" and "←" are arrows, not bounds
    ("rope-score", "ｍ－ｎ", True, ""), ("rope-score", "𝑚 − 𝑛", True, ""), ("rope-score", "𝑚 + 𝑛", False, ""),
    ("order", "a、b、e", True, ""), ("order", "a、b、d", False, ""),
    ("table-size", "38.6 M <- 50257*768", True, ""), ("table-size", "params <- 38.6", True, ""),
    ("table-size", "77.2 <- 2 × 50257 × 768", False, ""),
    # a letter that echoes a false verdict ("d too", "so is d", "same for d") is ruled out with it
    ("methods", "c is wrong, d too", False, RULED_OUT), ("methods", "c is wrong and so is d", False, RULED_OUT),
    ("methods", "c is wrong, same for d", False, RULED_OUT), ("methods", "c is wrong; d as well", False, RULED_OUT),
    ("methods", "c is right, d too", False, TWO), ("methods", "d is right, c is wrong, a too", True, ""),
    ("methods", "c is wrong, d also works", True, ""),
    ("order", "a, b, e; c is false, d too", True, ""), ("order", "a, b, e are true and so is d", False, ""),
    # "only c and d are false" keeps the rest; "the false ones are", "false ones:" rule out what follows
    ("order", "only c and d are false", True, ""), ("order", "only c is false", False, ""),
    ("order", "the false ones are a, b and e", False, RULED_OUT),
    ("order", "true ones: a, b, e; false ones: c, d", True, ""),
    ("order", "a, b, e. wrong ones: c, d", True, ""), ("order", "a, b, e. c. false", True, ""),
    ("tied", "the same matrix is used for input and output", True, ""),
    # LaTeX's \times without a space, an ellipsis before a number
    ("table-size", "3.86\\times10^7", True, ""), ("table-size", "3.86\\cdot10^{7}", True, ""),
    ("table-size", "3.86\\times10^6", False, ""), ("table-size", "...38.6", True, ""),
    # a verdict that heads a list ("False: c d", "FALSE - c, d" on its own line, "(false)" after letters)
    ("order", "True: a b e / False: c d", True, ""), ("order", "TRUE - a, b, e\nFALSE - c, d", True, ""),
    ("order", "right: a b e wrong: c d", True, ""), ("order", "a b e (all true), c d (false)", True, ""),
    ("order", "False - a, b\nTrue - c, d, e", False, ""), ("order", "right: a b wrong: c d e", False, ""),
    # a letter taken out with a hedge hedges; "the difference of squares" is a function of the positions
    ("order", "all except c and maybe d", False, "hedges"), ("methods", "anything except maybe d", False, "hedges"),
    ("rope-score", "the difference of squares", False, "more than one"),
    ("rope-score", "the difference of their squares", False, "more than one"),
    ("rope-score", "the difference of positions", True, ""),
    # a letter asked about in a bracket names it; "none of" rules out; ": no", "- no", "(no)" close as "? no" does
    ("order", "a, b, e (and c?)", False, ""), ("order", "a, b, e (c?)", False, ""), ("methods", "d (c?)", False, TWO),
    ("order", "none of a, b, e", False, RULED_OUT), ("order", "none of the above", False, ""),
    ("table-size", "38.6M is a myth", False, NO_NUMBER), ("table-size", "38.6 is a trap; 77.2", False, ""),
    ("table-size", "38.6: no", False, NO_NUMBER), ("table-size", "38.6 - no", False, NO_NUMBER),
    ("table-size", "38.6 (no)", False, NO_NUMBER), ("methods", "d (no)", False, RULED_OUT),
    ("rope-score", "m - n: no", False, "rules out"), ("table-size", "no, 38.6", True, ""),
    # "≠" and "!=" rule out the value after them
    ("table-size", "38.6 ≠ 77.2", True, ""), ("table-size", "38.6 != 77.2", True, ""),
    ("table-size", "77.2 ≠ 38.6", False, ""),
    # a list of letters that begins a claim in a bracket explains; a key beside maths is a symbol; one word
    # of a long choice is not enough to name it in a clause of its own
    ("methods", "d (a, b, c change the vectors)", True, ""), ("methods", "d (c or b)", False, TWO),
    ("order", "b, c (and d)", False, ""), ("tied", "c – saves a vocab×d matrix", True, ""),
    ("tied", "c (d_model columns)", True, ""), ("order", "* a\n* b\n* e", True, ""), ("tied", "c * d", False, TWO),
    ("tied", "c, usually", True, ""), ("tied", "c. fixed meaning", False, TWO),
    ("order", "a, b, e; c and d are the false ones", True, ""), ("methods", "d; c is the wrong option", True, ""),
    ("order", "a b e, c and d are false statements", True, ""),
    # a verdict rules out a number only when nothing but a copula stands between them
    ("table-size", "38.6 - it isn't right to count the output layer", True, ""),
    ("table-size", "38.6 - counting the output layer would be wrong", True, ""),
    ("table-size", "38.6 million parameters is wrong", False, NO_NUMBER),
    ("table-size", "38.6M is clearly wrong", False, NO_NUMBER),
    # "X: no" rules X out in text and number answers too; "≠" rules out in text answers
    ("rope-score", "m + n: no; m - n: yes", True, ""), ("rope-score", "sum: no, difference: yes", True, ""),
    ("rope-score", "sum: yes, difference: no", False, "rules out"), ("rope-score", "difference: no idea", True, ""),
    ("rope-score", "m − n (≠ m + n)", True, ""), ("rope-score", "m + n ≠ m - n", False, "rules out"),
    ("table-size", "77.2: no; 38.6: yes", True, ""), ("table-size", "38.6: no; 77.2: yes", False, ""),
]
REFUSED = [("methods", "e"), ("order", "1, 2, 5"),
           ("methods", "positions"), ("order", "a x"), ("order", "a, b, f"), ("methods", "dd"),
           ("table-size", "lots"), ("table-size", "nan"), ("rope-score", "   ")]


def test_the_table_is_large_and_mixed():
    assert len(TABLE) >= 80 and len({(q, a) for q, a, *_ in TABLE}) == len(TABLE)
    assert {q for q, *_ in TABLE} == set(QUESTIONS)
    assert sum(right for _, _, right, _ in TABLE) >= 40 and sum(bool(why) for *_, why in TABLE) >= 20


@pytest.mark.parametrize("question, answer, right, why", TABLE, ids=[f"{q}:{a}" for q, a, *_ in TABLE])
def test_phrasing(question, answer, right, why):
    question = QUESTIONS[question]
    marked, reason = check(question, parse_answer(question, answer))
    assert marked is right, (answer, reason)
    assert why in reason, (answer, reason)


@pytest.mark.parametrize("question, answer", REFUSED)
def test_only_answers_with_nothing_to_read_are_refused(question, answer):
    """What names no choice and holds no number is asked for again at the terminal (say what to
    type), and counted wrong with that reason in a file."""
    with pytest.raises(AnswerError):
        parse_answer(QUESTIONS[question], answer)


HEDGES = {"methods": "ALiBi or RoPE", "table-size": "38.6 or 77.2", "order": "a or b", "tied": "c) weight tying",
          "rope-score": "Their difference — m−n"}


@pytest.mark.usefixtures("state")
def test_a_hedge_is_judged_wrong_with_its_reason_in_an_answers_file(tmp_path, capsys):
    code, out = run_cli(capsys, "lab2", "--answers", answers_file(tmp_path, HEDGES))
    out = " ".join(out.split())
    assert code == 1 and "2 of 5 right" in out
    assert "why not: it names more than one choice (c) RoPE (rotary) and d) ALiBi)" in out
    assert "why not: it gives more than one number (38.6 million and 77.2 million)" in out
    assert "why not: 'or' offers a or b" in out


@pytest.mark.usefixtures("state")
def test_a_hedge_is_judged_wrong_with_its_reason_in_a_class_export(tmp_path, capsys):
    responses, gradebook = tmp_path / "responses.csv", tmp_path / "quiz.csv"
    with open(responses, "w", newline="", encoding="utf-8") as file:
        bob = [", ".join(RIGHT[q]) if isinstance(RIGHT[q], list) else RIGHT[q] for q in HEDGES]
        csv.writer(file).writerows([["student", *HEDGES], ["ada", *HEDGES.values()], ["bob", *bob]])
    code, _ = run_cli(capsys, "lab2", "--class", responses, "--out", gradebook)
    rows = {row["student"]: row for row in csv.DictReader(open(gradebook, encoding="utf-8"))}
    assert code == 0 and rows["ada"]["score"] == "2" and rows["bob"]["score"] == "5"
    assert (rows["ada"]["tied"], rows["ada"]["rope-score"], rows["ada"]["methods"]) == ("1", "1", "0")
    assert "methods: judged wrong (it names more than one choice" in rows["ada"]["notes"]
    assert "table-size: judged wrong (it gives more than one number" in rows["ada"]["notes"]
