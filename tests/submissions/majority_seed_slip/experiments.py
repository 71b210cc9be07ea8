"""One slip in one run: no_pos_majority is trained with seed + 1; learned and no_pos are the recipe's,
extrapolation_runs is right."""
from dataclasses import asdict

from model import Config, build_model
from results import Extrapolation, LossGap, Run
from tasks import TRAIN_LEN, evaluate, train


def measure_loss_gap(seed=0, device="cpu", on_step=None):
    """Measure what deleting the position encoding costs on "lookback", and what it leaves.

    Train three models, each built with build_model(Config(pos=POS), seed=seed, device=device)
    and trained with train(model, TASK, seed=seed, on_step=on_step) (all other defaults):
        learned          POS "learned", TASK "lookback"   the working transformer
        no_pos           POS "none",    TASK "lookback"   the same with positions deleted
        no_pos_majority  POS "none",    TASK "majority"   an order-free task, for contrast
    Evaluate each once, at the training length on fresh data:
        evaluate(model, TASK, TRAIN_LEN, seed=seed + 1) -> (loss, accuracy)
    The recipe is fixed (see results.py): the grader trains every run itself and checks that
    your train_losses and weights are what it gives for this seed.

    Args:
        seed: seeds model initialisation and training data; the same seed gives the same result.
        device: where to train, e.g. "cpu" or "cuda".
        on_step: progress callback; pass it to every train call unchanged.

    Returns:
        LossGap(learned, no_pos, no_pos_majority, gap): one Run per model (see results.py), with
        eval_lengths [TRAIN_LEN], and gap = no_pos.eval_losses[0] - learned.eval_losses[0].
    """
    learned, no_pos, no_pos_majority = (
        _run(pos, task, [TRAIN_LEN], seed, device, on_step)
        for pos, task in (("learned", "lookback"), ("none", "lookback"), ("none", "majority")))
    gap = no_pos.eval_losses[0] - learned.eval_losses[0]
    return LossGap(learned, no_pos, no_pos_majority, gap)


def extrapolation_runs(seed=0, device="cpu", on_step=None):
    """Train learned positions and RoPE at TRAIN_LEN on "lookback"; test them on longer sequences.

    Train two models, each built with build_model(Config(pos=POS), seed=seed, device=device)
    and trained with train(model, "lookback", seed=seed, on_step=on_step): POS "learned" and
    POS "rope" (your positions.py). Config's max_len is 4 * TRAIN_LEN, so the learned table has a
    row for every position evaluated; rows past TRAIN_LEN are never trained.
    Evaluate each at lengths [TRAIN_LEN, 2 * TRAIN_LEN, 4 * TRAIN_LEN] on fresh data:
        evaluate(model, "lookback", length, start=start, seed=seed + 1) -> (loss, accuracy)
    with start=0 at TRAIN_LEN, and start=TRAIN_LEN at the longer lengths, so that only the
    positions beyond the trained length are scored there.
    The recipe is fixed (see results.py): the grader trains every run itself and checks that
    your train_losses and weights are what it gives for this seed.

    Args:
        seed: seeds model initialisation and training data; the same seed gives the same result.
        device: where to train, e.g. "cpu" or "cuda".
        on_step: progress callback; pass it to every train call unchanged.

    Returns:
        Extrapolation(learned, rope): one Run per model (see results.py), with eval_lengths
        [TRAIN_LEN, 2 * TRAIN_LEN, 4 * TRAIN_LEN] and the loss and accuracy at each.
    """
    lengths = [TRAIN_LEN, 2 * TRAIN_LEN, 4 * TRAIN_LEN]
    return Extrapolation(*(_run(pos, "lookback", lengths, seed, device, on_step)
                           for pos in ("learned", "rope")))


def _run(pos, task, lengths, seed, device, on_step):
    """Build, train and evaluate one model; its Run."""
    model = build_model(Config(pos=pos), seed=seed, device=device)
    losses = train(model, task, seed=seed + (task == "majority"), on_step=on_step)
    scores = [evaluate(model, task, n, start=0 if n == TRAIN_LEN else TRAIN_LEN, seed=seed + 1)
              for n in lengths]
    return Run(task=task, config=asdict(model.cfg),
               state_dict={name: t.cpu() for name, t in model.state_dict().items()},
               train_losses=losses, eval_lengths=lengths,
               eval_losses=[loss for loss, _ in scores],
               eval_accuracies=[accuracy for _, accuracy in scores])
