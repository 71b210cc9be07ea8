"""Wrong: every reordering, but compared as one number summed over batch, positions and features:
changes in different features (or rows) cancel."""
import itertools


def is_permutation_invariant(attn, x, atol=1e-5):
    total = attn(x).sum()
    return all(abs(float(attn(x[:, list(order)]).sum() - total)) <= atol
               for order in itertools.permutations(range(x.shape[1])))
