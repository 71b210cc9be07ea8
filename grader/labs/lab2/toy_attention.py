"""Layers mapping (batch, seq, d) to (batch, seq, d), for checking is_permutation_invariant.

Copied into the child's workspace so that the checks can hand layers to student code; the judge
builds the same layers from the same weights to know the truth. Whatever a layer does with
positions lives in its weights, and the checks hand over `sealed` layers: plain functions whose
weights are kept masked by noise and recovered only while they run, so that only running the
layer on reordered inputs tells what it does with positions.
"""
import math

import torch


class Layer(torch.nn.Module):
    """h = mix @ x (mixing positions), then out[:, t] = h[:, t] * (1 + open * (gain[t] + pair * <h[:, t], h[:, t+1]>)),
    with t+1 wrapping round to 0, and open = relu(<x summed over positions, gate>) for each row of
    the batch (1 without a gate): the same layer can be invariant on some inputs and not on others.
    mix: (seq, seq), gain: (seq,), pair: a number, gate: (d,) or None."""

    def __init__(self, mix, gain, pair, gate=None):
        super().__init__()
        self.register_buffer("mix", torch.as_tensor(mix))
        self.register_buffer("gain", torch.as_tensor(gain))
        self.register_buffer("pair", torch.as_tensor(pair))
        self.register_buffer("gate", None if gate is None else torch.as_tensor(gate))

    def forward(self, x):
        h = self.mix.to(x.dtype) @ x
        neighbour = (h * h.roll(-1, dims=1)).sum(-1, keepdim=True)
        opened = 1 if self.gate is None else (x.sum(1) @ self.gate.to(x.dtype)).relu()[:, None, None]
        return h * (1 + opened * (self.gain.to(x.dtype)[:, None] + self.pair.to(x.dtype) * neighbour))


class Attention(torch.nn.Module):
    """Multi-head self-attention of x + table: softmax(q·k / sqrt(head_dim) + bias) v, with each
    adjacent pair of q's and k's dimensions turned by (cos, sin) first, as RoPE does.

    qkv: (3d, d), proj: (d, d), table: (seq, d), bias: (heads, seq, seq), cos and sin: (seq, head_dim/2).
    """

    def __init__(self, qkv, proj, table, bias, cos, sin):
        super().__init__()
        for name, value in dict(qkv=qkv, proj=proj, table=table, bias=bias, cos=cos, sin=sin).items():
            self.register_buffer(name, torch.as_tensor(value))

    def forward(self, x):
        B, T, d = x.shape
        heads = self.bias.shape[0]
        h = x + self.table.to(x.dtype)
        q, k, v = (h @ self.qkv.to(x.dtype).T).view(B, T, 3, heads, d // heads).permute(2, 0, 3, 1, 4)
        cos, sin = self.cos.to(x.dtype), self.sin.to(x.dtype)
        q, k = turn_pairs(q, cos, sin), turn_pairs(k, cos, sin)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // heads) + self.bias.to(x.dtype)
        y = scores.softmax(dim=-1) @ v
        return y.transpose(1, 2).reshape(B, T, d) @ self.proj.to(x.dtype).T


def turn_pairs(x, cos, sin):
    """Each adjacent pair (x[..., 2i], x[..., 2i+1]) of x turned by the angle of (cos, sin)[..., i]."""
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


def attention_weights(layer, seq):
    """The weights of Attention equal to `layer` (the handout's model.attention_layer) on `seq`
    positions: for the judge, which hands over the weights and never the layer itself."""
    add, attn = (layer[0], layer[1]) if isinstance(layer, torch.nn.Sequential) else (None, layer)
    d, heads = attn.qkv.in_features, attn.cfg.n_heads
    i = torch.arange(seq)
    bias = torch.zeros(heads, seq, seq)
    if hasattr(attn, "slopes"):
        bias = bias - attn.slopes * (i[:, None] - i[None, :]).abs()
    if attn.cfg.causal:
        bias = bias.masked_fill(i[None, :] > i[:, None], float("-inf"))
    half = attn.head_dim // 2
    rope = hasattr(attn, "cos")
    return dict(qkv=attn.qkv.weight.detach().clone(), proj=attn.proj.weight.detach().clone(),
                table=add.table[:seq].detach().clone() if add is not None else torch.zeros(seq, d), bias=bias,
                cos=attn.cos[:seq].clone() if rope else torch.ones(seq, half),
                sin=attn.sin[:seq].clone() if rope else torch.zeros(seq, half))


def mask(weights, seed):
    """`weights` (name -> tensor) in float64 with noise drawn from `seed` added: what `sealed` takes."""
    noise = torch.Generator().manual_seed(seed)
    return {name: weights[name].double().cpu() + torch.randn(weights[name].shape, generator=noise, dtype=torch.float64)
            for name in sorted(weights)}


def sealed(factory, masked, seed):
    """A plain function computing `factory`(**weights)(x), where `masked` is mask(weights, seed): the
    weights are recovered only during a call, so nothing it holds tells what it does with positions."""
    def layer(x):
        noise = torch.Generator().manual_seed(seed)
        weights = {name: masked[name] - torch.randn(masked[name].shape, generator=noise, dtype=torch.float64)
                   for name in sorted(masked)}
        return globals()[factory](**weights).to(x.device)(x)
    return layer
