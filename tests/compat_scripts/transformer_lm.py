"""A small causal Transformer language model over the same text (nn.TransformerEncoder with a causal mask).

Sinusoidal positional encoding (a registered buffer), a DataLoader over fixed-length chunks, AdamW with a warmup
then cosine learning-rate schedule, gradient clipping. The last line is `FINAL <eval loss>`.
"""
import argparse
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import LambdaLR
from torch.utils.data import DataLoader, TensorDataset


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=512):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return self.dropout(x + self.pe[:x.size(0)])


class TransformerLM(nn.Module):
    def __init__(self, ntoken, d_model, nhead, d_hid, nlayers, dropout=0.1):
        super().__init__()
        self.pos_encoder = PositionalEncoding(d_model, dropout)
        layer = nn.TransformerEncoderLayer(d_model, nhead, d_hid, dropout)
        self.transformer_encoder = nn.TransformerEncoder(layer, nlayers, enable_nested_tensor=False)
        self.embedding = nn.Embedding(ntoken, d_model)
        self.d_model = d_model
        self.linear = nn.Linear(d_model, ntoken)
        self.embedding.weight.data.uniform_(-0.1, 0.1)
        self.linear.bias.data.zero_()
        self.linear.weight.data.uniform_(-0.1, 0.1)

    def forward(self, src, src_mask):
        src = self.pos_encoder(self.embedding(src) * math.sqrt(self.d_model))
        return self.linear(self.transformer_encoder(src, src_mask, is_causal=True))


def causal_mask(sz):
    return torch.triu(torch.full((sz, sz), float("-inf")), diagonal=1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--seq", type=int, default=16)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=4)
    args = parser.parse_args()
    torch.manual_seed(args.seed)

    with open(os.path.join(os.path.dirname(__file__), "lighthouse.txt"), encoding="utf-8") as f:
        words = f.read().split()
    vocab = {w: i for i, w in enumerate(dict.fromkeys(words))}
    ids = torch.tensor([vocab[w] for w in words])
    n = (len(ids) - 1) // args.seq
    inputs = ids[:n * args.seq].view(n, args.seq)
    targets = ids[1:n * args.seq + 1].view(n, args.seq)
    loader = DataLoader(TensorDataset(inputs, targets), batch_size=args.batch, shuffle=True)

    model = TransformerLM(len(vocab), 32, 4, 64, 2, dropout=0.1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    total_steps = args.epochs * len(loader)
    warmup = len(loader)
    scheduler = LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / warmup)
                         * 0.5 * (1 + math.cos(math.pi * min(step, total_steps) / total_steps)))
    mask = causal_mask(args.seq)

    for epoch in range(1, args.epochs + 1):
        model.train()
        total = 0.0
        for x, y in loader:
            x, y = x.t(), y.t()  # (seq, batch): the encoder's default layout
            optimizer.zero_grad()
            out = model(x, mask)
            loss = F.cross_entropy(out.reshape(-1, out.size(-1)), y.reshape(-1))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            total += loss.item() * x.size(1)
        model.eval()
        with torch.no_grad():
            out = model(inputs.t(), mask)
            eval_loss = F.cross_entropy(out.reshape(-1, out.size(-1)), targets.t().reshape(-1)).item()
        print(f"epoch {epoch:2d} | lr {scheduler.get_last_lr()[0]:.5f} | train loss {total / n:5.2f} | "
              f"eval loss {eval_loss:5.2f} | ppl {math.exp(eval_loss):7.2f}")
    print(f"FINAL {eval_loss:.4f}")


if __name__ == "__main__":
    main()
