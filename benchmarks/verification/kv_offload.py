"""Greedy generation with the KV cache offloaded to the host, as users of Hugging Face's "offloaded cache" write it
by hand: a small decoder (``--layers`` 16 pre-norm blocks, ``--dim`` 1024 wide, ``--heads`` 16, a 4x MLP; learned
token and position embeddings; float16 weights, the output layer float32; random weights from a seeded generator,
the attention's queries and keys scaled up so that each query attends to a few keys) generates ``--new`` 48 tokens
for a batch of ``--batch`` 8 prompts of ``--prompt`` 512 random tokens (seeded). The prompt less its last token is
prefilled in one causal pass; then each of the ``--new`` steps feeds one token per sequence (the prompt's last, then
the one generated before), appends its key and value to every layer's cache and takes the greedy ``argmax`` of the
logits; the tokens stay on the GPU and are read once at the end. Every layer's cache (keys and values, batch x heads
x tokens x 64, float16) lives on the host between uses: at each step, for each layer,
``k, v = cache_cpu[l][0].to(device), cache_cpu[l][1].to(device)``, the new token's key and value appended with
``torch.cat``, the attention over them, and the updated cache written back,
``cache_cpu[l] = (k.to("cpu"), v.to("cpu"))`` (256 to 280 MiB each way a step: 511 to 559 positions).

The checksum is a hash of the generated token ids (a polynomial one, modulo 999983: below 1e6, so the JSON line's
six digits hold it exactly; any token that differs changes it). Greedy choices on random weights can come down to
float rounding (the two largest logits a few ulps apart), so every mode computes the same kernels on the same bits:
a copy between the host and the GPU changes no bit, and the attention always runs on the contiguous
(batch, heads, tokens, 64) tensor made by the same ``torch.cat`` of the past keys (or values) and the new ones, in
every mode; only where the past keys come from differs. The logits, and so the choices, are the same bit for bit,
near-ties included. The smallest gap between the two largest logits over every choice is printed to stderr.

After the timed loop (and its JSON line) the result is checked (exit 1): one causal pass over each prompt and its
generated tokens (the reference: other kernels, so other roundings) must give the cache the loop ended with: for
each layer, keys or values and position, the float64 sum of the cache's entries times a fixed random weight must be
within 0.05 x sqrt(the sum of their squares) of the reference's (rounding moved it by less than 0.005 of that at
these sizes on a CPU; a missing, stale or misplaced entry moves it by about 1); and the reference's greedy choice at
each generated position must be the generated token wherever its two largest logits are more than 0.1 apart (their
spread is about 1).

    python3 kv_offload.py [--mode MODE] [--layers 16] [--dim 1024] [--heads 16] [--batch 8] [--prompt 512]
                          [--new 48] [--vocab 32000] [--dtype float16]

Modes (the same tokens, the same checksum):
  as_written           each layer's cache two pageable host tensors: ``.to(device)`` up, ``torch.cat`` with the new
                       token's, ``.to("cpu")`` back (fresh pageable tensors replacing the old ones)
  pinned_cache         the cache preallocated at full length (layers x 2 x tokens x batch x heads x 64, tokens first
                       so that a prefix ``[:t]`` and a position ``[t]`` are contiguous: a strided slice would pass
                       through a pageable temporary in ``copy_``) in pinned host memory at the start of the loop; each
                       step uploads ``cache[l, 0, :t].to(device, non_blocking=True)`` (permuted to batch x heads x
                       tokens x 64, ``torch.cat`` with the new token's as in as_written) and writes back only the new
                       token's key and value, ``cache[l, 0, t].copy_(k_new, non_blocking=True)``
  prefetch_next_layer  the pinned cache of pinned_cache, and the next layer's keys and values (the next step's first
                       layer after the last) uploaded on a side ``torch.cuda.Stream`` while this layer computes: the
                       side stream ``wait_stream``s the main one (the new positions written back), the main one
                       ``wait_stream``s the side one before it uses the upload, ``record_stream`` on what it uploaded
  cache_on_gpu         the cache kept on the GPU (``torch.cat`` with the new token's, as a DynamicCache does),
                       nothing moved
"""

import sys

import torch
import torch.nn.functional as F
from torch import nn

from harness import parse, report

MODES = ("as_written", "pinned_cache", "prefetch_next_layer", "cache_on_gpu")
SHARPEN = 2.75  # the queries' and keys' weights scaled by it: attention scores of std about 2.5, a few keys matter
HASH_MOD, HASH_MUL = 999983, 31
CACHE_TOL, TOKEN_GAP = 0.05, 0.1  # the check's tolerances (see the docstring)


class Block(nn.Module):
    """A pre-norm decoder block: attention over the keys and values given, then a 4x MLP."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim, bias=False)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        with torch.no_grad():
            self.qkv.weight[:2 * dim] *= SHARPEN

    def project(self, x):
        """The queries, keys and values (batch, heads, tokens, head_dim) of x (batch, tokens, dim)."""
        b, n, d = x.shape
        return self.qkv(self.ln1(x)).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)

    def finish(self, x, q, k, v, causal: bool):
        a = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        x = x + self.proj(a.transpose(1, 2).reshape(x.shape))
        return x + self.mlp(self.ln2(x))


class Decoder(nn.Module):
    def __init__(self, vocab: int, dim: int, heads: int, layers: int, positions: int):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(positions, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)  # float32, as the logits are taken
        with torch.no_grad():
            self.head.weight *= 3**0.5  # logits of std about 1

    def embed(self, ids, start: int):
        return self.tok(ids) + self.pos.weight[start:start + ids.shape[1]]

    def logits(self, x):
        return self.head(self.ln_f(x).float())


def token_hash(tokens: list) -> int:
    h = 0
    for t in tokens:
        h = (h * HASH_MUL + t) % HASH_MOD
    return h


def stats(k: torch.Tensor, w: torch.Tensor):
    """A (batch, heads, tokens, head_dim) cache tensor's float64 sums per position: weighted by ``w`` (batch, heads,
    1, head_dim), and of the squares."""
    k = k.double()
    return (k * w).sum((0, 1, 3)), k.square().sum((0, 1, 3))


def main():
    args = parse(MODES, __doc__, layers=16, dim=1024, heads=16, batch=8, prompt=512, new=48, vocab=32000,
                 dtype="float16")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = getattr(torch, args.dtype)
    B, P, G, L = args.batch, args.prompt, args.new, args.layers
    T = P - 1 + G  # positions in the cache at the end
    hd = args.dim // args.heads
    torch.manual_seed(0)
    model = Decoder(args.vocab, args.dim, args.heads, L, P + G)
    for m in (model.tok, model.pos, model.blocks, model.ln_f):
        m.to(dtype)
    model.to(device).eval()
    prompts = torch.randint(0, args.vocab, (B, P), generator=torch.Generator().manual_seed(1))
    main_stream = torch.cuda.current_stream() if args.mode == "prefetch_next_layer" else None
    final = {}  # what the check reads after the timed loop

    def loop():
        pinned = side = None
        cpu_cache = [None] * L  # as_written: (k, v) host tensors a layer
        gpu_cache = [None] * L  # cache_on_gpu: (k, v) GPU tensors a layer
        if args.mode in ("pinned_cache", "prefetch_next_layer"):
            pinned = torch.empty((L, 2, T, B, args.heads, hd), dtype=dtype, pin_memory=True)
        if args.mode == "prefetch_next_layer":
            side = torch.cuda.Stream()
        pending = None  # prefetch_next_layer: the upload in flight, (layer, length, k, v)

        def upload(li, t):
            """prefetch_next_layer: layer l's first t positions uploaded on the side stream."""
            side.wait_stream(main_stream)  # the positions written back so far have landed
            with torch.cuda.stream(side):
                return (li, t, pinned[li, 0, :t].to(device, non_blocking=True),
                        pinned[li, 1, :t].to(device, non_blocking=True))

        def past(li, t):
            """Layer l's cached keys and values (t positions) on the GPU, (batch, heads, t, head_dim)."""
            nonlocal pending
            if args.mode == "as_written":
                k, v = cpu_cache[li][0].to(device), cpu_cache[li][1].to(device)
                return k, v
            if args.mode == "cache_on_gpu":
                return gpu_cache[li]
            if args.mode == "pinned_cache":
                k = pinned[li, 0, :t].to(device, non_blocking=True)
                v = pinned[li, 1, :t].to(device, non_blocking=True)
            else:
                if pending is None:
                    pending = upload(li, t)
                pl, pt, k, v = pending
                assert (pl, pt) == (li, t)
                main_stream.wait_stream(side)  # the upload has landed
                k.record_stream(main_stream)  # allocated on the side stream, used on this one
                v.record_stream(main_stream)
                pending = upload(li + 1, t) if li + 1 < L else upload(0, t + 1) if t + 1 < T else None
            return k.permute(1, 2, 0, 3), v.permute(1, 2, 0, 3)

        def store(li, t, k, v, k_new, v_new):
            """Layer l's cache after position t (k, v: all t + 1 positions; k_new, v_new: position t's)."""
            if args.mode == "as_written":
                cpu_cache[li] = (k.to("cpu"), v.to("cpu"))
            elif args.mode == "cache_on_gpu":
                gpu_cache[li] = (k, v)
            else:
                pinned[li, 0, t].copy_(k_new[:, :, 0], non_blocking=True)
                pinned[li, 1, t].copy_(v_new[:, :, 0], non_blocking=True)

        with torch.no_grad():
            prompt = prompts.to(device)
            x = model.embed(prompt[:, :-1], 0)  # the prefill: every position but the last
            for li, blk in enumerate(model.blocks):
                q, k, v = blk.project(x)
                x = blk.finish(x, q, k, v, causal=True)
                if args.mode == "as_written":
                    cpu_cache[li] = (k.to("cpu"), v.to("cpu"))
                elif args.mode == "cache_on_gpu":
                    gpu_cache[li] = (k, v)
                else:
                    pinned[li, 0, :P - 1].copy_(k.permute(2, 0, 1, 3), non_blocking=True)
                    pinned[li, 1, :P - 1].copy_(v.permute(2, 0, 1, 3), non_blocking=True)
            tok = prompt[:, -1]
            out = torch.empty((B, G), dtype=torch.long, device=device)
            gap = torch.full((), float("inf"), device=device)
            for s in range(G):
                t = P - 1 + s  # the fed token's position: the cache holds t positions
                x = model.embed(tok[:, None], t)
                for li, blk in enumerate(model.blocks):
                    q, k_new, v_new = blk.project(x)
                    k_past, v_past = past(li, t)
                    k = torch.cat([k_past, k_new], 2)
                    v = torch.cat([v_past, v_new], 2)
                    x = blk.finish(x, q, k, v, causal=False)
                    store(li, t, k, v, k_new, v_new)
                top = model.logits(x[:, -1]).topk(2, -1)
                tok = top.indices[:, 0]
                out[:, s] = tok
                gap = torch.minimum(gap, (top.values[:, 0] - top.values[:, 1]).min())
            generated = out.tolist()
            print(f"kv_offload: smallest gap between the two largest logits {gap.item():.4g}", file=sys.stderr)
        torch.cuda.synchronize()  # the pinned cache's last positions have landed (the check reads them)
        final.update(generated=generated, cpu=cpu_cache, gpu=gpu_cache, pinned=pinned)
        return token_hash([t for row in generated for t in row])

    report(args, loop, "kv_offload")
    check(args, model, prompts, final, device)


def check(args, model, prompts, final, device) -> None:
    """The loop's cache and tokens against one causal pass over the prompts and the generated tokens; exit 1."""
    B, P, G = args.batch, args.prompt, args.new
    hd = args.dim // args.heads
    w = torch.randn(B, args.heads, 1, hd, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    w_dev = w.to(device)
    generated = torch.tensor(final["generated"])
    with torch.no_grad():
        seq = torch.cat([prompts, generated[:, :-1]], 1).to(device)  # every position the cache holds
        x = model.embed(seq, 0)
        for li, blk in enumerate(model.blocks):
            q, k, v = blk.project(x)
            x = blk.finish(x, q, k, v, causal=True)
            for i, ref in enumerate((k, v)):
                want_w, want_sq = (s.cpu() for s in stats(ref, w_dev))
                if args.mode == "as_written":
                    got_w = stats(final["cpu"][li][i], w)[0]
                elif args.mode == "cache_on_gpu":
                    got_w = stats(final["gpu"][li][i], w_dev)[0].cpu()
                else:
                    got_w = stats(final["pinned"][li, i].permute(1, 2, 0, 3), w)[0]
                if got_w.shape != want_w.shape:
                    sys.exit(f"kv_offload: layer {li} {'kv'[i]}: {got_w.shape[0]} positions cached, "
                             f"{want_w.shape[0]} fed")
                bad = torch.nonzero(~((got_w - want_w).abs() <= CACHE_TOL * want_sq.sqrt())).flatten()  # NaN too
                if len(bad):
                    p = bad[0].item()
                    sys.exit(f"kv_offload: layer {li} {'kv'[i]} position {p}: the cache's weighted sum "
                             f"{got_w[p].item():.6g}, the reference's {want_w[p].item():.6g} (norm "
                             f"{want_sq[p].sqrt().item():.4g}; {len(bad)} positions differ)")
        top = model.logits(x[:, P - 1:]).topk(2, -1)  # the choices at the positions fed during generation
        ref_tok, ref_gap = top.indices[..., 0].cpu(), (top.values[..., 0] - top.values[..., 1]).cpu()
    bad = torch.nonzero((ref_tok != generated) & (ref_gap > TOKEN_GAP))
    if len(bad):
        b, s = bad[0].tolist()
        sys.exit(f"kv_offload: sequence {b}, token {s}: generated {generated[b, s].item()}, the reference chooses "
                 f"{ref_tok[b, s].item()} by a gap of {ref_gap[b, s].item():.4g} ({len(bad)} tokens differ)")
    near = int(((ref_tok != generated)).sum())
    if near:
        print(f"kv_offload: {near} of {B * G} tokens differ from the reference's where its gap is below "
              f"{TOKEN_GAP}", file=sys.stderr)


if __name__ == "__main__":
    main()
