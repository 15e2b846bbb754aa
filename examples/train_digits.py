"""Train a small CNN on the 8x8 handwritten digits, save a checkpoint, reload it and test again.

    python examples/train_digits.py

Written as an ordinary PyTorch program (`import lantern as torch`). The data is the UCI optical-recognition digits
test set (1,797 images, pixel values 0..16) as bundled with scikit-learn, kept in examples/data/digits.npz.
"""
import os
import pathlib
import tempfile

import numpy as np
from tqdm import tqdm

import lantern as torch
import lantern.nn as nn
from lantern.utils.data import DataLoader, TensorDataset

DATA = pathlib.Path(__file__).resolve().parent / "data" / "digits.npz"


class DigitsCNN(nn.Module):
    """conv(1->32)-BN-ReLU - conv(32->64)-BN-ReLU - maxpool 2 - dropout - linear(1024->10)."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Dropout(0.25), nn.Linear(64 * 4 * 4, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


def load_digits(test_fraction=0.2, seed=0):
    """(train, test) TensorDatasets of 1x8x8 float images scaled to [0, 1] and int64 labels."""
    data = np.load(DATA)
    images = torch.from_numpy(data["images"].astype(np.float32) / 16.0).unsqueeze(1)
    labels = torch.from_numpy(data["labels"].astype(np.int64))
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed))
    n_test = int(len(labels) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return TensorDataset(images[train], labels[train]), TensorDataset(images[test], labels[test])


def accuracy(model, dataset):
    model.eval()
    with torch.no_grad():
        images, labels = dataset.tensors
        correct = (model(images).argmax(dim=1) == labels).sum().item()
    return correct / len(labels)


def train(model, train_set, epochs=12, seed=0):
    torch.manual_seed(seed)
    loader = DataLoader(train_set, batch_size=32, shuffle=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        model.train()
        progress = tqdm(loader, desc=f"epoch {epoch + 1:2d}/{epochs}", leave=False)
        for images, labels in progress:
            optimizer.zero_grad()
            loss = loss_fn(model(images), labels)
            loss.backward()
            optimizer.step()
            progress.set_postfix(loss=f"{loss.item():.3f}", refresh=False)
        scheduler.step()
    return optimizer


def main():
    torch.manual_seed(0)
    train_set, test_set = load_digits()
    model = DigitsCNN()
    print(f"training {type(model).__name__} ({sum(p.numel() for p in model.parameters()):,} parameters) on "
          f"{len(train_set)} digits")
    optimizer = train(model, train_set)
    acc = accuracy(model, test_set)
    print(f"test accuracy: {acc:.1%} on {len(test_set)} held-out digits")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "digits.pt")
        torch.save(model.state_dict(), path)
        restored = DigitsCNN()
        restored.load_state_dict(torch.load(path))
        reloaded = accuracy(restored, test_set)
    print(f"checkpoint saved ({os.path.basename(path)}, PyTorch's zip format) and reloaded: "
          f"test accuracy {reloaded:.1%}")
    assert reloaded == acc, "the reloaded model must predict exactly as the trained one"
    return model, optimizer, test_set


if __name__ == "__main__":
    main()
