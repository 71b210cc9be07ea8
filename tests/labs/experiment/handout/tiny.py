"""Given with the lab: the model and the training loop of its recipe (a line fitted by SGD)."""
import torch

STEPS = 5                       # train()'s steps
LR = 0.1
BATCH = 32
SLOPE = torch.tensor([[1.0], [-2.0], [0.5], [3.0]])     # the line the data follows


def build_model(seed=0):
    """A 1-layer model, y = x @ W^T + b: W from `seed`, b zero."""
    model = torch.nn.Linear(4, 1)
    with torch.no_grad():
        model.weight.copy_(torch.randn(1, 4, generator=torch.Generator().manual_seed(seed)))
        model.bias.zero_()
    return model


def train(model, steps=STEPS, seed=0):
    """`steps` steps of SGD (lr LR) on batches of BATCH points drawn from `seed`: each step's loss."""
    data = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    losses = []
    for _ in range(steps):
        x = torch.randn(BATCH, 4, generator=data)       # (BATCH, 4)
        loss = (model(x) - x @ SLOPE).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
