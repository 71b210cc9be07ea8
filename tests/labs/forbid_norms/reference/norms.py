"""Reference solutions of the norms lab (never shipped)."""


def layer_norm(x, eps=1e-5):
    centred = x - x.mean(-1, keepdim=True)
    return centred / (centred.pow(2).mean(-1, keepdim=True) + eps).sqrt()


def rms_norm(x, eps=1e-6):
    return x / (x.pow(2).mean(-1, keepdim=True) + eps).sqrt()
