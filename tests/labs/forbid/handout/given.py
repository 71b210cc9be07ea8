"""Given with the lab: its code may use what learners may not."""
import torch


def normalise(x):
    return torch.nn.functional.softmax(x, -1)      # torch's Python code, called by given code


def apply(function, x):
    """What a training loop or a callback does: given code calling what it is handed."""
    return function(x, -1)
