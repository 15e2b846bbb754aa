"""Word-level LSTM language model on a small text (the classic PyTorch word_language_model recipe, shrunk).

Builds a vocabulary, batchifies the token stream, trains with truncated backpropagation through time (hidden state
carried over and detached between chunks), clips gradients, and prints perplexity. The last line is
`FINAL <train loss>` so that a test can compare runs.
"""
import argparse
import math
import os

import torch
import torch.nn as nn


class Corpus:
    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            words = f.read().split()
        self.vocab = {}
        for w in words:
            self.vocab.setdefault(w, len(self.vocab))
        self.ids = torch.tensor([self.vocab[w] for w in words], dtype=torch.long)


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape(-1)


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.2):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout if nlayers > 1 else 0.0)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nlayers, self.nhid = nlayers, nhid
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        return self.decoder(output).view(-1, self.decoder.out_features), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def evaluate(model, data, bptt, criterion, bsz):
    model.eval()
    total, hidden = 0.0, model.init_hidden(bsz)
    with torch.no_grad():
        for i in range(0, data.size(0) - 1, bptt):
            x, y = get_batch(data, i, bptt)
            out, hidden = model(x, hidden)
            total += len(x) * criterion(out, y).item()
    return total / (len(data) - 1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--bptt", type=int, default=12)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--clip", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=1111)
    args = parser.parse_args()
    torch.manual_seed(args.seed)

    corpus = Corpus(os.path.join(os.path.dirname(__file__), "lighthouse.txt"))
    bsz = 8
    train = batchify(corpus.ids, bsz)
    ntokens = len(corpus.vocab)
    model = RNNModel(ntokens, 32, 64, 1, dropout=0.1)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    for epoch in range(1, args.epochs + 1):
        model.train()
        hidden = model.init_hidden(bsz)
        total = 0.0
        for batch, i in enumerate(range(0, train.size(0) - 1, args.bptt)):
            x, y = get_batch(train, i, args.bptt)
            hidden = repackage_hidden(hidden)
            optimizer.zero_grad()
            output, hidden = model(x, hidden)
            loss = criterion(output, y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            optimizer.step()
            total += loss.item()
        loss = evaluate(model, train, args.bptt, criterion, bsz)
        print(f"epoch {epoch:2d} | train loss {total / (batch + 1):5.2f} | eval loss {loss:5.2f} | "
              f"ppl {math.exp(loss):8.2f}")
    print(f"FINAL {loss:.4f}")


if __name__ == "__main__":
    main()
