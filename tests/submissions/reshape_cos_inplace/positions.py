"""Wrong apply_rope only: right values, but it reshapes in place the cos and sin it is given
(unsqueeze_), so the caller's tensors change shape and the model's second call (k) goes wrong."""
import torch


def rope_frequencies(head_dim, seq_len, base=10000.0, device="cpu"):
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    ang = torch.outer(torch.arange(seq_len, device=device).float(), inv)
    return torch.cos(ang), torch.sin(ang)


def apply_rope(x, cos, sin):
    cos.unsqueeze_(0).unsqueeze_(0)
    sin.unsqueeze_(0).unsqueeze_(0)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2).to(x.dtype)
