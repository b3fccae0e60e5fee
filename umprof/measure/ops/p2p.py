"""``p2p``: data moved between two GPUs (nvbandwidth's device-to-device tests), per pair.

``pair = "A>B"`` moves data from GPU A to GPU B (``all``: every ordered pair of the run's
GPUs; for ``direction = both``, every unordered pair). Methods:

* ``ce``: cuMemcpyPeerAsync, issued on GPU A's stream (the copy engines);
* ``sm-write``: a kernel on GPU A reads its own buffer and stores into GPU B's (a push);
* ``sm-read``: a kernel on GPU B loads from GPU A's buffer into its own (a pull);
* ``chase``: one thread on GPU B follows a random chain through 64 MiB of GPU A's memory:
  the latency of one load from a peer (nvbandwidth's device_to_device_latency_sm), each
  sample going on from where the last stopped.

``direction = both`` runs A>B and B>A at once, each on its own GPU's stream, and reports each
direction's rate beside the sum. ``peer_access = on`` enables cuCtxEnablePeerAccess both ways
first (the copy then goes GPU to GPU over NVLink or PCIe); ``off`` disables it, so a peer copy
is staged by the driver. Kernels cannot address a peer's memory without it: the SM methods and
the chase exist with ``on`` only. The ceiling is the path between the pair that NVML reports
(NVLink links × their rate, else the slower PCIe link). Every copy is checked byte for byte.
"""

from __future__ import annotations

import numpy as np

from umprof.core.axes import AxisSet, AxisSpec
from umprof.core.errors import CaseFailed, CaseSkipped
from umprof.measure.ops.base import CaseRun, Op, register
from umprof.measure.ops.latency import CHASE, CHASE_SIG, CHASE_STRIDE_WORDS, HOPS, chase_chain, chase_end
from umprof.measure.ops.legs import Fence, Leg, case_pair, pair_cases
from umprof.measure.ops.transfer import byte_pattern

METHODS = ("ce", "sm-read", "sm-write", "chase")
COPY = "p2p.cu:copy_vec16"
COPY_SIG = "PPQ"
CHASE_WORDS_PEER = 64 * 1024**2 // 4  # beyond the L2 of the GPU that reads


def copy_launch(session, nbytes: int) -> tuple[int, int]:
    """(grid, block) of an SM copy: enough 16-byte loads in flight to fill a peer link."""
    sms = session.attribute("MULTIPROCESSOR_COUNT", 132) or 132
    block = 512
    return max(1, min(sms * 8, (nbytes // 16 + block - 1) // block)), block


class Direction:
    """One way of a case: the source buffer on ``src``, the destination on ``dst``, the leg
    that moves it (on ``src`` for ce and sm-write, on ``dst`` for sm-read)."""

    def __init__(self, ctx, method, a: int, b: int, nbytes: int, pattern):
        self.a, self.b, self.method, self.nbytes = a, b, method, nbytes
        (self.sa, self.ka), (self.sb, self.kb) = ctx.peer(a), ctx.peer(b)
        self.handles = []
        for s in (self.sa, self.sb):
            s.check_device_alloc(nbytes, f"GPU {s.index} memory")
        try:
            with self.sa.current():
                self.src = self._keep(self.sa.cuda.mem_alloc(nbytes))
                self.sa.cuda.memcpy_htod(self.src, pattern)
            with self.sb.current():
                self.dst = self._keep(self.sb.cuda.mem_alloc(nbytes))
        except BaseException:
            self.close()
            raise
        worker = self.sb if method == "sm-read" else self.sa
        self.kernel = (self.kb if method == "sm-read" else self.ka).get(COPY, COPY_SIG, ()) if method != "ce" else None
        self.leg = Leg(worker)
        self.launch = copy_launch(worker, nbytes)

    def _keep(self, h):
        self.handles.append(h)
        return h

    def reset(self):
        with self.sb.current():
            self.sb.cuda.memset_d8(self.dst, 0xA5, self.nbytes)  # poison: the check proves the copy wrote
            self.sb.synchronize()

    def issue(self, after=None):
        with self.leg.issue(after) as stream:
            if self.method == "ce":
                self.sa.cuda.memcpy_peer_async(self.dst, self.src, self.nbytes, self.sb.context, self.sa.context, stream)
            else:
                grid, block = self.launch
                self.kernel.launch(grid, block, self.src, self.dst, self.nbytes // 16, stream=stream)

    def check(self, want):
        got = np.empty(self.nbytes, np.uint8)
        with self.sb.current():
            self.sb.cuda.memcpy_dtoh(got, self.dst)
        if not np.array_equal(got, want):
            bad = int(np.flatnonzero(got != want)[0])
            raise CaseFailed(f"{self.method} copy GPU {self.a}>{self.b} wrong at byte {bad}")

    def close(self):
        for h in self.handles:
            h.free()
        self.handles = []


class P2PRun(CaseRun):
    uses_managed_memory = False
    verify_every_sample = False

    def __init__(self, ctx, case):
        super().__init__()
        p = case.params
        self.session = ctx.session
        self.a, self.b = case_pair(ctx, p["pair"])
        self.method, self.both, self.nbytes = p["method"], p["direction"] == "both", p["bytes"]
        if self.method != "chase" and self.nbytes % 16:
            raise CaseSkipped(f"bytes: GPU-to-GPU copies here move 16-byte words; {self.nbytes} is not a multiple of 16")
        sa, sb = ctx.peer(self.a)[0], ctx.peer(self.b)[0]
        on = p["peer_access"] == "on"
        if on and not (sa.can_access_peer(sb) and sb.can_access_peer(sa)):
            raise CaseSkipped(f"GPU {self.a} and GPU {self.b} cannot address each other's memory (no peer access on this path)")
        for x, y in ((sa, sb), (sb, sa)):
            x.set_peer_access(y, on)
        self.extra.update(src_gpu=self.a, dst_gpu=self.b, path=(ctx.info.links.get(f"{self.a}-{self.b}") or {}).get("path"))
        self.ways = []
        self._chased = False
        try:
            if self.method == "chase":
                self._prepare_chase(ctx, sa, sb)
            else:
                self.pattern = byte_pattern(self.nbytes)
                self.ways.append(Direction(ctx, self.method, self.a, self.b, self.nbytes, self.pattern))
                if self.both:
                    self.reverse = self.pattern[::-1].copy()
                    self.ways.append(Direction(ctx, self.method, self.b, self.a, self.nbytes, self.reverse))
                self.fence = Fence(ctx.session)
        except BaseException:
            self.close()
            raise

    def _prepare_chase(self, ctx, sa, sb):
        self.chain = chase_chain(CHASE_WORDS_PEER, CHASE_STRIDE_WORDS)
        self.start, self.expected = 0, chase_end(self.chain, HOPS)
        self.handles = []
        sa.check_device_alloc(self.chain.nbytes, f"GPU {self.a} memory")
        with sa.current():
            self.chain_dev = sa.cuda.to_device(self.chain)
            self.handles.append(self.chain_dev)
        with sb.current():
            self.out = sb.cuda.mem_alloc(4)
            self.handles.append(self.out)
        self.chaser = ctx.peer(self.b)[1].get(CHASE, CHASE_SIG, ())
        self.leg = Leg(sb)

    def reset(self):
        if self.method == "chase":
            if self._chased:  # on from the last sample's end: lines not read recently
                self.start, self.expected = self.expected, chase_end(self.chain, HOPS, self.expected)
            return
        for w in self.ways:
            w.reset()

    def sample(self, timer):
        if self.method == "chase":
            with timer.phase("latency", gpu=False, reps=HOPS):
                with self.leg.issue() as stream:
                    self.chaser.launch(1, 1, self.chain_dev, HOPS, self.start, self.out, stream=stream)
                hop_s = self.leg.seconds() / HOPS
            timer.set_gpu_time("latency", hop_s)
            self._chased = True
            return
        if not self.both:
            way = self.ways[0]
            with timer.phase("p2p", bytes=self.nbytes, ceiling=f"peer:{self.a}-{self.b}", gpu=False):
                way.issue()
                t = way.leg.seconds()
            timer.set_gpu_time("p2p", t)
            return
        with timer.phase("both", bytes=2 * self.nbytes, ceiling=f"peer-duplex:{self.a}-{self.b}"):
            go = self.fence.open()
            for w in self.ways:
                w.issue(after=go)
            self.fence.close([w.leg for w in self.ways])
        fwd, rev = (w.leg.seconds() for w in self.ways)
        timer.sample.extra.setdefault("both", {}).update(forward_s=fwd, reverse_s=rev)

    def verify(self):
        if self.method == "chase":
            got = np.zeros(1, np.uint32)
            s = self.leg.session
            with s.current():
                s.cuda.memcpy_dtoh(got, self.out)
            if int(got[0]) != self.expected:
                raise CaseFailed(f"peer chase ended at index {int(got[0])}, expected {self.expected}")
            return
        self.ways[0].check(self.pattern)
        if self.both:
            self.ways[1].check(self.reverse)

    def finish_rows(self, rows):
        both = next((r for r in rows if r["phase"] == "both"), None)
        if both is None:
            return
        facts = {"forward_bytes_per_s": self.nbytes / both["forward_s"], "reverse_bytes_per_s": self.nbytes / both["reverse_s"]}
        for r in rows:
            r.update(facts)

    def close(self):
        for w in getattr(self, "ways", []):
            w.close()  # pycuda frees each allocation in the context it came from
        self.ways = []
        for h in getattr(self, "handles", []):
            h.free()
        self.handles = []


def _merge(params):
    method, access = params["method"], params["peer_access"]
    if method != "ce" and access == "off":
        return None  # a kernel cannot address a peer's memory without peer access
    if method == "chase":
        return {**params, "bytes": None, "direction": "one"}
    return params


def _device_cases(params, devices):
    """``pair=all`` → every ordered pair of the run's GPUs (unordered for both directions)."""
    return pair_cases(params, devices, params["direction"] == "both")


OP = register(Op(
    name="p2p",
    about="GPU to GPU: copy engines and SM loads/stores over NVLink or PCIe, one way and both, peer access on/off; latency",
    axes=AxisSet([
        AxisSpec("pair", "pair", default=("all",)),
        AxisSpec("method", "choice", default=("ce", "sm-read", "sm-write"), choices=METHODS),
        AxisSpec("direction", "choice", default=("one", "both"), choices=("one", "both")),
        AxisSpec("peer_access", "choice", default=("on", "off"), choices=("on", "off")),
        AxisSpec("bytes", "size", default=tuple(4**k * 4096 for k in range(10)), minimum=16),
    ]),
    kernels=lambda scenario: [(COPY, COPY_SIG, ()), (CHASE, CHASE_SIG, ())],
    phases=("p2p", "both", "latency"),
    run=P2PRun,
    merge=_merge,
    spans_devices=True,
    device_cases=_device_cases,
    sample_rate=100e9,
    min_sample_s=2e-5,
))
