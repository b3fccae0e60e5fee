"""A recommendation model whose embedding table lives in host memory, as PyTorch users write it to save GPU memory:
a float32 table of ``--rows`` x ``--dim`` (8388608 x 64: 2 GiB, normal(0, 0.01) from a seeded ``torch.Generator``,
made before the timed loop) and a row-wise Adagrad accumulator (one float32 per row, zeros) on the CPU; a small
tower on the GPU (the bag's pooled embedding, ``--dim`` -> ``--hidden`` 256 -> 128 -> 1 logit, ReLUs, seeded
weights) trained with ``binary_cross_entropy_with_logits`` and ``torch.optim.Adagrad`` (lr ``--lr`` 0.01) on the GPU.
Each of ``--steps`` steps (250) takes a batch of ``--batch`` samples (2048) of ``--lookups`` ids each (8: 16384 ids,
drawn before the loop from a seeded numpy generator, skewed: rank ``k`` of the table drawn with probability about
1/(k+1), the ranks scattered over the table by a multiplicative hash; about 9700 distinct rows a step, 1400 of them
also in the previous step's batch) and a 0/1 label per sample (seeded, kept on the GPU from before the loop). A step:
the ids deduplicated (``uniq, inv = torch.unique(ids, return_inverse=True)``), the distinct rows gathered from the
table (``table[uniq]``: about 2.4 MiB), uploaded with ``inv``, made a leaf that requires grad; on the GPU
``F.embedding(inv, rows).sum(1)`` pools each sample's bag, the tower, the loss, ``backward()``, the tower's optimizer
step; the rows' gradient (one row per distinct id) is read back and the sparse row-wise Adagrad update applied to
those rows of the table and the accumulator with torch ops (per row: ``state += mean(g * g)``, ``row -= lr * g /
(sqrt(state) + 1e-8)``). Before the loop one forward and backward of the tower on zeros (cuBLAS and the first kernels'
set-up; no optimizer step) keeps the start-up out of the timing.

Identity: every mode runs the same GPU kernels on bit-identical inputs in the same order (rows gathered by exact
indexing, the same ``inv``; the gradient of the distinct rows is reduced on the GPU by the embedding's backward in every
mode), and the sparse update is exact on both devices: ids are deduplicated so each row is written once a step, by
plain indexed assignment (no ``index_add_``), and each row's new values are computed in float64 from float32 operands
by separate elementwise ops only (``*``, ``+``, ``-``, ``/`` by a tensor, ``sqrt``: correctly rounded in IEEE float64 on
the CPU and the GPU, no fused operations), the row's mean of squares summed by a fixed pairwise halving (``x[:, :h] +
x[:, h:]``, not a reduction kernel whose order differs) and multiplied by ``1 / dim``, then rounded to float32. So the
modes agree to the last bit on one machine. The checksum is the float64 sum (on the host, in a fixed order) of the
final table's probe rows (every 16th row any step touched, with every row of the last step), the tower's parameters
and the 250 losses (summed on the GPU in float64 and read once).

Checks (a failure exits 1): (1) at every step the GPU records a fingerprint of the rows it trained on (the float64
sum of ``(i + 1) * rows[i, 0]``) and the host one of the table's rows for the same ids at that step (after the
previous step's update): they must agree to 1e-9 of the sum of the terms' magnitudes; a row gathered before the
previous update touched it (a prefetch that was not patched), or a staging buffer overwritten before its upload, differs
by far more; (2) the last step is recomputed on a reference path: its rows and accumulator entries as they were before
its update, updated on the CPU with the gradient the GPU computed, must equal the final table's rows and accumulator
entries (a gradient read before its copy had arrived, or applied to other rows, differs by about ``--lr``).

    python3 cpu_embedding_rows.py [--mode MODE] [--rows 8388608] [--dim 64] [--batch 2048] [--lookups 8]
                                  [--steps 250] [--hidden 256] [--lr 0.01]

Modes (the same ids, the same rows, the same updates in the same order, the same checksum):
  as_written      ``rows = table[uniq].to(device).requires_grad_()``, ``inv.to(device)`` from pageable memory;
                  after ``backward()``, ``grad = rows.grad.cpu()`` (a fresh pageable tensor) and the update applied to
                  the CPU table and accumulator
  pinned_staging  pinned buffers allocated at the start of the loop for the rows, the inverse index and the gradient
                  (16384 rows each, the most distinct ids a step can have): the rows gathered straight into the
                  pinned buffer (``torch.index_select(table, 0, uniq, out=pin_rows[:n])``), uploaded with
                  ``non_blocking=True``, an event recorded after the uploads and waited on before the buffers are
                  written again; the gradient copied into the pinned buffer (``copy_(rows.grad, non_blocking=True)``)
                  and an event synchronised before the host reads it
  table_pinned    the table pinned once at the start of the loop (``table = table.pin_memory()``: the update writes
                  into the pinned copy, the checksum reads it), then the rows and gradients staged in pinned buffers
                  as pinned_staging does
  side_stream     two pinned row (and inverse) buffers used in turn and a side ``torch.cuda.Stream``: once step s's
                  work is queued, the host deduplicates and gathers step s + 1's rows into the other buffer and
                  uploads them on the side stream while step s computes; those rows were read before step s's update,
                  so after it the rows step s + 1 shares with step s (``torch.isin``) are gathered again from the
                  updated table into a pinned patch buffer, uploaded on the side stream and written over the stale
                  ones (``rows.index_copy_(0, pos, patch)``); the compute waits with ``current_stream().wait_stream(
                  side)`` and ``record_stream``, an event per pinned buffer says when it may be written again; the
                  gradient read back as pinned_staging's
  table_on_gpu    the table and the accumulator moved to the GPU once at the start of the loop (2 GiB with
                  ``.to(device)``); each step's ids uploaded (``ids.to(device)``, 128 KiB), deduplicated and gathered
                  on the GPU and the same update applied there; the probe rows read back after the loop
"""

import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from harness import parse, report

MODES = ("as_written", "pinned_staging", "table_pinned", "side_stream", "table_on_gpu")
EPS = 1e-8
PROBE_EVERY = 16  # every 16th touched row in the checksum


def make_tower(dim: int, hidden: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden // 2), nn.ReLU(),
                         nn.Linear(hidden // 2, 1))


def row_sum_pairwise(x: torch.Tensor) -> torch.Tensor:
    """Each row's sum by a fixed pairwise halving of the columns: only elementwise additions, the same order on the
    CPU and the GPU (a reduction kernel's order differs between them)."""
    while x.shape[1] > 1:
        h = x.shape[1] // 2
        s = x[:, :h] + x[:, h:2 * h]
        x = torch.cat([s, x[:, 2 * h:]], 1) if x.shape[1] % 2 else s
    return x[:, 0]


def rowwise_adagrad_(table: torch.Tensor, state: torch.Tensor, idx: torch.Tensor, grad: torch.Tensor,
                     lr: float) -> None:
    """Row-wise Adagrad on the rows ``idx`` (distinct) of ``table`` and ``state`` with their gradient ``grad``, in
    place: ``state += mean(g * g)``, ``row -= lr * g / (sqrt(state) + EPS)``; computed in float64, rounded to float32
    and written by indexed assignment (each row once)."""
    g = grad.double()
    ms = row_sum_pairwise(g * g) * (1.0 / g.shape[1])  # a product: the GPU divides by a scalar so too
    st = (state[idx].double() + ms).float()
    denom = st.double().sqrt() + EPS
    step = (g * lr) / denom.unsqueeze(1)
    table[idx] = (table[idx].double() - step).float()
    state[idx] = st


def main():
    args = parse(MODES, __doc__, rows=8388608, dim=64, batch=2048, lookups=8, steps=250, hidden=256, lr=0.01)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    R, D, B, L, S = args.rows, args.dim, args.batch, args.lookups, args.steps
    N = B * L  # the most distinct ids a step can have
    if min(R, D, B, L, S) < 1 or args.hidden < 2:
        sys.exit("cpu_embedding_rows: every size must be positive (--hidden at least 2)")

    rng = np.random.default_rng(1)
    rank = (R ** rng.random((S, B, L))).astype(np.int64) - 1  # P(rank k) ~ 1 / (k + 1)
    ids = torch.from_numpy((rank * 2654435761) % R)  # ranks scattered over the table
    labels = torch.from_numpy((rng.random((S, B)) < 0.25).astype(np.float32)).to(device)
    touched = torch.unique(ids)
    probe = torch.unique(torch.cat([touched[::PROBE_EVERY], ids[-1].reshape(-1)]))

    gen = torch.Generator().manual_seed(0)
    table = torch.empty((R, D)).normal_(0.0, 0.01, generator=gen)
    state = torch.zeros(R)

    torch.manual_seed(0)
    tower = make_tower(D, args.hidden).to(device)
    opt = torch.optim.Adagrad(tower.parameters(), lr=args.lr)
    w_cpu = torch.arange(1, N + 1, dtype=torch.float64)
    w_dev = w_cpu.to(device)

    def forward_loss(rows: torch.Tensor, inv: torch.Tensor, s: int) -> torch.Tensor:
        pooled = F.embedding(inv, rows).sum(1)  # each sample's bag of rows, summed
        return F.binary_cross_entropy_with_logits(tower(pooled).squeeze(1), labels[s])

    # cuBLAS and the first kernels set up before the timing: one forward and backward on zeros, no optimizer step
    warm = torch.zeros((N, D), device=device, requires_grad=True)
    forward_loss(warm, torch.zeros((B, L), dtype=torch.int64, device=device), 0).backward()
    tower.zero_grad(set_to_none=True)
    del warm

    def loop():
        lr = args.lr
        tbl, st = table, state
        seen = torch.zeros(S, dtype=torch.float64, device=device)  # the fingerprints of the rows trained on
        expect = torch.zeros((S, 2), dtype=torch.float64, device=device if args.mode == "table_on_gpu" else "cpu")
        loss_sum = torch.zeros((), dtype=torch.float64, device=device)
        last = {}

        def expect_from_table(s: int, uniq: torch.Tensor) -> None:
            """The fingerprint of the table's rows for step s's ids, as they are now (before step s's update)."""
            t = tbl[uniq, 0].double() * (w_dev if tbl.is_cuda else w_cpu)[:len(uniq)]
            expect[s, 0], expect[s, 1] = t.sum(), t.abs().sum()

        def train_step(s: int, rows: torch.Tensor, inv: torch.Tensor) -> torch.Tensor:
            """The GPU part of a step on the uploaded distinct rows: their gradient (on the GPU)."""
            nonlocal loss_sum
            rows.requires_grad_()
            seen[s] = (rows.detach()[:, 0].double() * w_dev[:len(rows)]).sum()
            loss = forward_loss(rows, inv, s)
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss_sum += loss.detach().double()
            return rows.grad

        def update(s: int, uniq: torch.Tensor, grad_gpu: torch.Tensor, grad: torch.Tensor) -> None:
            """The sparse update of step s (``grad`` on the table's device); the last step's inputs kept for the
            reference check."""
            if s == S - 1:
                last.update(uniq=uniq.clone(), rows=tbl[uniq].clone(), state=st[uniq].clone(), grad=grad_gpu)
            rowwise_adagrad_(tbl, st, uniq, grad, lr)

        if args.mode == "as_written":
            for s in range(S):
                uniq, inv = torch.unique(ids[s], return_inverse=True)
                expect_from_table(s, uniq)
                rows = tbl[uniq].to(device)
                g = train_step(s, rows, inv.to(device))
                update(s, uniq, g, g.cpu())

        elif args.mode in ("pinned_staging", "table_pinned"):
            if args.mode == "table_pinned":
                tbl = table.pin_memory()  # once: the update writes into the pinned table
            pin_rows = torch.empty((N, D), pin_memory=True)
            pin_inv = torch.empty((B, L), dtype=torch.int64, pin_memory=True)
            pin_grad = torch.empty((N, D), pin_memory=True)
            uploaded = None
            for s in range(S):
                uniq, inv = torch.unique(ids[s], return_inverse=True)
                n = len(uniq)
                expect_from_table(s, uniq)
                if uploaded is not None:
                    uploaded.synchronize()  # the last uploads have read the pinned buffers
                torch.index_select(tbl, 0, uniq, out=pin_rows[:n])
                pin_inv.copy_(inv)
                rows = pin_rows[:n].to(device, non_blocking=True)
                inv_d = pin_inv.to(device, non_blocking=True)
                uploaded = torch.cuda.Event()
                uploaded.record()
                g = train_step(s, rows, inv_d)
                pin_grad[:n].copy_(g, non_blocking=True)
                ready = torch.cuda.Event()
                ready.record()
                ready.synchronize()  # the gradient has arrived
                update(s, uniq, g, pin_grad[:n])

        elif args.mode == "side_stream":
            side, main_stream = torch.cuda.Stream(), torch.cuda.current_stream()
            pin_rows = [torch.empty((N, D), pin_memory=True) for _ in range(2)]
            pin_inv = [torch.empty((B, L), dtype=torch.int64, pin_memory=True) for _ in range(2)]
            pin_grad = torch.empty((N, D), pin_memory=True)
            pin_patch = torch.empty((N, D), pin_memory=True)
            pin_pos = torch.empty(N, dtype=torch.int64, pin_memory=True)
            uploaded = [None, None]
            patched = None

            def stage(s: int):
                """Step s's ids deduplicated, its rows gathered into pinned buffer s % 2 (as the table is now) and
                uploaded on the side stream."""
                k = s % 2
                uniq, inv = torch.unique(ids[s], return_inverse=True)
                n = len(uniq)
                if uploaded[k] is not None:
                    uploaded[k].synchronize()  # the uploads that last read these pinned buffers have finished
                torch.index_select(tbl, 0, uniq, out=pin_rows[k][:n])
                pin_inv[k].copy_(inv)
                with torch.cuda.stream(side):
                    rows = pin_rows[k][:n].to(device, non_blocking=True)
                    inv_d = pin_inv[k].to(device, non_blocking=True)
                    uploaded[k] = side.record_event()
                return uniq, rows, inv_d

            def patch(nxt, prev_uniq: torch.Tensor) -> None:
                """The staged rows that the last update changed (those of ``prev_uniq``) gathered again from the
                table and written over the uploaded ones, on the side stream."""
                nonlocal patched
                uniq, rows, _ = nxt
                pos = torch.isin(uniq, prev_uniq).nonzero().squeeze(1)
                p = len(pos)
                if p == 0:
                    return
                if patched is not None:
                    patched.synchronize()  # the last patch's uploads have read the pinned patch buffers
                torch.index_select(tbl, 0, uniq[pos], out=pin_patch[:p])
                pin_pos[:p].copy_(pos)
                with torch.cuda.stream(side):
                    pos_d = pin_pos[:p].to(device, non_blocking=True)
                    rows.index_copy_(0, pos_d, pin_patch[:p].to(device, non_blocking=True))
                    patched = side.record_event()

            nxt = stage(0)
            for s in range(S):
                uniq, rows, inv_d = nxt
                n = len(uniq)
                expect_from_table(s, uniq)  # the table after step s - 1's update
                main_stream.wait_stream(side)  # the rows (patched) and the inverse have arrived
                rows.record_stream(main_stream)  # made on the side stream, used on this one
                inv_d.record_stream(main_stream)
                g = train_step(s, rows, inv_d)
                pin_grad[:n].copy_(g, non_blocking=True)
                ready = torch.cuda.Event()
                ready.record()
                if s + 1 < S:
                    nxt = stage(s + 1)  # gathered and uploaded while step s computes (before its update)
                ready.synchronize()  # the gradient has arrived
                update(s, uniq, g, pin_grad[:n])
                if s + 1 < S:
                    patch(nxt, uniq)  # the rows step s + 1 shares with step s, as updated

        else:  # table_on_gpu
            tbl, st = table.to(device), state.to(device)
            for s in range(S):
                uniq, inv = torch.unique(ids[s].to(device), return_inverse=True)
                expect_from_table(s, uniq)
                rows = tbl[uniq]
                g = train_step(s, rows, inv)
                update(s, uniq, g, g)

        check_fingerprints(seen.cpu(), expect.cpu())
        check_last_step(last, tbl, st)
        probe_rows = tbl[probe.to(tbl.device)].cpu()
        params = sum(float(p.detach().double().sum()) for p in tower.parameters())
        return float(probe_rows.double().sum()) + params + float(loss_sum)

    def check_fingerprints(seen: torch.Tensor, expect: torch.Tensor) -> None:
        """Every step's fingerprint of the rows the GPU trained on against the table's; exit 1."""
        bad = ((seen - expect[:, 0]).abs() > 1e-9 * expect[:, 1] + 1e-300).nonzero().flatten()
        if len(bad):
            s = int(bad[0])
            sys.exit(f"cpu_embedding_rows: step {s} trained on rows whose fingerprint is {float(seen[s]):.12g}, the "
                     f"table's rows for its ids {float(expect[s, 0]):.12g} ({len(bad)} steps differ)")

    def check_last_step(last: dict, tbl: torch.Tensor, st: torch.Tensor) -> None:
        """The last step's update recomputed on the CPU from its rows before the update and the GPU's gradient,
        against the final table; exit 1."""
        uniq = last["uniq"].cpu()
        rows, acc = last["rows"].cpu(), last["state"].cpu()
        grad = last["grad"].cpu()
        rowwise_adagrad_(rows, acc, torch.arange(len(uniq)), grad, args.lr)
        got_rows, got_acc = tbl[uniq.to(tbl.device)].cpu(), st[uniq.to(st.device)].cpu()
        err = float((got_rows - rows).abs().max())
        err_acc = float(((got_acc - acc).abs() / acc.abs().clamp_min(1e-30)).max())
        if not float(grad.abs().max()) > 0:
            sys.exit("cpu_embedding_rows: the last step's gradient is zero")
        if err > 1e-4 * args.lr or err_acc > 1e-6:
            sys.exit(f"cpu_embedding_rows: the last step's rows differ from the reference update by {err:.4g} "
                     f"(accumulator: {err_acc:.4g} relative)")

    report(args, loop, "cpu_embedding_rows")


if __name__ == "__main__":
    main()
