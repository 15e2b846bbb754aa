"""Full-batch L-BFGS with a strong-Wolfe line search: a polynomial least-squares fit and a logistic regression.

The data are deterministic (no random numbers), and the weights start at zero, so runs are comparable exactly.
The last line is `FINAL <logistic loss>`.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def poly_features(x, degree):
    return torch.stack([x ** k for k in range(1, degree + 1)], dim=1)


def fit(model, loss_fn, max_iter, rounds=3):
    optimizer = torch.optim.LBFGS(model.parameters(), lr=1, max_iter=max_iter, history_size=10,
                                  line_search_fn="strong_wolfe")

    def closure():
        optimizer.zero_grad()
        loss = loss_fn()
        loss.backward()
        return loss

    for _ in range(rounds):
        optimizer.step(closure)
    return loss_fn().item()


def main():
    torch.manual_seed(0)
    # 1) least squares: y = sin(3x) + 0.5x on [-1, 1], a degree-7 polynomial
    x = torch.linspace(-1, 1, 200, dtype=torch.float64)
    y = torch.sin(3 * x) + 0.5 * x
    poly = nn.Linear(7, 1, dtype=torch.float64)
    nn.init.zeros_(poly.weight)
    nn.init.zeros_(poly.bias)
    feats = poly_features(x, 7)
    mse = fit(poly, lambda: F.mse_loss(poly(feats).squeeze(1), y), max_iter=50)
    print(f"polynomial fit mse {mse:.3e}")

    # 2) logistic regression on a grid: label = inside a tilted ellipse, quadratic features
    g = torch.linspace(-1, 1, 30)
    a, b = torch.meshgrid(g, g, indexing="ij")
    a, b = a.reshape(-1), b.reshape(-1)
    labels = ((a / 0.8) ** 2 + ((b - 0.3 * a) / 0.5) ** 2 < 1).float()
    inputs = torch.stack([a, b, a * a, b * b, a * b], dim=1)
    clf = nn.Linear(5, 1)
    nn.init.zeros_(clf.weight)
    nn.init.zeros_(clf.bias)
    criterion = nn.BCEWithLogitsLoss()
    l2 = 1e-3

    def logistic_loss():
        return criterion(clf(inputs).squeeze(1), labels) + l2 * clf.weight.pow(2).sum()

    loss = fit(clf, logistic_loss, max_iter=40)
    with torch.no_grad():
        accuracy = ((clf(inputs).squeeze(1) > 0).float() == labels).float().mean().item()
    print(f"logistic regression loss {loss:.4f} accuracy {accuracy:.3f}")
    print(f"FINAL {loss:.6f}")


if __name__ == "__main__":
    main()
