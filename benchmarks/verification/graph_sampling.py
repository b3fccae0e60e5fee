"""GraphSAGE minibatch node classification with neighbour sampling on the host, as people write it without PyG (or
as PyG's ``NeighborLoader`` does it): a random directed graph of ``--nodes`` nodes (2M), each with 1 to
2 x ``--degree`` - 1 in-neighbours (uniform, mean ``--degree`` 15: 30M edges), kept as CSR numpy arrays (``indptr``,
``indices``) built with a seeded numpy generator at the start (not timed); node features a pageable float32 host
tensor of ``--nodes`` x ``--features`` (256: 2 GiB, standard normal from a seeded ``torch.Generator``); int64
labels, each node's argmax over its first ``--classes`` (16) features (a learnable task). A training subset of
``--train`` nodes (65536, a seeded choice) is shuffled each epoch (a numpy generator seeded by the epoch) and cut into
batches of ``--batch`` seed nodes (1024: 64 steps an epoch). Each step samples 2 hops on the host with numpy
(``--fanout1`` 10 neighbours of every seed, then ``--fanout2`` 5 of every node the first hop added; uniform with
replacement, a numpy generator seeded by the step, so every mode samples the same subgraph), builds the unique
node ids ``n_id`` (the seeds first, then the new nodes in order of first appearance, ``np.unique``) and the sampled
subgraph's ``edge_index`` (2 x E int64, local ids, neighbour -> target; about 35K nodes and 44K edges a step),
gathers the features ``x[n_id]`` (about 34 MiB) and the seeds' labels on the host, and uploads them with the edge
index. The model, a 2-layer SAGE (``--hidden`` 256; mean aggregation with ``index_add_`` on the GPU, a linear map of
the mean plus one of the node itself, ReLU between) runs over the whole subgraph, its output of the seeds goes into
``F.cross_entropy`` and ``torch.optim.Adam`` (lr ``--lr`` 0.003) steps; ``--epochs`` 2 (128 steps). Before the loop one
training step of a throw-away copy of the model (its own Adam) on a sampled subgraph keeps cuBLAS's and the kernels'
first-call set-up out of the timing.

Determinism: ``index_add_`` and the backward of the neighbour gather use atomics on the GPU, so the program turns on
``torch.use_deterministic_algorithms`` (with ``CUBLAS_WORKSPACE_CONFIG=:4096:8``; the filling of fresh tensors that
mode adds turned off, ``torch.utils.deterministic.fill_uninitialized_memory = False``). Every mode samples the same
subgraphs and runs the same kernels on bit-identical inputs in the same order, so the modes agree to the last bit on
one machine. The checksum is the float64 sum of every step's loss (summed on the GPU, read once) plus the float64 sum
of every final parameter.

Checks (a failure exits 1): each step the GPU stores a fingerprint of what it trained on: the float64 sum of
``(i + 1) * xb[i, 0]`` over the batch's feature rows, and the int64 sum of ``7 * src + 3 * dst`` over its edges plus
``(i + 1) * y[i]`` over its labels; after the loop they are compared with the ones the host computed from ``n_id``,
the edge index and the labels as it sampled them (relative 1e-9, exact): a batch uploaded from a buffer overwritten
too early, stale or out of order differs by far more. The losses must be finite and the last epoch's mean loss below
the first's.

    python3 graph_sampling.py [--mode MODE] [--nodes 2000000] [--degree 15] [--features 256] [--classes 16]
                              [--train 65536] [--batch 1024] [--fanout1 10] [--fanout2 5] [--hidden 256]
                              [--epochs 2] [--lr 0.003]

Modes (the same subgraphs, the same training, the same checksum):
  as_written       ``xb = x[torch.from_numpy(n_id)].to(device)`` (a fresh pageable tensor each step),
                   ``torch.from_numpy(edge_index).to(device)``, ``y[seeds].to(device)``
  pinned_gather    two sets of pinned buffers allocated at the loop's start (the most nodes and edges a step can
                   have): ``torch.index_select(x, 0, n_id, out=pin_x[k][:n])``, the edge index and labels copied into
                   theirs, each uploaded with ``.to(device, non_blocking=True)``; an event recorded after the uploads
                   and synchronised before set ``k`` is written again
  features_on_gpu  the features and labels moved to the GPU once at the loop's start (``x.to(device)``, 2 GiB; where
                   they fit: at most half the GPU's memory); each step ``n_id`` and the edge index uploaded
                   (``.to(device)``, about 1 MiB) and the rows and labels gathered on the GPU
                   (``x_gpu[n_id]``, ``y_gpu[n_id[:batch]]``)
  prefetch_thread  a background ``threading.Thread`` samples the next batches and gathers them into one of three
                   sets of pinned buffers (one being trained on, one in the ``queue.Queue(maxsize=1)``, one being
                   filled), uploads them with ``non_blocking=True`` on a side ``torch.cuda.Stream`` and records an
                   event; the training loop makes its stream wait on that event (``wait_event``), calls
                   ``record_stream`` on the uploaded tensors and trains while the thread prepares the next; the thread
                   synchronises a set's last upload event before writing it again
"""

import os

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # cuBLAS deterministic (before CUDA starts)

import queue
import sys
import threading

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from harness import parse, report

MODES = ("as_written", "pinned_gather", "features_on_gpu", "prefetch_thread")


class SAGEConv(nn.Module):
    """GraphSAGE's convolution with mean aggregation (PyG's ``SAGEConv(aggr="mean")``): ``lin_l(mean of the
    neighbours) + lin_r(the node itself)``."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.lin_l = nn.Linear(in_channels, out_channels)
        self.lin_r = nn.Linear(in_channels, out_channels, bias=False)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        src, dst = edge_index
        agg = torch.zeros_like(x).index_add_(0, dst, x[src])
        deg = torch.zeros(x.size(0), dtype=x.dtype, device=x.device).index_add_(
            0, dst, torch.ones(dst.size(0), dtype=x.dtype, device=x.device))
        agg = agg / deg.clamp(min=1).unsqueeze(1)
        return self.lin_l(agg) + self.lin_r(x)


class SAGE(nn.Module):
    def __init__(self, in_channels: int, hidden: int, out_channels: int):
        super().__init__()
        self.conv1 = SAGEConv(in_channels, hidden)
        self.conv2 = SAGEConv(hidden, out_channels)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        x = self.conv1(x, edge_index).relu()
        return self.conv2(x, edge_index)


def random_graph(nodes: int, degree: int, seed: int):
    """CSR of a random directed graph: node v's in-neighbours are ``indices[indptr[v]:indptr[v + 1]]``."""
    rng = np.random.default_rng(seed)
    deg = rng.integers(1, 2 * degree, size=nodes, dtype=np.int64)  # at least one neighbour each
    indptr = np.zeros(nodes + 1, dtype=np.int64)
    np.cumsum(deg, out=indptr[1:])
    indices = rng.integers(0, nodes, size=int(indptr[-1]), dtype=np.int64)
    return indptr, indices


def sample_subgraph(indptr, indices, seeds, fanouts, rng):
    """Sample ``fanouts`` neighbours hop by hop (uniform, with replacement) from ``seeds``: the subgraph's node ids
    (the seeds first, then the new nodes in order of first appearance) and its edge index in local ids
    (row 0 the sampled neighbour, row 1 the node it was sampled for)."""
    n_id = seeds
    frontier, frontier_local = seeds, np.arange(len(seeds))
    srcs, dsts = [], []
    for k in fanouts:
        start = indptr[frontier]
        deg = indptr[frontier + 1] - start
        pick = start[:, None] + (rng.random((len(frontier), k)) * deg[:, None]).astype(np.int64)
        nbrs = indices[pick].ravel()
        uniq, first, inv = np.unique(np.concatenate([n_id, nbrs]), return_index=True, return_inverse=True)
        order = np.argsort(first)  # by first appearance: the nodes already there keep their local ids
        local = np.empty_like(order)
        local[order] = np.arange(len(order))
        local = local[inv]
        old = len(n_id)
        srcs.append(local[old:])
        dsts.append(np.repeat(frontier_local, k))
        n_id = uniq[order]
        frontier, frontier_local = n_id[old:], np.arange(old, len(n_id))
    edge_index = np.stack([np.concatenate(srcs), np.concatenate(dsts)])
    return n_id, edge_index


def main():
    args = parse(MODES, __doc__, nodes=2000000, degree=15, features=256, classes=16, train=65536, batch=1024,
                 fanout1=10, fanout2=5, hidden=256, epochs=2, lr=0.003)
    if min(args.nodes, args.degree, args.features, args.train, args.batch, args.fanout1, args.fanout2, args.hidden,
           args.epochs) < 1 or not 2 <= args.classes <= args.features or args.train > args.nodes:
        sys.exit("graph_sampling: sizes must be positive, 2 <= --classes <= --features, --train <= --nodes")
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = False  # no fill kernel for every fresh tensor
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    N, F_, B, E = args.nodes, args.features, args.batch, args.epochs
    fanouts = (args.fanout1, args.fanout2)

    indptr, indices = random_graph(N, args.degree, 0)
    x = torch.empty(N, F_).normal_(generator=torch.Generator().manual_seed(1))
    y = x[:, :args.classes].argmax(1)
    col0 = x[:, 0].double().numpy()  # for the host's fingerprints
    train_idx = np.random.default_rng(2).choice(N, size=args.train, replace=False)
    steps_per_epoch = -(-args.train // B)
    S = E * steps_per_epoch
    max_nodes = B * (1 + args.fanout1 + args.fanout1 * args.fanout2)  # the most a step can have
    max_edges = B * (args.fanout1 + args.fanout1 * args.fanout2)
    if args.mode == "features_on_gpu" and torch.cuda.is_available():
        total_mem = torch.cuda.get_device_properties(0).total_memory
        if x.nbytes > total_mem // 2:
            sys.exit(f"features_on_gpu: features of {x.nbytes >> 20} MiB do not fit beside the model "
                     f"(at most half of {total_mem >> 20} MiB)")

    def batches():
        """(step, seeds) in training order: the subset shuffled each epoch."""
        s = 0
        for epoch in range(E):
            perm = np.random.default_rng([3, epoch]).permutation(train_idx)
            for i in range(0, len(perm), B):
                yield s, perm[i:i + B]
                s += 1

    def sample(s: int, seeds):
        """Step s's subgraph and the host's fingerprints of what it should train on."""
        n_id, edge_index = sample_subgraph(indptr, indices, seeds, fanouts, np.random.default_rng([4, s]))
        fp = float(np.dot(col0[n_id], np.arange(1, len(n_id) + 1, dtype=np.float64)))
        fp_abs = float(np.dot(np.abs(col0[n_id]), np.arange(1, len(n_id) + 1, dtype=np.float64)))
        labels = y.numpy()[seeds]
        fi = int((7 * edge_index[0] + 3 * edge_index[1]).sum() + (labels * np.arange(1, len(seeds) + 1)).sum())
        return n_id, edge_index, (fp, fp_abs, fi)

    torch.manual_seed(0)
    model = SAGE(F_, args.hidden, args.classes).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    w_dev = torch.arange(1, max_nodes + 1, dtype=torch.float64, device=device)
    wi_dev = torch.arange(1, B + 1, dtype=torch.int64, device=device)

    # cuBLAS and the first kernels set up before the timing: one step of a throw-away copy on a sampled subgraph
    warm_model = SAGE(F_, args.hidden, args.classes).to(device)
    warm_opt = torch.optim.Adam(warm_model.parameters(), lr=args.lr)
    seeds0 = train_idx[:B]
    n_id0, ei0 = sample_subgraph(indptr, indices, seeds0, fanouts, np.random.default_rng(5))
    out0 = warm_model(x[torch.from_numpy(n_id0)].to(device), torch.from_numpy(ei0).to(device))
    F.cross_entropy(out0[:len(seeds0)], y[torch.from_numpy(seeds0)].to(device)).backward()
    warm_opt.step()
    del warm_model, warm_opt, out0

    def loop():
        seen = torch.zeros(S, dtype=torch.float64, device=device)  # the GPU's fingerprints
        seen_int = torch.zeros(S, dtype=torch.int64, device=device)
        expect = [None] * S  # the host's
        losses = torch.zeros(S, dtype=torch.float64, device=device)

        def train_step(s: int, xb, edge_index, yb):
            seen[s] = (xb[:, 0].double() * w_dev[:len(xb)]).sum()
            seen_int[s] = (7 * edge_index[0] + 3 * edge_index[1]).sum() + (yb * wi_dev[:len(yb)]).sum()
            opt.zero_grad()
            out = model(xb, edge_index)
            loss = F.cross_entropy(out[:len(yb)], yb)
            loss.backward()
            opt.step()
            losses[s] = loss.detach()

        if args.mode == "as_written":
            for s, seeds in batches():
                n_id, edge_index, expect[s] = sample(s, seeds)
                xb = x[torch.from_numpy(n_id)].to(device)
                ei = torch.from_numpy(edge_index).to(device)
                yb = y[torch.from_numpy(seeds)].to(device)
                train_step(s, xb, ei, yb)

        elif args.mode == "pinned_gather":
            pin_x = [torch.empty(max_nodes, F_, pin_memory=True) for _ in range(2)]
            pin_e = [torch.empty(2 * max_edges, dtype=torch.int64, pin_memory=True) for _ in range(2)]
            pin_y = [torch.empty(B, dtype=torch.int64, pin_memory=True) for _ in range(2)]
            uploaded = [None, None]
            for s, seeds in batches():
                k = s % 2
                n_id, edge_index, expect[s] = sample(s, seeds)
                n, m, b = len(n_id), edge_index.shape[1], len(seeds)
                if uploaded[k] is not None:
                    uploaded[k].synchronize()  # the uploads that last read set k have finished
                torch.index_select(x, 0, torch.from_numpy(n_id), out=pin_x[k][:n])
                pin_e[k][:2 * m].copy_(torch.from_numpy(edge_index.ravel()))
                torch.index_select(y, 0, torch.from_numpy(seeds), out=pin_y[k][:b])
                xb = pin_x[k][:n].to(device, non_blocking=True)
                ei = pin_e[k][:2 * m].view(2, m).to(device, non_blocking=True)
                yb = pin_y[k][:b].to(device, non_blocking=True)
                uploaded[k] = torch.cuda.Event()
                uploaded[k].record()
                train_step(s, xb, ei, yb)

        elif args.mode == "features_on_gpu":
            x_gpu, y_gpu = x.to(device), y.to(device)
            for s, seeds in batches():
                n_id, edge_index, expect[s] = sample(s, seeds)
                n_id_d = torch.from_numpy(n_id).to(device)
                ei = torch.from_numpy(edge_index).to(device)
                train_step(s, x_gpu[n_id_d], ei, y_gpu[n_id_d[:len(seeds)]])

        else:  # prefetch_thread
            side = torch.cuda.Stream()
            slots = 3  # one trained on, one queued, one being filled
            pin_x = [torch.empty(max_nodes, F_, pin_memory=True) for _ in range(slots)]
            pin_e = [torch.empty(2 * max_edges, dtype=torch.int64, pin_memory=True) for _ in range(slots)]
            pin_y = [torch.empty(B, dtype=torch.int64, pin_memory=True) for _ in range(slots)]
            uploaded = [None] * slots
            ready = queue.Queue(maxsize=1)

            def producer():
                try:
                    with torch.cuda.stream(side):
                        for s, seeds in batches():
                            k = s % slots
                            n_id, edge_index, fps = sample(s, seeds)
                            n, m, b = len(n_id), edge_index.shape[1], len(seeds)
                            if uploaded[k] is not None:
                                uploaded[k].synchronize()  # the uploads that last read set k have finished
                            torch.index_select(x, 0, torch.from_numpy(n_id), out=pin_x[k][:n])
                            pin_e[k][:2 * m].copy_(torch.from_numpy(edge_index.ravel()))
                            torch.index_select(y, 0, torch.from_numpy(seeds), out=pin_y[k][:b])
                            xb = pin_x[k][:n].to(device, non_blocking=True)
                            ei = pin_e[k][:2 * m].view(2, m).to(device, non_blocking=True)
                            yb = pin_y[k][:b].to(device, non_blocking=True)
                            uploaded[k] = torch.cuda.Event()
                            uploaded[k].record(side)
                            ready.put((s, xb, ei, yb, uploaded[k], fps))
                except BaseException as e:  # handed to the training loop
                    ready.put(e)
                    return
                ready.put(None)

            thread = threading.Thread(target=producer, daemon=True)
            thread.start()
            compute = torch.cuda.current_stream()
            while (item := ready.get()) is not None:
                if isinstance(item, BaseException):
                    raise item
                s, xb, ei, yb, event, expect[s] = item
                compute.wait_event(event)  # this batch's uploads have arrived
                for t in (xb, ei, yb):
                    t.record_stream(compute)  # made on the side stream, used on this one
                train_step(s, xb, ei, yb)
            thread.join()

        check(seen.cpu(), seen_int.cpu(), expect)
        loss_list = losses.cpu()
        check_losses(loss_list)
        params = sum(float(p.detach().double().sum()) for p in model.parameters())
        return float(loss_list.sum()) + params

    def check(seen, seen_int, expect):
        """Every step's fingerprints of what the GPU trained on against the host's; exit 1."""
        for s in range(S):
            fp, fp_abs, fi = expect[s]
            if abs(float(seen[s]) - fp) > 1e-9 * fp_abs + 1e-300 or int(seen_int[s]) != fi:
                sys.exit(f"graph_sampling: step {s} trained on features/edges/labels whose fingerprints are "
                         f"{float(seen[s]):.12g} / {int(seen_int[s])}, the sampled batch's {fp:.12g} / {fi}")

    def check_losses(loss_list):
        if not bool(torch.isfinite(loss_list).all()):
            sys.exit("graph_sampling: a loss is not finite")
        first, last = loss_list[:steps_per_epoch].mean(), loss_list[-steps_per_epoch:].mean()
        if E > 1 and not last < first:
            sys.exit(f"graph_sampling: the last epoch's mean loss {float(last):.4g} is not below the first's "
                     f"{float(first):.4g}")

    report(args, loop, "graph_sampling")


if __name__ == "__main__":
    main()
