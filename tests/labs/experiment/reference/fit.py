"""Reference solution of the experiment lab (never shipped)."""
from tiny import build_model, train


def fit(seed=0):
    model = build_model(seed)
    losses = train(model, seed=seed)
    return {"train_losses": losses, "state_dict": model.state_dict()}
