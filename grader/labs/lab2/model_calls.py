"""How the lab's own model calls the learner's functions (lab.yaml's model_calls), run in the child
for the checks: full marks mean a function works there, not only on the checks' tidy inputs. The
judge makes the inputs and judges the answer (public/rope.py); this only makes the calls.
"""
import torch


def apply_rope_in_model(projection, cos, sin, weights):
    """apply_rope as model.SelfAttention calls it, forward and backward.

    projection: (B, T, 3, heads, head_dim), q, k and v side by side as one matmul makes them; cos, sin:
    (max_len, head_dim // 2), the model's whole table, of which the first T rows are used; weights:
    (2, B, heads, T, head_dim), a loss's weights on the turned q and k.

    q and k are permuted views of the projection, (B, heads, T, head_dim) and not contiguous, turned
    one after the other by the same cos and sin; then loss = sum(weights[0] * q') + sum(weights[1] * k')
    goes backward. Returns {"q", "k": what apply_rope returned, "grad": the projection's gradient, or
    None when no gradient reached it}.
    """
    from positions import apply_rope

    leaf = projection.clone().requires_grad_(True)
    qkv = leaf * 1.0                            # not a leaf, as a Linear layer's output is not
    q, k, _ = qkv.permute(2, 0, 3, 1, 4)
    T = qkv.shape[1]
    cos, sin = cos[:T], sin[:T]
    turned = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
    if all(isinstance(t, torch.Tensor) and t.shape == w.shape for t, w in zip(turned, weights)):
        loss = sum((t * w).sum() for t, w in zip(turned, weights))
        if loss.requires_grad:
            loss.backward()
    return {"q": turned[0], "k": turned[1], "grad": leaf.grad}
