"""Training a sequence classifier from a tokenized corpus held as Python lists, as NLP tutorials pad the batches by
hand: ``--sequences`` 10000 sequences of token ids (Python lists of ints, lengths ``--min-len`` 64 to ``--max-len``
512, ids 1 to ``VOCAB``-1, 0 the padding; from a seeded generator, made before the timed loop); each epoch a
shuffled order (seeded, the same in every mode), each step a batch of ``--batch`` 64 sequences padded on the host
to the batch's longest with list arithmetic, the ids ``torch.tensor(padded)`` (int64) and the attention mask
``torch.tensor([[1] * len(s) + [0] * (width - len(s)) ...])`` (int64, 1 where a token is), both ``.to(device)``
(about 0.25 MiB each); a token and position embedding (``--dim`` 128 wide), a ``--layers``-layer TransformerEncoder
(4 heads, no dropout), a masked mean, a linear head to 10 classes, cross-entropy against the first token's id
modulo 10 (a label taken on the GPU from the ids), Adam; ``loss.item()`` logged every step; ``--epochs`` 2 (314
steps: the last batch of an epoch short).

The checksum is the sum of the logged losses. Every mode gives the model the same int64 ids and mask, bit for bit,
in the same order, so it runs the same kernels on the same values in the same order: the losses agree but for the
last bits of CUDA's atomic accumulations in some backward kernels, far below run_gpu.py's tolerance (1e-4 of
about 720). Each step also takes on the GPU, per row, the sum of the ids, the sum of the ids under the mask and the
mask's sum (kept there, read once an epoch) and checks them against the host's sums and lengths of the sequences
the epoch's order names (exit 1): a row that did not arrive, arrived from another batch, was padded with other
than 0 or masked wrongly differs.

    python3 token_batches.py [--mode MODE] [--sequences 10000] [--batch 64] [--epochs 2] [--min-len 64]
                             [--max-len 512] [--dim 128] [--layers 2]

Modes (the same batches in the same order, padded to the same width, the same updates, the same checksum):
  as_written          each step the lists padded, ``torch.tensor(padded)`` and ``torch.tensor(mask)``,
                      ``.to(device)`` from pageable memory
  pinned_nonblocking  the same padded lists and ``torch.tensor`` calls, copied into views (``[:n * width]``, so
                      contiguous) of two pinned int64 buffers (the ids', the mask's) allocated at the start of the
                      loop, each ``.to(device, non_blocking=True)``; an event waited on before they are written again
  pretokenized_gpu    the whole corpus padded once to ``--max-len`` (numpy) into one int64 tensor moved to the GPU
                      at the start of the loop with the lengths; each epoch's order sent once; each step's ids
                      indexed there (``corpus[sel, :width]``, the width from the host's lengths: no read back) and its
                      mask computed there from the lengths
  packed              the padded ids and mask converted together, ``torch.tensor((padded, mask),
                      dtype=torch.int32)``, into one pinned int32 buffer (a view of it, 2 x n x width) allocated at the
                      start of the loop, one ``.to(device, non_blocking=True)`` a step, ``.long()`` on the GPU; an
                      event waited on before the buffer is written again
"""

import sys

import numpy as np
import torch
from torch import nn

from harness import parse, report

MODES = ("as_written", "pinned_nonblocking", "pretokenized_gpu", "packed")
VOCAB, PAD, CLASSES, HEADS, SEED = 30522, 0, 10, 4, 0


class Classifier(nn.Module):
    """Token and position embeddings, a TransformerEncoder, a masked mean over the sequence, a linear head."""

    def __init__(self, dim: int, layers: int, max_len: int):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, dim, padding_idx=PAD)
        self.pos = nn.Embedding(max_len, dim)
        layer = nn.TransformerEncoderLayer(dim, HEADS, dim_feedforward=4 * dim, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(dim, CLASSES)

    def forward(self, ids, mask):
        pos = torch.arange(ids.shape[1], device=ids.device)
        h = self.encoder(self.tok(ids) + self.pos(pos), src_key_padding_mask=mask == 0)
        m = mask.unsqueeze(-1).to(h.dtype)
        return self.head((h * m).sum(1) / m.sum(1))


def make_corpus(n: int, lo: int, hi: int) -> list:
    """``n`` seeded sequences of token ids, each a Python list of ints (as a tokenizer returns them)."""
    rng = np.random.default_rng(1)
    lengths = rng.integers(lo, hi + 1, n)
    flat = rng.integers(1, VOCAB, int(lengths.sum()))
    return [s.tolist() for s in np.split(flat, np.cumsum(lengths)[:-1])]


def pad(batch: list):
    """The batch padded to its longest sequence: the padded ids and the attention mask (lists of lists)."""
    width = max(len(s) for s in batch)
    padded = [s + [PAD] * (width - len(s)) for s in batch]
    mask = [[1] * len(s) + [0] * (width - len(s)) for s in batch]
    return padded, mask


def check_epoch(epoch: int, rows: np.ndarray, want: np.ndarray) -> None:
    """The GPU's per-row sums of the ids, of the masked ids and of the mask against the host's; exit 1."""
    bad = np.flatnonzero((rows != want).any(1))
    if len(bad):
        r = bad[0]
        sys.exit(f"token_batches: epoch {epoch}, row {r}: ids sum {rows[r, 0]}, masked {rows[r, 1]}, mask {rows[r, 2]}"
                 f"; the sequence's sum {want[r, 0]}, length {want[r, 2]} ({len(bad)} rows differ)")


def main():
    args = parse(MODES, __doc__, sequences=10000, batch=64, epochs=2, min_len=64, max_len=512, dim=128, layers=2)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    B, n_seq = args.batch, args.sequences
    corpus = make_corpus(n_seq, args.min_len, args.max_len)
    lengths = [len(s) for s in corpus]
    sums = np.array([sum(s) for s in corpus], dtype=np.int64)
    g = torch.Generator().manual_seed(SEED)
    orders = [torch.randperm(n_seq, generator=g).tolist() for _ in range(args.epochs)]
    # what each epoch's rows must sum to: the ids, the ids under the mask, the mask
    wants = [np.stack([sums[o], sums[o], np.array(lengths)[o]], 1) for o in orders]
    torch.manual_seed(0)
    model = Classifier(args.dim, args.layers, args.max_len).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    def loop():
        pin_ids = pin_mask = pin_packed = whole = None
        freed = None  # the pinned buffers' last upload (pinned_nonblocking, packed)
        if args.mode == "pinned_nonblocking":
            pin_ids = torch.empty(B * args.max_len, dtype=torch.long, pin_memory=True)
            pin_mask = torch.empty(B * args.max_len, dtype=torch.long, pin_memory=True)
        elif args.mode == "packed":
            pin_packed = torch.empty(2 * B * args.max_len, dtype=torch.int32, pin_memory=True)
        elif args.mode == "pretokenized_gpu":  # the corpus padded once, moved once
            arr = np.zeros((n_seq, args.max_len), dtype=np.int64)
            for i, s in enumerate(corpus):
                arr[i, :len(s)] = s
            whole = (torch.from_numpy(arr).to(device), torch.tensor(lengths).to(device),
                     torch.arange(args.max_len).to(device))
        rows = torch.empty((n_seq, 3), dtype=torch.long, device=device)  # the check's, per row of the epoch
        losses = []
        for epoch in range(args.epochs):
            order = orders[epoch]
            order_gpu = torch.tensor(order).to(device) if args.mode == "pretokenized_gpu" else None
            for at in range(0, n_seq, B):
                picked = order[at:at + B]
                n = len(picked)
                if args.mode == "pretokenized_gpu":
                    flat, lens, cols = whole
                    width = max(lengths[i] for i in picked)  # the host's own lengths: no read back
                    sel = order_gpu[at:at + n]
                    ids = flat[sel, :width]
                    mask = (cols[:width][None, :] < lens[sel][:, None]).long()
                else:
                    padded, attn = pad([corpus[i] for i in picked])
                    width = len(padded[0])
                    if args.mode == "as_written":
                        ids = torch.tensor(padded).to(device)
                        mask = torch.tensor(attn).to(device)
                    else:
                        if freed is not None:
                            freed.synchronize()  # the last upload has read the pinned buffers
                        if args.mode == "pinned_nonblocking":
                            ids_h = pin_ids[:n * width].view(n, width)
                            mask_h = pin_mask[:n * width].view(n, width)
                            ids_h.copy_(torch.tensor(padded))
                            mask_h.copy_(torch.tensor(attn))
                            ids = ids_h.to(device, non_blocking=True)
                            mask = mask_h.to(device, non_blocking=True)
                        else:
                            both = pin_packed[:2 * n * width].view(2, n, width)
                            both.copy_(torch.tensor((padded, attn), dtype=torch.int32))
                            both = both.to(device, non_blocking=True)
                            ids, mask = both[0].long(), both[1].long()
                        freed = torch.cuda.Event()
                        freed.record()
                with torch.no_grad():  # the check's sums: what the GPU trained on
                    rows[at:at + n] = torch.stack((ids.sum(1), (ids * mask).sum(1), mask.sum(1)), 1)
                labels = ids[:, 0] % CLASSES
                opt.zero_grad()
                loss = loss_fn(model(ids, mask), labels)
                loss.backward()
                opt.step()
                losses.append(loss.item())
            check_epoch(epoch, rows.cpu().numpy(), wants[epoch])
        return sum(losses)

    report(args, loop, "token_batches")


if __name__ == "__main__":
    main()
