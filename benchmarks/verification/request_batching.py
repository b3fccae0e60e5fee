"""An online inference server's dynamic batching loop, as a PyTorch user writes it: ``--requests`` requests (8000 by
default), each a Python dict ``{"id": i, "tokens": [...]}`` whose list holds between ``--min-len`` 64 and
``--max-len`` 2048 token ids (Python ints in 1 .. ``--vocab`` - 1, 30522; the lengths log-uniform, so most requests
are short and a few long: 4.6 M tokens in all; a seeded numpy generator, made before the timed loop), are served in
arrival order. The batcher takes them first come first served: a batch closes when one more request would make it
``--max-batch`` 64 requests or its padded size (requests x the longest length rounded up to a multiple of
``--bucket`` 64) exceed ``--token-budget`` 16384 tokens (816 batches of 1 to 19 requests: a long request soon joins
a batch and the budget closes it; their padded tokens 12.3 M, 2.7 times the real ones). Each batch is padded on the
host with numpy into token ids (int64, 0 at padding) and an ``attention_mask`` (int64, 1 at real tokens, 0 at
padding, as tokenizers return it), both of the batch's padded shape, sent to the GPU, and run through a small
transformer encoder (a token and a position embedding of ``--dim`` 256, 2 pre-norm layers of ``--heads`` 4 heads of
``F.scaled_dot_product_attention`` with the padding mask on its keys and a 4 x ``--dim`` GELU MLP, the first token's
output through a final LayerNorm and a linear head to ``--classes`` 16 scores, as BERT's classifiers; seeded
weights, eval mode, ``torch.no_grad()``, bf16 autocast, the scores returned as float32). Each request's scores are
read back with ``.tolist()`` and become its response, ``{"id": ..., "scores": [...]}``, as a server returns JSON.
Before the loop, as a server warms up, one forward of every padded length the batcher can make (the largest batch of
that length) and one GPU packing of a batch keep the kernels' first-call set-up and the allocator's growth out of
the timing.

The checksum is the float64 sum, in request order, of every response's absolute scores (float32 values as Python
floats, added in the order the lists hold them). Every mode runs the same batches through the same kernels on
bit-identical tensors (the same ids, the same padding, the same mask), so the modes agree to the last bit on one
machine. After the loop: there must be one response a request, in arrival order, with ``--classes`` scores each; and
a few requests (the shortest request of each of the 4 batches padded the longest, where padding that leaked into
the attention would change their scores most, and 4 spread over the stream) are run again on a reference path,
alone, unpadded and without a mask: their scores must equal their responses within bf16's rounding (3% of the
largest score, plus 0.01): a request whose padding took part, whose row came from another request or whose batch
was stale differs by far more. A failure exits 1.

    python3 request_batching.py [--mode MODE] [--requests 8000] [--min-len 64] [--max-len 2048] [--max-batch 64]
                                [--token-budget 16384] [--bucket 64] [--vocab 30522] [--dim 256] [--heads 4]
                                [--classes 16]

Modes (the same batches in the same order, the same responses, the same checksum):
  as_written       each batch padded into fresh numpy arrays (``padded = np.zeros((n, L), np.int64)``,
                   ``padded[k, :len(tokens)] = tokens``, the mask likewise), sent with
                   ``torch.tensor(padded).to(device)`` and ``torch.from_numpy(mask).to(device)`` from pageable memory;
                   each batch's scores read with ``scores.cpu().tolist()``
  pinned_prealloc  one pinned int64 buffer for the ids and one for the mask, of the largest batch (``--token-budget``
                   elements each), and one pinned float32 buffer for the scores (``--max-batch`` x ``--classes``),
                   allocated at the start of the loop; each batch padded in place into a contiguous (n, L) view of
                   the pinned buffers (``.fill(0)`` then ``np.copyto(view[k, :len], tokens)``), uploaded with
                   ``.to(device, non_blocking=True)``, an event recorded after the uploads and synchronised before the
                   buffers are written again; the scores copied into the pinned scores buffer
                   (``copy_(..., non_blocking=True)``) and an event synchronised before ``.tolist()`` reads them
  gpu_packing      no padding on the host: each batch's token lists concatenated into one flat int64 array behind
                   its n lengths (``np.concatenate``), sent as one tensor (``torch.from_numpy(packed).to(device)``,
                   pageable: the real tokens only, 19% of as_written's bytes, one copy instead of two), the mask made
                   on the GPU (``arange(L) < lengths[:, None]``) and the ids scattered into a zeroed (n, L) tensor with
                   ``masked_scatter_`` (row-major, as the lists were concatenated); the scores read with
                   ``.cpu().tolist()``
  side_stream      as pinned_prealloc with two sets of pinned id and mask buffers used in turn: once a batch's
                   forward is queued the host pads the next batch into the other set and uploads it on a side
                   ``torch.cuda.Stream`` (``non_blocking=True``) while the current batch computes; the compute waits
                   with ``current_stream().wait_stream(side)`` and ``record_stream``, an event per set says when its
                   upload has finished and it may be written again; the scores as pinned_prealloc's, read after the
                   next batch has been padded and queued for upload
"""

import math
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from harness import parse, report

MODES = ("as_written", "pinned_prealloc", "gpu_packing", "side_stream")
LAYERS = 2
N_CHECK = 4  # batches padded the longest whose shortest request is checked, and requests spread over the stream


class Block(nn.Module):
    """A pre-norm transformer encoder layer: self-attention whose keys are masked at padding, then a GELU MLP."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x, key_mask):
        n, L, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(n, L, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=key_mask)
        x = x + self.proj(a.transpose(1, 2).reshape(n, L, d))
        return x + self.mlp(self.norm2(x))


class Encoder(nn.Module):
    """Token ids (n, L) and an attention mask (n, L; nonzero at real tokens, or None: no padding) -> scores
    (n, classes), float32."""

    def __init__(self, vocab: int, max_len: int, dim: int, heads: int, classes: int):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim, padding_idx=0)
        self.pos = nn.Embedding(max_len, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(LAYERS))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)
        for m in self.modules():  # BERT's initialisation
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)
        self.tok.weight.data[0].zero_()  # the padding token's row

    def forward(self, ids, attention_mask=None):
        x = self.tok(ids) + self.pos.weight[:ids.shape[1]]
        keep = None if attention_mask is None else attention_mask.bool()
        key_mask = None if keep is None else keep[:, None, None, :]  # every query attends to the real keys only
        for blk in self.blocks:
            x = blk(x, key_mask)
        return self.head(self.norm(x[:, 0])).float()  # the first token's output, as BERT's classifiers


def make_requests(n: int, lo: int, hi: int, vocab: int) -> list[dict]:
    """The request stream: log-uniform lengths in [lo, hi], token ids in [1, vocab), as Python lists."""
    rng = np.random.default_rng(0)
    lens = np.exp(rng.uniform(math.log(lo), math.log(hi + 1), n)).astype(np.int64).clip(lo, hi)
    return [{"id": i, "tokens": rng.integers(1, vocab, int(m)).tolist()} for i, m in enumerate(lens)]


def main():
    args = parse(MODES, __doc__, requests=8000, min_len=64, max_len=2048, max_batch=64, token_budget=16384,
                 bucket=64, vocab=30522, dim=256, heads=4, classes=16)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    B, budget, bucket, C = args.max_batch, args.token_budget, args.bucket, args.classes

    def padded_len(m: int) -> int:
        return -(-m // bucket) * bucket

    top = padded_len(args.max_len)
    if not (1 <= args.min_len <= args.max_len and bucket >= 1 and top <= budget and B >= 1 and args.requests >= 1
            and args.dim % args.heads == 0 and args.vocab >= 2):
        sys.exit(f"request_batching: requests of {args.min_len} to {args.max_len} tokens (padded to {top}) do not "
                 f"fit a budget of {budget} tokens, or the model's sizes do not divide")
    requests = make_requests(args.requests, args.min_len, args.max_len, args.vocab)

    def batcher(queue):
        """First come, first served: yield each batch (a list of requests) and its padded length."""
        batch, longest = [], 0
        for r in queue:
            m = max(longest, len(r["tokens"]))
            if batch and (len(batch) + 1 > B or (len(batch) + 1) * padded_len(m) > budget):
                yield batch, padded_len(longest)
                batch, m = [], len(r["tokens"])
            batch.append(r)
            longest = m
        if batch:
            yield batch, padded_len(longest)

    # the requests checked after the loop: the shortest of each of the batches padded the longest, and a spread
    plan = list(batcher(requests))
    longest_batches = sorted(range(len(plan)), key=lambda b: (-plan[b][1], b))[:N_CHECK]
    check = {min(plan[b][0], key=lambda r: (len(r["tokens"]), r["id"]))["id"] for b in longest_batches}
    check |= {(args.requests - 1) * q // max(1, N_CHECK - 1) for q in range(N_CHECK)}
    check = sorted(check)

    torch.manual_seed(0)
    model = Encoder(args.vocab, top, args.dim, args.heads, C).to(device).eval()
    autocast = torch.autocast(device_type=device.type, dtype=torch.bfloat16)

    def pack_on_gpu(packed, n: int, L: int):
        """A packed batch on the GPU (its n lengths, then its tokens) -> padded ids and the mask."""
        lengths, values = packed[:n], packed[n:]
        mask = torch.arange(L, device=device) < lengths[:, None]
        ids = torch.zeros((n, L), dtype=torch.int64, device=device).masked_scatter_(mask, values)
        return ids, mask

    with torch.no_grad(), autocast:  # a server's warm-up: every padded length, the largest batch of it
        for L in range(bucket, top + 1, bucket):
            n = min(B, budget // L)
            model(torch.ones((n, L), dtype=torch.int64, device=device),
                  torch.ones((n, L), dtype=torch.int64, device=device))
        pack_on_gpu(torch.tensor([1, 2, 3, 4, 5]).to(device), 2, bucket)

    def loop():
        responses = []
        total = 0.0

        def respond(batch, rows) -> None:
            nonlocal total
            for r, scores in zip(batch, rows):
                responses.append({"id": r["id"], "scores": scores})
                total += sum(abs(s) for s in scores)

        with torch.no_grad(), autocast:
            if args.mode == "as_written":
                for batch, L in batcher(requests):
                    n = len(batch)
                    padded = np.zeros((n, L), dtype=np.int64)
                    mask = np.zeros((n, L), dtype=np.int64)
                    for k, r in enumerate(batch):
                        padded[k, :len(r["tokens"])] = r["tokens"]
                        mask[k, :len(r["tokens"])] = 1
                    ids = torch.tensor(padded).to(device)
                    attention_mask = torch.from_numpy(mask).to(device)
                    scores = model(ids, attention_mask)
                    respond(batch, scores.cpu().tolist())

            elif args.mode == "pinned_prealloc":
                ids_pin = torch.empty(budget, dtype=torch.int64, pin_memory=True)
                mask_pin = torch.empty(budget, dtype=torch.int64, pin_memory=True)
                out_pin = torch.empty((B, C), pin_memory=True)
                uploaded = None
                for batch, L in batcher(requests):
                    n = len(batch)
                    if uploaded is not None:
                        uploaded.synchronize()  # the last uploads have read the pinned buffers
                    ids_np = ids_pin.numpy()[:n * L].reshape(n, L)
                    mask_np = mask_pin.numpy()[:n * L].reshape(n, L)
                    ids_np.fill(0)
                    mask_np.fill(0)
                    for k, r in enumerate(batch):
                        np.copyto(ids_np[k, :len(r["tokens"])], r["tokens"])
                        mask_np[k, :len(r["tokens"])] = 1
                    ids = ids_pin[:n * L].view(n, L).to(device, non_blocking=True)
                    attention_mask = mask_pin[:n * L].view(n, L).to(device, non_blocking=True)
                    uploaded = torch.cuda.Event()
                    uploaded.record()
                    out_pin[:n].copy_(model(ids, attention_mask), non_blocking=True)
                    ready = torch.cuda.Event()
                    ready.record()
                    ready.synchronize()  # the scores have arrived
                    respond(batch, out_pin[:n].tolist())

            elif args.mode == "gpu_packing":
                for batch, L in batcher(requests):
                    n = len(batch)
                    lengths = np.array([len(r["tokens"]) for r in batch], dtype=np.int64)
                    packed = np.concatenate([lengths] + [np.asarray(r["tokens"], dtype=np.int64) for r in batch])
                    ids, attention_mask = pack_on_gpu(torch.from_numpy(packed).to(device), n, L)
                    scores = model(ids, attention_mask)
                    respond(batch, scores.cpu().tolist())

            else:  # side_stream
                ids_pin = [torch.empty(budget, dtype=torch.int64, pin_memory=True) for _ in range(2)]
                mask_pin = [torch.empty(budget, dtype=torch.int64, pin_memory=True) for _ in range(2)]
                out_pin = torch.empty((B, C), pin_memory=True)
                uploaded = [None, None]
                side, main_stream = torch.cuda.Stream(), torch.cuda.current_stream()

                def stage(b: int, batch, L: int):
                    """Batch b padded into pinned set b % 2 and uploaded on the side stream."""
                    s, n = b % 2, len(batch)
                    if uploaded[s] is not None:
                        uploaded[s].synchronize()  # the uploads that last read this set have finished
                    ids_np = ids_pin[s].numpy()[:n * L].reshape(n, L)
                    mask_np = mask_pin[s].numpy()[:n * L].reshape(n, L)
                    ids_np.fill(0)
                    mask_np.fill(0)
                    for k, r in enumerate(batch):
                        np.copyto(ids_np[k, :len(r["tokens"])], r["tokens"])
                        mask_np[k, :len(r["tokens"])] = 1
                    with torch.cuda.stream(side):
                        ids = ids_pin[s][:n * L].view(n, L).to(device, non_blocking=True)
                        attention_mask = mask_pin[s][:n * L].view(n, L).to(device, non_blocking=True)
                        uploaded[s] = side.record_event()
                    return ids, attention_mask

                queue = batcher(requests)
                current = next(queue)
                nxt = stage(0, *current)
                b = 0
                while current is not None:
                    batch, _ = current
                    n = len(batch)
                    main_stream.wait_stream(side)  # the batch has arrived
                    ids, attention_mask = nxt
                    ids.record_stream(main_stream)  # made on the side stream, read on this one
                    attention_mask.record_stream(main_stream)
                    out_pin[:n].copy_(model(ids, attention_mask), non_blocking=True)
                    ready = torch.cuda.Event()
                    ready.record()
                    following = next(queue, None)
                    if following is not None:
                        nxt = stage(b + 1, *following)  # the host pads, the side stream uploads, batch b computes
                    ready.synchronize()  # the scores have arrived
                    respond(batch, out_pin[:n].tolist())
                    current, b = following, b + 1

        check_responses(responses)
        return total

    def check_responses(responses) -> None:
        """One response a request, in order, each with C scores; the check requests against a reference path
        (alone, unpadded, no mask); exit 1."""
        if [r["id"] for r in responses] != list(range(args.requests)):
            sys.exit(f"request_batching: {len(responses)} responses for {args.requests} requests, or out of order")
        if any(len(r["scores"]) != C for r in responses):
            sys.exit(f"request_batching: a response without {C} scores")
        with torch.no_grad(), autocast:
            for i in check:
                ref = model(torch.tensor([requests[i]["tokens"]]).to(device)).cpu().numpy()[0].astype(np.float64)
                got = np.array(responses[i]["scores"], dtype=np.float64)
                err, bound = float(np.abs(got - ref).max()), 0.03 * float(np.abs(ref).max()) + 0.01
                if not err <= bound:
                    sys.exit(f"request_batching: request {i} ({len(requests[i]['tokens'])} tokens): its scores differ "
                             f"from the reference's by {err:.4g} (bound {bound:.4g})")

    report(args, loop, "request_batching")


if __name__ == "__main__":
    main()
