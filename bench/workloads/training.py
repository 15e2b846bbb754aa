"""Whole training steps of small models (issues 5 and 8): zero_grad, forward, loss, backward, optimizer step.

    python bench/run.py --filter step

The models are written once against the PyTorch API and built with whichever library the worker runs.
"""
from workload import Workload, at_most

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


def _lstm(lib):
    lib.manual_seed(0)
    nn = lib.nn

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed, self.lstm, self.out = nn.Embedding(100, 64), nn.LSTM(64, 128), nn.Linear(128, 100)

        def forward(self, tokens):
            hidden, _ = self.lstm(self.embed(tokens))
            return self.out(hidden).flatten(0, 1)

    model = Tagger()
    return {"model": model, "opt": lib.optim.Adam(model.parameters()), "loss_fn": nn.CrossEntropyLoss(),
            "x": lib.randint(0, 100, (32, 16)), "y": lib.randint(0, 100, (32 * 16,))}


def _transformer(lib):
    lib.manual_seed(0)
    nn = lib.nn
    model = nn.TransformerEncoderLayer(128, 4, dim_feedforward=512, batch_first=True)
    return {"model": model, "opt": lib.optim.AdamW(model.parameters()), "loss_fn": nn.MSELoss(),
            "x": lib.randn(16, 64, 128), "y": lib.randn(16, 64, 128)}


WORKLOADS = [
    Workload("mlp_train_step", STEP, _mlp, at_most(1.2)),
    Workload("cnn_train_step", STEP, _cnn, at_most(1.5)),
    Workload("lstm_train_step", STEP, _lstm, at_most(1.5)),
    Workload("transformer_train_step", STEP, _transformer, at_most(1.3)),
]
