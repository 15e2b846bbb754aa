"""Whole training steps of small models (issues 5 and 8): zero_grad, forward, loss, backward, optimizer step.

    python bench/run.py --filter step               # among all workloads, both libraries
    python bench/workloads/training.py --lib torch  # this file's workloads, one library

The models are written once against the PyTorch API and built with whichever library the worker runs. Each
step's peak memory is measured too (bench/memory.py), with the goal lantern ≤ 1.2× torch (issue 19).
bench/workloads/training_compiled.py times each step again with the model passed through `torch.compile`.
"""
import os
import sys

if __name__ == "__main__":  # run as a script: the code it shares with the runner is one folder up
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from workload import Workload, at_most  # noqa: E402

STEP = "opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()"


def _mlp(lib):
    lib.manual_seed(0)
    nn = lib.nn
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
    return {"model": model, "opt": lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9),
            "loss_fn": nn.CrossEntropyLoss(), "x": lib.randn(128, 784), "y": lib.randint(0, 10, (128,))}


def _cnn(lib):
    lib.manual_seed(0)
    nn = lib.nn
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 10))
    return {"model": model, "opt": lib.optim.Adam(model.parameters()), "loss_fn": nn.CrossEntropyLoss(),
            "x": lib.randn(64, 1, 28, 28), "y": lib.randint(0, 10, (64,))}


def _tagger(lib, recurrent):
    """Embedding(100, 64), then nn.LSTM or nn.GRU (`recurrent`) (64, 128), then Linear(128, 100): 32 steps of 16
    sequences, Adam."""
    lib.manual_seed(0)
    nn = lib.nn

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed, self.rnn = nn.Embedding(100, 64), getattr(nn, recurrent)(64, 128)
            self.out = nn.Linear(128, 100)

        def forward(self, tokens):
            hidden, _ = self.rnn(self.embed(tokens))
            return self.out(hidden).flatten(0, 1)

    model = Tagger()
    return {"model": model, "opt": lib.optim.Adam(model.parameters()), "loss_fn": nn.CrossEntropyLoss(),
            "x": lib.randint(0, 100, (32, 16)), "y": lib.randint(0, 100, (32 * 16,))}


def _lstm(lib):
    return _tagger(lib, "LSTM")


def _gru(lib):
    return _tagger(lib, "GRU")


def _transformer(lib):
    lib.manual_seed(0)
    nn = lib.nn
    model = nn.TransformerEncoderLayer(128, 4, dim_feedforward=512, batch_first=True)
    return {"model": model, "opt": lib.optim.AdamW(model.parameters()), "loss_fn": nn.MSELoss(),
            "x": lib.randn(16, 64, 128), "y": lib.randn(16, 64, 128)}


MEMORY = at_most(1.2)

WORKLOADS = [
    Workload("mlp_train_step", STEP, _mlp, at_most(1.1), memory_goal=MEMORY),
    Workload("cnn_train_step", STEP, _cnn, at_most(1.1), memory_goal=MEMORY),
    Workload("lstm_train_step", STEP, _lstm, at_most(1.2), memory_goal=MEMORY),
    Workload("gru_train_step", STEP, _gru, at_most(1.2), memory_goal=MEMORY),
    Workload("transformer_train_step", STEP, _transformer, at_most(1.3), memory_goal=MEMORY),
]

if __name__ == "__main__":
    import run
    sys.exit(run.main(workloads=WORKLOADS))
