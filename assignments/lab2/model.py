"""A tiny decoder-only transformer whose position encoding you can switch (nanoGPT style).

pos: "none" | "learned" (a trained table, one vector per position) | "sinusoidal" (fixed waves)
     | "rope" (turns q and k, with your positions.py) | "alibi" (a distance penalty on scores)
"""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from positions import apply_rope, rope_frequencies


@dataclass
class Config:
    pos: str                   # one of the five above
    vocab_size: int = 16
    d_model: int = 128
    n_heads: int = 1           # one head of 128: enough RoPE frequencies to extrapolate
    n_layers: int = 1
    max_len: int = 96          # longest sequence it takes: 4 x the training length of tasks.py
    causal: bool = True        # position t sees only positions <= t

    def __post_init__(self):
        if self.pos not in ("none", "learned", "sinusoidal", "rope", "alibi"):
            raise ValueError(f"unknown position encoding {self.pos!r}")
        assert self.d_model % self.n_heads == 0, \
            f"d_model ({self.d_model}) must split evenly into n_heads ({self.n_heads}) heads"


class AddPositions(nn.Module):
    """x + a vector per position: a learned table, or sinusoids of many frequencies."""

    def __init__(self, cfg):
        super().__init__()
        if cfg.pos == "learned":               # rows of positions never trained on stay random
            self.table = nn.Parameter(torch.randn(cfg.max_len, cfg.d_model))
        else:
            freq = 10000.0 ** (-torch.arange(0, cfg.d_model, 2) / cfg.d_model)    # (C/2,)
            angle = torch.arange(cfg.max_len)[:, None] * freq                   # (max_len, C/2)
            table = torch.cat((angle.sin(), angle.cos()), dim=1)                # (max_len, C)
            self.register_buffer("table", table, persistent=False)

    def forward(self, x):                      # (B, T, C) -> (B, T, C)
        return x + self.table[: x.shape[1]]


class SelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.head_dim = cfg.d_model // cfg.n_heads
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model, bias=False)    # q, k, v in one matmul
        self.proj = nn.Linear(cfg.d_model, cfg.d_model, bias=False)
        if cfg.pos == "rope":
            cos, sin = rope_frequencies(self.head_dim, cfg.max_len)            # (max_len, hd/2)
            self.register_buffer("cos", cos, persistent=False)
            self.register_buffer("sin", sin, persistent=False)
        if cfg.pos == "alibi":                 # head h loses 2^(-8h/n_heads) per step of distance
            slopes = 2.0 ** (-8.0 * torch.arange(1, cfg.n_heads + 1) / cfg.n_heads)
            self.register_buffer("slopes", slopes[:, None, None], persistent=False)

    def forward(self, x):                      # (B, T, C) -> (B, T, C)
        B, T, C = x.shape
        qkv = self.qkv(x).view(B, T, 3, self.cfg.n_heads, self.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)   # each (B, n_heads, T, head_dim)
        if self.cfg.pos == "rope":
            cos, sin = self.cos[:T], self.sin[:T]
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)            # (B, n_heads, T, T)
        i = torch.arange(T, device=x.device)
        if self.cfg.pos == "alibi":
            scores = scores - self.slopes * (i[:, None] - i[None, :]).abs()
        if self.cfg.causal:
            scores = scores.masked_fill(i[None, :] > i[:, None], float("-inf"))
        y = scores.softmax(dim=-1) @ v                                          # (B, n_heads, T, head_dim)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))                   # heads side by side


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.attn = SelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(nn.Linear(cfg.d_model, 4 * cfg.d_model), nn.GELU(),
                                 nn.Linear(4 * cfg.d_model, cfg.d_model))

    def forward(self, x):                      # (B, T, C) -> (B, T, C)
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.add_pos = AddPositions(cfg) if cfg.pos in ("learned", "sinusoidal") else nn.Identity()
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)

    def forward(self, idx):                    # (B, T) token ids -> (B, T, vocab_size) logits
        x = self.add_pos(self.tok_emb(idx))    # (B, T, C)
        for block in self.blocks:
            x = block(x)                       # (B, T, C)
        return self.lm_head(self.ln_f(x))


def build_model(config, state_dict=None, seed=0, device="cpu"):
    """A GPT from a Config or its dict (asdict(model.cfg)), initialised from seed, then loaded
    with state_dict (e.g. a trained model's model.state_dict()) when given."""
    cfg = Config(**config) if isinstance(config, dict) else config
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = GPT(cfg)
    if state_dict is not None:
        model.load_state_dict(state_dict)
    return model.to(device)


def attention_layer(d_model, n_heads=2, pos="none", causal=False, max_len=96, seed=0, device="cpu"):
    """One self-attention layer with pos, (batch, seq, d_model) -> (batch, seq, d_model): learned
    or sinusoidal vectors are added to its input, rope turns q and k, alibi biases the scores."""
    cfg = Config(pos=pos, d_model=d_model, n_heads=n_heads, max_len=max_len, causal=causal)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        attn = SelfAttention(cfg)
        layer = nn.Sequential(AddPositions(cfg), attn) if pos in ("learned", "sinusoidal") else attn
    return layer.to(device)
