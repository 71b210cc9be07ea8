"""The numbers an experiment reports, for provenance.measured_runs: they must be what evaluate()
gives for the returned weights on the documented data (seed=seed + 1, start=TRAIN_LEN past
TRAIN_LEN). When a run's are not, the judge measures the weights again on inputs that tell the
usual slips apart, and names the one that gives the reported numbers: numbers rounded (losses, or
accuracies alone), another order of lengths, another task, start=0, other data (the training seed,
evaluate's default, another seed), several evaluations on different data with the best kept,
accuracies in percent, another start index or batch size (report_slip). A named slip costs the
reproduction check only. Numbers that no slip explains cost the reproduction check only as well
when the run's weights are the recipe's (the caller says which: `honest`), and the check says only
that they differ from evaluate()'s; from other weights they do not come from the weights, and
nothing of the run counts.

Other data is looked for over the whole experiment: a slip in the code is in every run it
evaluates, and only there can one seed used throughout be told from the best of several, which
may pick another seed for each run: numbers that one other seed gives throughout name that seed,
however good they are (the code evaluated there, whatever else it did). Only runs whose numbers
are wrong get a hint, and a hint names seeds as the docstring does (seed=seed + 1), never the
value of a hidden one.
"""
import itertools
from typing import NamedTuple

from grader.lab_api.checks import CheckFailed

# reported vs re-measured on the same data: float noise, with room to spare. Evaluating the same
# weights in float64 or on two threads moves a loss by at most 1.1e-6 of itself and no accuracy,
# over every run and length at seeds 0, 5 and 7; another data seed moves a loss by 1.9e-4 of itself
# or more (a learned model's, near 0.0025, by 1e-3): a loss is held to its own size, not to 1 nat
LOSS_REPRODUCE = 1e-5           # relative
ACCURACY_REPRODUCE = 1e-3       # absolute: a few of the thousands of scored positions flipped on a near-tie
ROUNDED = "your numbers are evaluate()'s rounded"
ROUNDED_ACCURACIES = "your accuracies are evaluate()'s rounded"


class Reported(NamedTuple):
    """One returned run, for the search: its label, Run, rebuilt model, task and documented scores."""
    label: str
    run: object
    model: object
    task: str
    documented: list


def pairs(run):
    return list(zip(run.eval_losses, run.eval_accuracies))


def matches(reported, measured):
    """Whether each (loss, accuracy) is the measured one, up to float noise."""
    return all(close_loss(loss, truth[0]) and close_accuracy(accuracy, truth[1])
               for (loss, accuracy), truth in zip(reported, measured))


def close_loss(reported, measured):
    return abs(reported - measured) <= LOSS_REPRODUCE * abs(measured)


def close_accuracy(reported, measured):
    return abs(reported - measured) <= ACCURACY_REPRODUCE


def reproduction(given, seed, runs, remeasure, honest=()):
    """{label: (problem, slip)} for the runs (Reported) whose numbers are not the documented
    measurement: a slip (CheckFailed) when a usual mistake gives them, or when the run is one of
    `honest` (labels of runs whose weights and losses are the recipe's: the slip is in the report
    alone), else a problem."""
    percent = [in_percent(r) for r in runs]
    runs = [fraction or r for fraction, r in zip(percent, runs)]
    wrong = [(r, fraction is not None) for r, fraction in zip(runs, percent)
             if fraction is not None or not matches(pairs(r.run), r.documented) or rounded(r)]
    data = None
    out = {}
    for r, scaled in wrong:
        hint = "" if scaled and matches(pairs(r.run), r.documented) else rounded(r) or in_another_order(r)
        if hint is None:
            data = data_slip(given, seed, runs, remeasure) if data is None else data
            hint = data or run_slip(given, seed, r, remeasure) or report_slip(given, seed, r, remeasure)
        hint = "; ".join(h for h in (PERCENT if scaled else "", hint) if h) if hint is not None else None
        reported = pairs(r.run)
        if scaled:
            reported = [(loss, 100 * accuracy) for loss, accuracy in reported]
        off = [i for i, (a, b) in enumerate(zip(reported, r.documented)) if not matches([a], [b])]
        i = (off or [i for i, (a, b) in enumerate(zip(reported, r.documented)) if a != tuple(b)] or [0])[0]
        expected = (f"{r.label}'s reported numbers to be evaluate()'s for the returned weights on the documented "
                    f"data (seed=seed + 1, start=TRAIN_LEN past TRAIN_LEN)")
        rounding = hint and hint.startswith((ROUNDED, ROUNDED_ACCURACIES))
        hidden = any(x != y and f"{x:.4f}" == f"{y:.4f}" for x, y in zip(reported[i], r.documented[i]))
        number = repr if rounding or hidden else "{:.4f}".format      # rounding shows in every digit
        seen = (f"at length {r.run.eval_lengths[i]} reported loss {number(reported[i][0])}, accuracy "
                f"{number(reported[i][1])}; the grader measured {number(r.documented[i].loss)}, "
                f"{number(r.documented[i].accuracy)}")
        if hint:
            out[r.label] = (None, CheckFailed(expected, seen, hint))
        elif r.label in honest:         # the recipe's weights: the report alone is wrong
            out[r.label] = (None, CheckFailed(expected, seen + ": the reported numbers differ from what evaluate() "
                                              "gives for these weights"))
        else:
            out[r.label] = (CheckFailed(expected, seen + ": these numbers do not come from the returned weights",
                                        "report exactly what evaluate() returned for the model you return"), None)
    return out


PERCENT = ("your accuracies are evaluate()'s times 100, a percentage: report the fraction evaluate() returns "
           "(0 to 1), as it is")


def in_percent(r):
    """The run with its accuracies divided by 100 when they are a percentage (some above 1, none
    above 100: a fraction never is), else None."""
    accuracies = r.run.eval_accuracies
    if not any(a > 1 for a in accuracies) or not all(0 <= a <= 100 for a in accuracies):
        return None
    return r._replace(run=r.run.model_copy(update={"eval_accuracies": [a / 100 for a in accuracies]}))


def rounded(r):
    """The hint when the run's losses, or else its accuracies, are evaluate()'s rounded to a few
    decimals (an unrounded loss has every digit of a float), else None. An accuracy is a count over
    a power-of-two-rich total, and may be a short decimal unrounded (1.0): its rounding shows only
    where some reported accuracy is not the measured one."""
    losses, accuracies = [loss for loss, _ in pairs(r.run)], [accuracy for _, accuracy in pairs(r.run)]
    places = decimals(losses, [truth.loss for truth in r.documented], lambda truth: LOSS_REPRODUCE * abs(truth))
    if places is not None:
        return f"{ROUNDED} ({places} decimals): report the numbers evaluate() returned as they are"
    truths = [truth.accuracy for truth in r.documented]
    places = decimals(accuracies, truths, lambda truth: ACCURACY_REPRODUCE)
    if places is None or accuracies == truths:
        return None
    return f"{ROUNDED_ACCURACIES} ({places} decimals): report the numbers evaluate() returned as they are"


def decimals(reported, truths, noise):
    """The fewest decimals (up to 6) to which every reported number is its truth rounded (up to
    noise(truth)), or None."""
    places = next((k for k in range(7) if all(isinstance(v, float) and v == round(v, k) for v in reported)), None)
    if places is None or not all(abs(v - truth) <= 0.5 * 10 ** -places + noise(truth)
                                 for v, truth in zip(reported, truths)):
        return None
    return places


def in_another_order(r):
    reported = pairs(r.run)
    if len(reported) > 1 and any(matches(reported, [r.documented[i] for i in order])
                                 for order in itertools.permutations(range(len(reported)))):
        return "your numbers are right but in another order: put the numbers of eval_lengths[i] at index i"
    return None


def data_pool(seed):
    """{data seed: how a hint names it}: the documented first, then the usual others."""
    s = seed.value
    named = [(s + 1, "seed=seed + 1"), (s, "seed=seed"), (1, "seed=1"), (0, "seed=0"),
             *((s + k, f"seed=seed + {k}") for k in (2, 3, 4)), (s - 1, "seed=seed - 1"), (2, "seed=2"), (3, "seed=3")]
    pool = {}
    for d, label in named:
        if d >= 0:
            pool.setdefault(d, label)
    return pool


def data_slip(given, seed, runs, remeasure):
    """The hint when every reported number of the experiment is evaluate()'s on some data of the
    pool (documented task and start) and not all on the documented: "" when some is not. One data
    that gives them all is named; several, as the best of them kept only when the numbers are and
    some run's come from several (each run evaluated once, on data of its own, is what one data per
    run shows, however good). A number that several data give (a model right everywhere) tells none
    of them apart."""
    pool, documented = data_pool(seed), seed.value + 1
    score = lambda r, n, d: remeasure(given, r.model, r.task, [n], d)[0]
    right, wrong = [], []
    for r in runs:
        for n, pair, truth in zip(r.run.eval_lengths, pairs(r.run), r.documented):
            (right if matches([pair], [truth]) else wrong).append((n, r, pair))
    right.sort(key=lambda number: number[0])                # the shortest first: the cheapest to measure
    wrong.sort(key=lambda number: number[0])
    common = [d for d in pool if d != documented]           # one data throughout
    for n, r, pair in wrong + right:
        common = [d for d in common if matches([pair], [score(r, n, d)])]
    if common:                  # one data throughout: what the code evaluated on, better or not
        said = {seed.value: "evaluate on fresh data, seed=seed + 1, not the training data (seed=seed)",
                1: "pass seed=seed + 1; evaluate's default seed=1 is other data"}.get(
            common[0], "evaluate on the documented data, seed=seed + 1")
        return f"your numbers match evaluate(..., {pool[common[0]]}): {said}"
    used, by_run = set(), {}
    for n, r, pair in wrong:
        data = which_data(given, r, n, *pair, pool, remeasure)
        if data is None:
            return ""
        used |= data
        by_run.setdefault(r.label, set()).update(data)
    for _, r, _ in right:
        by_run.setdefault(r.label, set()).add(documented)
    if any(not any(matches([pair], [score(r, n, d)]) for d in used) for n, r, pair in right):
        used.add(documented)
    names = ", ".join(pool[d] for d in pool if d in used)
    mixed = any(len(data) > 1 for data in by_run.values())     # a run measured on several data
    if mixed and kept_best(given, runs, sorted(used), remeasure):
        return best_kept(names)
    return f"your numbers come from evaluations on different data ({names}): evaluate every model with seed=seed + 1"


def best_kept(names):
    return (f"your numbers are the best of evaluations on different data ({names}): evaluate each model once per "
            f"length, with seed=seed + 1, and report what it returned")


def which_data(given, r, n, loss, accuracy, pool, remeasure):
    """{the data of the pool whose evaluation at length n gives the loss, the one that gives the
    accuracy} (one, when it gives both), or None when none does."""
    scores = lambda d: remeasure(given, r.model, r.task, [n], d)[0]
    by_loss = next((d for d in pool if close_loss(loss, scores(d).loss)), None)
    if by_loss is None:
        return None
    if close_accuracy(accuracy, scores(by_loss).accuracy):
        return {by_loss}
    by_accuracy = next((d for d in pool if close_accuracy(accuracy, scores(d).accuracy)), None)
    return None if by_accuracy is None else {by_loss, by_accuracy}


def kept_best(given, runs, data, remeasure):
    """Whether every reported loss is the lowest, or every reported accuracy the highest, of the
    evaluations on `data` at its length: what keeping the best of several evaluations gives."""
    lowest = highest = True
    for r in runs:
        for n, (loss, accuracy) in zip(r.run.eval_lengths, pairs(r.run)):
            scores = [remeasure(given, r.model, r.task, [n], d)[0] for d in data]
            lowest &= all(loss <= s.loss + LOSS_REPRODUCE * abs(s.loss) for s in scores)
            highest &= all(accuracy >= s.accuracy - ACCURACY_REPRODUCE for s in scores)
    return lowest or highest


def run_slip(given, seed, r, remeasure):
    """The hint naming the usual mistake (another task, start=0, the training seed or evaluate's
    default seed, alone or together) that gives one run's reported numbers, or None."""
    train_len, lengths, reported = given.tasks.TRAIN_LEN, r.run.eval_lengths, pairs(r.run)
    tasks = [r.task] + [t for t in given.tasks.TASKS if t != r.task]
    starts = [None] + ([0] if any(n > train_len for n in lengths) else [])
    documented = seed.value + 1
    for other_task, data, start in itertools.product(tasks, [documented, seed.value, 1], starts):
        if (other_task, data, start) == (r.task, documented, None):
            continue
        if all(matches([pair], remeasure(given, r.model, other_task, [n], data, start))     # the shortest
               for pair, n in zip(reported, lengths)):                                      # first, lazily
            said = ["score only the positions past TRAIN_LEN there (start=TRAIN_LEN), not all (start=0)"
                    if start == 0 else "",
                    "evaluate on fresh data, seed=seed + 1, not the training data (seed=seed)"
                    if data == seed.value else "",
                    "pass seed=seed + 1; evaluate's default seed=1 is other data" if data == 1 != documented else "",
                    f"evaluate each model on the task it was trained on ({r.task!r}), not {other_task!r}"
                    if other_task != r.task else ""]
            call = ", ".join(p for p in [repr(other_task) if other_task != r.task else "",
                                         "start=0" if start == 0 else "",
                                         f"seed={'seed' if data == seed.value else data}" if data != documented else ""]
                             if p)
            return f"your numbers match evaluate(..., {call}): " + "; ".join(s for s in said if s)
    return None


BATCH_SIZES = (1, 2, 4, 8, 10, 16, 32, 50, 64, 100, 200, 256, 500, 512, 1000, 1024)


def report_slip(given, seed, r, remeasure):
    """The hint naming what differs in how one run's numbers were measured, where the grader can
    tell: evaluate's start index, or its batch size (each tried on the documented data), or None."""
    tasks, documented = given.tasks, seed.value + 1
    starts, batches = {}, set()
    for n, pair, truth in zip(r.run.eval_lengths, pairs(r.run), r.documented):
        if matches([pair], [truth]):
            continue
        begin = 0 if n == tasks.TRAIN_LEN else tasks.TRAIN_LEN
        tried = dict.fromkeys([*starts.values(), tasks.LOOKBACK + 1, tasks.TRAIN_LEN // 2, tasks.TRAIN_LEN - 1,
                               tasks.TRAIN_LEN + 1, n // 2, n - tasks.TRAIN_LEN, 2 * tasks.TRAIN_LEN])
        start = next((s for s in tried if tasks.LOOKBACK < s < n and s != begin
                      and matches([pair], remeasure(given, r.model, r.task, [n], documented, s))), None)
        if start is not None:
            starts[n] = start
            continue
        batch = next((b for b in [*batches, *BATCH_SIZES]
                      if matches([pair], remeasure(given, r.model, r.task, [n], documented, None, b))), None)
        if batch is None:
            return None
        batches.add(batch)
    said = []
    if starts:
        at = ", ".join(f"start={s} at length {n}" for n, s in starts.items())
        said.append(f"your numbers match evaluate(..., {at}): score from start=0 at TRAIN_LEN and from "
                    f"start=TRAIN_LEN at the longer lengths")
    if batches:
        sizes = " and ".join(f"batch_size={b}" for b in sorted(batches))
        said.append(f"your numbers match evaluate(..., {sizes}): keep evaluate()'s default batch size")
    return "; ".join(said) or None
