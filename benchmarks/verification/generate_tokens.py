"""Greedy decoding, as the tutorials write it: a small recurrent language model (an embedding of 32000 tokens by
1024, a tanh recurrence, two 1024-wide layers, a 1024 x 32000 output layer; float32, 275 MB of weights) generates
512 tokens from each of 4 prompts, one token a step, ``argmax`` of the logits; each new token is read back to the
host every step with ``tok.item()`` and appended to a Python list. The loop feeds the GPU tensor ``tok`` back in, so
the host's copy of each token is only read, never needed by the next step (no stop token: every prompt runs its
512 steps).

    python3 generate_tokens.py [--mode MODE] [--steps 512] [--prompts 4] [--vocab 32000] [--dim 1024]

Modes (the same tokens, the same checksum: the sum of every token generated):
  as_written    ``tokens.append(tok.item())`` each step (an 8-byte copy into pageable memory, waited on: the host
                cannot issue the next step until the GPU has finished this one)
  gpu_tokens    each token written into a preallocated GPU tensor (``out[i:i + 1] = tok``), read back once per
                prompt with ``out.tolist()``
  pinned_async  each token copied into a preallocated pinned host tensor with ``copy_(tok, non_blocking=True)``;
                an event recorded every 32 steps, and the host reads a chunk of 32 tokens after waiting on the
                event of the chunk before it (one chunk behind the GPU), the rest at the prompt's end
"""

import torch
import torch.nn as nn

from harness import parse, report

MODES = ("as_written", "gpu_tokens", "pinned_async")
CHUNK = 32  # tokens read back together (pinned_async)


class Decoder(nn.Module):
    """The next token's logits and the new state, from the last token and the state."""

    def __init__(self, vocab: int, dim: int):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.recur = nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, dim), nn.GELU())
        self.out = nn.Linear(dim, vocab)

    def forward(self, tok, h):
        h = torch.tanh(self.recur(h) + self.emb(tok))
        return self.out(self.mlp(h)), h


def as_written(model, tok, h, steps):
    tokens = []
    for _ in range(steps):
        logits, h = model(tok, h)
        tok = logits.argmax(-1)
        tokens.append(tok.item())
    return tokens


def gpu_tokens(model, tok, h, steps):
    out = torch.empty(steps, dtype=torch.long, device="cuda")
    for i in range(steps):
        logits, h = model(tok, h)
        tok = logits.argmax(-1)
        out[i:i + 1] = tok
    return out.tolist()


def pinned_async(model, tok, h, steps):
    host = torch.empty(steps, dtype=torch.long, pin_memory=True)
    chunks = [(i, min(i + CHUNK, steps)) for i in range(0, steps, CHUNK)]
    done = [torch.cuda.Event() for _ in chunks]
    tokens = []
    for c, (lo, hi) in enumerate(chunks):
        for i in range(lo, hi):
            logits, h = model(tok, h)
            tok = logits.argmax(-1)
            host[i:i + 1].copy_(tok, non_blocking=True)
        done[c].record()
        if c > 0:  # the chunk before this one: its copies have landed by now, or nearly
            done[c - 1].synchronize()
            tokens += host[chunks[c - 1][0]:chunks[c - 1][1]].tolist()
    done[-1].synchronize()
    return tokens + host[chunks[-1][0]:chunks[-1][1]].tolist()


def main():
    args = parse(MODES, __doc__, steps=512, prompts=4, vocab=32000, dim=1024)
    torch.manual_seed(0)
    model = Decoder(args.vocab, args.dim).cuda().eval()
    decode = {"as_written": as_written, "gpu_tokens": gpu_tokens, "pinned_async": pinned_async}[args.mode]

    def loop():
        generated = []
        with torch.no_grad():
            for p in range(args.prompts):
                tok = torch.tensor([(1000 + 997 * p) % args.vocab], device="cuda")
                h = torch.zeros(1, args.dim, device="cuda")
                generated += decode(model, tok, h, args.steps)
        return sum(generated)

    report(args, loop, "generate_tokens")


if __name__ == "__main__":
    main()
