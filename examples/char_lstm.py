"""Train a character-level LSTM language model on Shakespeare's Sonnets with pytorchlite,
the way one would with PyTorch: Embedding -> LSTM -> Linear, cross-entropy on the next
character, Adam and gradient-norm clipping; then sample some text from it.

The training text, examples/data/sonnets.txt, is 22 of William Shakespeare's Sonnets
(first printed 1609, public domain) in the modernised spelling of common editions such as
Project Gutenberg eBook #1041; its '#' header lines are skipped.

    python examples/char_lstm.py [--epochs 8] [--steps 30] [--seq-len 64] [--batch-size 32]

Prints the mean training loss of each epoch (from ln(vocabulary) ~ 4.1 at the start to
about 1.2 after the default 8 epochs of 30 steps, some 30 s on one core) and, at the end, a
short text sampled from the model, starting with --prompt.
"""

import argparse
import math
import os
import time

import pytorchlite as torch
import pytorchlite.nn as nn
import pytorchlite.nn.functional as F
import pytorchlite.optim as optim

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "sonnets.txt")


def load_text(path=DATA):
    with open(path, encoding="utf-8") as f:
        return "".join(line for line in f if not line.startswith("#")).lstrip("\n")


class Vocabulary:
    """The characters of a text, each mapped to an index."""

    def __init__(self, text):
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}

    def __len__(self):
        return len(self.chars)

    def encode(self, text):
        return torch.tensor([self.index[c] for c in text], dtype=torch.int64)

    def decode(self, indices):
        return "".join(self.chars[i] for i in indices)


class CharLSTM(nn.Module):
    """(N, T) character indices -> (N, T, vocabulary) logits of the next character."""

    def __init__(self, vocab_size, embed_dim=32, hidden_size=128, num_layers=1, dropout=0.0):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim)
        self.lstm = nn.LSTM(embed_dim, hidden_size, num_layers, batch_first=True, dropout=dropout)
        self.head = nn.Linear(hidden_size, vocab_size)

    def forward(self, x, state=None):
        out, state = self.lstm(self.embed(x), state)
        return self.head(out), state


def random_batches(data, batch_size, seq_len, generator):
    """Random windows of seq_len + 1 characters: inputs and the targets one step ahead."""
    starts = torch.randint(0, len(data) - seq_len - 1, (batch_size,), generator=generator)
    offsets = torch.arange(seq_len + 1)
    windows = data[starts.unsqueeze(1) + offsets]          # (N, T + 1) by advanced indexing
    return windows[:, :-1], windows[:, 1:]


def sample(model, vocab, prompt, length, temperature, generator):
    """Feed the prompt, then draw one character at a time, carrying the LSTM state."""
    model.eval()
    out = list(prompt)
    with torch.no_grad():
        logits, state = model(vocab.encode(prompt).unsqueeze(0))
        last = logits[0, -1]
        for _ in range(length):
            probs = F.softmax(last / temperature, dim=0)
            nxt = int(torch.multinomial(probs, 1, generator=generator).item())
            out.append(vocab.chars[nxt])
            logits, state = model(torch.tensor([[nxt]]), state)
            last = logits[0, -1]
    model.train()
    return "".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--steps", type=int, default=30, help="optimizer steps per epoch")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--hidden-size", type=int, default=128)
    p.add_argument("--embed-dim", type=int, default=32)
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--dropout", type=float, default=0.0, help="between LSTM layers (needs --layers > 1)")
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--clip", type=float, default=1.0, help="max gradient norm")
    p.add_argument("--sample-length", type=int, default=300)
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--prompt", default="Shall I ")
    p.add_argument("--seed", type=int, default=0)
    # Each op works on a few thousand elements: too few to pay for waking a thread team on a
    # shared machine, so one thread is the fastest default here.
    p.add_argument("--threads", type=int, default=1, help="intra-op threads (default 1)")
    args = p.parse_args(argv)

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    text = load_text()
    vocab = Vocabulary(text)
    data = vocab.encode(text)
    model = CharLSTM(len(vocab), args.embed_dim, args.hidden_size, args.layers, args.dropout)
    opt = optim.Adam(model.parameters(), lr=args.lr)
    print(model)
    print(f"{len(text)} characters, vocabulary of {len(vocab)}, {sum(q.numel() for q in model.parameters())} "
          f"parameters; a uniform guess scores ln({len(vocab)}) = {math.log(len(vocab)):.3f}")

    losses = []
    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        total = 0.0
        t0 = time.perf_counter()
        for _ in range(args.steps):
            x, y = random_batches(data, args.batch_size, args.seq_len, gen)
            logits, _ = model(x)
            loss = F.cross_entropy(logits.reshape(-1, len(vocab)), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            opt.step()
            total += loss.item()
        losses.append(total / args.steps)
        print(f"epoch {epoch:2d}/{args.epochs}  loss {losses[-1]:.4f}  ({time.perf_counter() - t0:.1f} s)",
              flush=True)
    print(f"trained in {time.perf_counter() - start:.1f} s")
    text_out = sample(model, vocab, args.prompt, args.sample_length, args.temperature, gen)
    print("--- sample ---")
    print(text_out)
    return losses


if __name__ == "__main__":
    main()
