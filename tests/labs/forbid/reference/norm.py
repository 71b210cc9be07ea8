"""Reference solutions of the forbid lab (never shipped)."""


def softmax(x):
    exp = (x - x.amax(-1, keepdim=True)).exp()
    return exp / exp.sum(-1, keepdim=True)


def attend(q, k, v):
    return softmax(q @ k.T / q.shape[-1] ** 0.5) @ v
