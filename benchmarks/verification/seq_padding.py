"""Training a sequence classifier on variable-length token sequences, as NLP tutorials write it: an in-memory list of
``--sequences`` int64 token sequences (lengths ``--min-len`` to ``--max-len``, 64 to 512 by default, tokens 1 to
``VOCAB``-1, 0 the padding; 9 MiB in all) with a label each, all drawn from one seeded generator;
``DataLoader(batch_size=32, shuffle=True, num_workers=0, collate_fn=pad_batch)`` whose collate pads the batch with
``torch.nn.utils.rnn.pad_sequence`` to its longest sequence and builds the attention mask from the lengths (both
int64, 1 where a token is, as Hugging Face's collators give them; 32 x about 500: 0.25 MiB a batch); each step
moves tokens, mask and labels with ``.to(device)``, then a token and position embedding (``--dim`` wide), a
``--layers``-layer TransformerEncoder (4 heads, no dropout), a masked mean over the sequence, a linear head,
cross-entropy, AdamW; 3 epochs (384 steps).
The checksum sums, each step, the loss, the batch's valid tokens less their expected value (VOCAB / 2) and 1000
times its labels less theirs (float64, on the GPU, read once at the end): centred, the sums of two batches differ
by far more than the tolerance, so a stale or overwritten batch, tokens, mask or labels, shows.

    python3 seq_padding.py [--mode MODE] [--sequences 4096] [--batch 32] [--epochs 3] [--min-len 64]
                           [--max-len 512] [--dim 128] [--layers 2]

Modes (the same batches in the same order, padded to the same length, the same updates, the same checksum):
  as_written     ``DataLoader(..., pin_memory=False)`` (the default), each tensor ``.to(device)``
  pinned_loader  ``DataLoader(..., pin_memory=True)`` (each collated batch copied into pinned memory by the
                 loader), each tensor ``.to(device, non_blocking=True)``
  on_gpu         every sequence concatenated into one flat int64 tensor with its offsets, lengths and labels, moved
                 to the GPU once at the start of the loop; each epoch's sampler order (a DataLoader over
                 ``range(len(data))`` with the same seeded generator) sent once, and each step's batch gathered and
                 padded there to the same length (taken from the lengths kept on the host: no read back)
"""

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset

from harness import parse, report

MODES = ("as_written", "pinned_loader", "on_gpu")
VOCAB, PAD, CLASSES, HEADS, SEED = 8000, 0, 10, 4, 0
# the checksum's sums are centred (a sum of positives would hide one batch among hundreds): the tokens' and the
# labels' expected values; a batch's centred label sum varies by tens, weighted to show beside the token sums
MID, LABEL_MID, LABEL_WEIGHT = VOCAB / 2, (CLASSES - 1) / 2, 1000.0


class Sequences(Dataset):
    """Token sequences held in memory, each with its label, returned as they are."""

    def __init__(self, seqs: list, labels: list):
        self.seqs, self.labels = seqs, labels

    def __len__(self):
        return len(self.seqs)

    def __getitem__(self, i):
        return self.seqs[i], self.labels[i]


def make_data(n: int, lo: int, hi: int) -> Sequences:
    """``n`` sequences of seeded lengths in [lo, hi] and seeded tokens, each its own tensor (as a tokenizer gives)."""
    g = torch.Generator().manual_seed(1)
    lengths = torch.randint(lo, hi + 1, (n,), generator=g)
    flat = torch.randint(1, VOCAB, (int(lengths.sum()),), generator=g)
    labels = torch.randint(0, CLASSES, (n,), generator=g)
    seqs = [s.clone() for s in torch.split(flat, lengths.tolist())]
    return Sequences(seqs, [int(c) for c in labels])


def pad_batch(batch):
    """The collate: tokens padded to the batch's longest sequence, the attention mask (int64, 1 where a token is),
    the labels."""
    seqs, labels = zip(*batch)
    tokens = pad_sequence(seqs, batch_first=True, padding_value=PAD)
    lengths = torch.tensor([len(s) for s in seqs])
    mask = (torch.arange(tokens.shape[1])[None, :] < lengths[:, None]).long()
    return tokens, mask, torch.tensor(labels)


class Classifier(nn.Module):
    """Token and position embeddings, a TransformerEncoder, a masked mean over the sequence, a linear head."""

    def __init__(self, dim: int, layers: int, max_len: int):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, dim, padding_idx=PAD)
        self.pos = nn.Embedding(max_len, dim)
        layer = nn.TransformerEncoderLayer(dim, HEADS, dim_feedforward=4 * dim, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(dim, CLASSES)

    def forward(self, tokens, mask):
        pos = torch.arange(tokens.shape[1], device=tokens.device)
        h = self.encoder(self.tok(tokens) + self.pos(pos), src_key_padding_mask=mask == 0)
        m = mask.unsqueeze(-1).to(h.dtype)
        return self.head((h * m).sum(1) / m.sum(1))


def make_loader(dataset, batch: int, pin_memory: bool, collate_fn=None) -> DataLoader:
    return DataLoader(dataset, batch_size=batch, shuffle=True, generator=torch.Generator().manual_seed(SEED),
                      num_workers=0, pin_memory=pin_memory, collate_fn=collate_fn)


def main():
    args = parse(MODES, __doc__, sequences=4096, batch=32, epochs=3, min_len=64, max_len=512, dim=128, layers=2)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = make_data(args.sequences, args.min_len, args.max_len)
    if args.mode == "on_gpu":  # the indices only: the sampler's order, each epoch, as the other modes' loader draws it
        loader = make_loader(range(len(data)), args.batch, False)
    else:
        loader = make_loader(data, args.batch, args.mode == "pinned_loader", pad_batch)
    lengths = torch.tensor([len(s) for s in data.seqs])  # the host's own metadata (on_gpu: each batch's length)
    torch.manual_seed(0)
    model = Classifier(args.dim, args.layers, args.max_len).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    def batches(whole):
        """One epoch's (tokens, mask, labels) on the GPU, as the mode gets them there."""
        if args.mode == "as_written":
            for tokens, mask, labels in loader:
                yield tokens.to(device), mask.to(device), labels.to(device)
        elif args.mode == "pinned_loader":
            for tokens, mask, labels in loader:
                yield (tokens.to(device, non_blocking=True), mask.to(device, non_blocking=True),
                       labels.to(device, non_blocking=True))
        else:
            flat, starts, lens, labels, cols = whole
            idx = list(loader)  # the epoch's batches of indices, drawn on the host
            order = torch.cat(idx).to(device)  # sent once an epoch
            at = 0
            for b in idx:
                width = int(lengths[b].max())  # the batch's longest sequence, as pad_sequence pads
                sel = order[at:at + len(b)]
                at += len(b)
                pos = cols[:width]
                real = pos[None, :] < lens[sel][:, None]
                where = torch.where(real, starts[sel][:, None] + pos[None, :], 0)
                yield flat[where].masked_fill_(~real, PAD), real.long(), labels[sel]

    def loop():
        whole = None
        if args.mode == "on_gpu":  # every sequence, flat, with its offsets, lengths and labels: moved once
            starts = torch.cumsum(lengths, 0) - lengths
            whole = (torch.cat(data.seqs).to(device), starts.to(device), lengths.to(device),
                     torch.tensor(data.labels).to(device), torch.arange(args.max_len).to(device))
        total = torch.zeros((), dtype=torch.float64, device=device)
        for _ in range(args.epochs):
            for tokens, mask, labels in batches(whole):
                opt.zero_grad()
                loss = loss_fn(model(tokens, mask), labels)
                loss.backward()
                opt.step()
                # the batch's own centred token sum and label sum: were they the step's?
                total += loss.detach().double() + (tokens.double() - MID).mul_(mask).sum() \
                    + LABEL_WEIGHT * (labels.double() - LABEL_MID).sum()
        return total.item()

    report(args, loop, "seq_padding")


if __name__ == "__main__":
    main()
