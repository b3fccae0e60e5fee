"""Check the PyTorch verification programs' logic without a GPU: run every mode of each on a CPU build of
torch, with small sizes, ``cuda`` devices mapped to the CPU, pinning a no-op and ``torch.cuda`` streams,
events and CUDA graphs stand-ins; the checksums of a program's modes must agree.

    python3 cpu_dryrun.py            # every program, every mode
    python3 cpu_dryrun.py PROGRAM.py --mode MODE [ARGS...]   # one run, its JSON line printed

It checks control flow and results, not speed nor the CUDA semantics (ordering of streams and events).
"""

from __future__ import annotations

import contextlib
import json
import runpy
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# program -> (modes, small arguments)
SMALL = {
    "train_loader.py": (("as_written", "loader_pinned", "dataset_pinned_once", "dataset_on_gpu"),
                        ["--mib", "16", "--batch", "64", "--epochs", "2"]),
    "infer_service.py": (("as_written", "pinned_prealloc", "two_streams"), ["--requests", "7", "--height", "16"]),
    "offload_weights.py": (("as_written", "pinned_once", "pinned_side_stream"),
                           ["--requests", "3", "--layers", "5", "--dim", "64"]),
    "pin_per_call.py": (("as_written", "pageable", "pinned_once", "on_gpu"), ["--batches", "5", "--rows", "8"]),
    "small_copies.py": (("as_written", "pinned_each", "packed"), ["--steps", "5", "--layers", "4"]),
    "resident.py": (("as_written", "pinned_readback"), ["--steps", "5", "--batch", "64"]),
    "readback.py": (("as_written", "pageable_prealloc", "pinned_prealloc"), ["--steps", "4", "--mib", "1", "--work", "2"]),
    "dict_batches.py": (("as_written", "pinned_each", "packed"), ["--steps", "6", "--batch", "64"]),
    "generate_tokens.py": (("as_written", "gpu_tokens", "pinned_async"),
                           ["--steps", "70", "--prompts", "2", "--vocab", "500", "--dim", "64"]),
    "loader_workers.py": (("as_written", "unpinned", "workers0"), ["--samples", "256", "--epochs", "2", "--width", "4"]),
    "activation_offload.py": (("as_written", "pinned_prealloc", "keep_on_gpu"),
                              ["--steps", "2", "--layers", "3", "--rows", "16", "--dim", "32"]),
    "augment_batches.py": (("as_written", "pinned_prealloc", "gpu_augment"), ["--images", "16", "--batch", "4", "--epochs", "2"]),
    "embedding_gather.py": (("as_written", "pinned_gather", "table_on_gpu"),
                            ["--steps", "5", "--rows", "4096", "--dim", "16", "--batch", "64", "--hidden", "32"]),
    "ema_snapshots.py": (("as_written", "pinned_async", "ema_on_gpu"),
                         ["--steps", "12", "--every", "4", "--batch", "16", "--width", "64", "--depth", "3"]),
    "dict_collate.py": (("as_written", "pinned_loader", "on_gpu"),
                        ["--samples", "200", "--batch", "64", "--epochs", "2", "--side", "16", "--width", "4"]),
    "seq_padding.py": (("as_written", "pinned_loader", "on_gpu"),
                       ["--sequences", "100", "--batch", "16", "--epochs", "2", "--min-len", "4", "--max-len", "24",
                        "--dim", "16", "--layers", "1"]),
    # 9 MiB in 2 MiB chunks: the last chunk short
    "chunked_stream.py": (("as_written", "pinned_once", "double_buffered", "on_gpu"),
                          ["--mib", "9", "--chunk-mib", "2", "--cols", "256", "--passes", "3"]),
    # 9 MiB in 2 MiB batches: the last batch short
    "memmap_batches.py": (("as_written", "pinned_staging", "pinned_double", "loaded_pinned", "on_gpu"),
                          ["--mib", "9", "--batch-mib", "2", "--features", "256", "--hidden", "64", "--epochs", "2"]),
    "cpu_adam_offload.py": (("as_written", "pinned_buffers", "flat_pinned", "gpu_optimizer"),
                            ["--steps", "5", "--width", "64", "--depth", "3", "--batch", "16"]),
    # 9 MiB in 2 MiB batches: the last batch short
    "eval_collect.py": (("as_written", "pinned_out", "gpu_collect", "pinned_in_out", "dataset_on_gpu"),
                        ["--mib", "9", "--batch-mib", "2", "--features", "256", "--hidden", "64", "--classes", "100",
                         "--passes", "2"]),
    # snapshots after steps 3, 6 and 9 of 10: the last snapshot older than the final weights
    "checkpoint_copies.py": (("as_written", "pinned_snapshot", "side_stream", "gpu_clone"),
                             ["--steps", "10", "--every", "3", "--width", "64", "--depth", "3", "--batch", "16"]),
    # 300 frames in batches of 64: the last batch short
    "uint8_frames.py": (("as_written", "pinned_float", "uint8_to_gpu", "uint8_pinned", "frames_on_gpu"),
                        ["--frames", "300", "--batch", "64", "--side", "64", "--passes", "2"]),
    "metrics_logging.py": (("as_written", "pinned_async", "gpu_metrics", "side_stream"),
                           ["--epochs", "2", "--steps", "5", "--batch", "64", "--features", "16", "--hidden", "32",
                            "--classes", "50"]),
    "kv_offload.py": (("as_written", "pinned_cache", "prefetch_next_layer", "cache_on_gpu"),
                      ["--layers", "3", "--dim", "64", "--heads", "4", "--batch", "2", "--prompt", "16", "--new", "6",
                       "--vocab", "500"]),
    # 100 sequences in batches of 16: the last batch short
    "token_batches.py": (("as_written", "pinned_nonblocking", "pretokenized_gpu", "packed"),
                         ["--sequences", "100", "--batch", "16", "--epochs", "2", "--min-len", "4", "--max-len", "24",
                          "--dim", "16", "--layers", "1"]),
    # 64 batches of 64 rows, 12 steps: a batch drawn twice or more
    "graph_replay.py": (("as_written", "pinned_staging", "dataset_pinned", "dataset_on_gpu"),
                        ["--mib", "4", "--features", "256", "--batch", "64", "--hidden", "64", "--outputs", "32",
                         "--steps", "12"]),
    "nonblocking_pageable.py": (("as_written", "pinned_buffer", "side_stream_prefetch", "augment_on_gpu"),
                                ["--rows", "512", "--noise-rows", "256", "--features", "64", "--batch", "64",
                                 "--hidden", "32", "--steps", "12"]),
    "tile_inference.py": (("as_written", "pinned_batches", "gpu_tiling", "side_stream"),
                          ["--images", "2", "--side", "200", "--tile", "64", "--overlap", "16", "--batch", "5",
                           "--width", "8"]),
    # 1365 samples in batches of 64: an epoch's last batch short
    "shuffled_epochs.py": (("as_written", "loader_pinned", "loader_workers", "dataset_on_gpu", "gpu_epoch_loss"),
                           ["--mib", "16", "--batch", "64", "--epochs", "2", "--workers", "2", "--hidden", "64"]),
    # episodes of 5 steps and a noise table of 6 rows: resets and reused noise rows within the run
    "rl_rollouts.py": (("as_written", "pinned_buffers", "gpu_storage", "pinned_gpu_storage", "env_on_gpu"),
                       ["--envs", "16", "--horizon", "8", "--rollouts", "3", "--epochs", "2", "--minibatches", "2",
                        "--episode", "5", "--noise-steps", "6"]),
    # 37 frames in batches of 8: the last batch short
    "video_pipeline.py": (("as_written", "pinned_float", "gpu_normalize", "pinned_ring", "side_stream"),
                          ["--frames", "37", "--batch", "8", "--height", "96", "--width", "160", "--queue", "8",
                           "--channels", "8"]),
    "request_batching.py": (("as_written", "pinned_prealloc", "gpu_packing", "side_stream"),
                            ["--requests", "60", "--min-len", "4", "--max-len", "40", "--max-batch", "8",
                             "--token-budget", "128", "--bucket", "8", "--vocab", "500", "--dim", "32", "--heads", "2",
                             "--classes", "5"]),
    "cpu_embedding_rows.py": (("as_written", "pinned_staging", "table_pinned", "side_stream", "table_on_gpu"),
                              ["--rows", "4096", "--dim", "16", "--batch", "64", "--lookups", "4", "--steps", "6",
                               "--hidden", "32"]),
    "replay_buffer.py": (("as_written", "pinned_staging", "buffer_pinned", "buffer_on_gpu", "side_stream_prefetch"),
                         ["--buffer", "5000", "--obs-dim", "32", "--actions", "6", "--batch", "64", "--steps", "25",
                          "--hidden", "32", "--target-every", "10"]),
    "memory_bank.py": (("as_written", "pinned_nonblocking", "pinned_staging", "side_stream", "bank_on_gpu"),
                       ["--bank", "2048", "--dim", "16", "--negatives", "256", "--batch", "64", "--steps", "40",
                        "--in-dim", "32", "--hidden", "64", "--samples", "256"]),
    "point_clouds.py": (("as_written", "concat_pinned", "padded", "workers", "dataset_on_gpu"),
                        ["--samples", "100", "--batch", "16", "--epochs", "2", "--min-points", "8", "--max-points",
                         "64", "--width", "32", "--workers", "2"]),
    "diffusion_preview.py": (("as_written", "pinned_async", "gpu_convert", "previews_on_gpu"),
                             ["--prompts", "2", "--steps", "6", "--batch", "3", "--side", "32", "--channels", "16"]),
    "graph_sampling.py": (("as_written", "pinned_gather", "features_on_gpu", "prefetch_thread"),
                          ["--nodes", "20000", "--degree", "6", "--features", "32", "--classes", "4", "--train", "500",
                           "--batch", "64", "--fanout1", "5", "--fanout2", "3", "--hidden", "32", "--epochs", "2"]),
    "sliding_windows.py": (("as_written", "pinned_loader", "series_on_gpu", "workers"),
                           ["--channels", "4", "--length", "20000", "--window", "32", "--horizon", "8", "--batch", "16",
                            "--windows", "250", "--epochs", "2", "--hidden", "32", "--workers", "2"]),
    "audio_features.py": (("as_written", "pinned_features", "gpu_features", "waveforms_on_gpu"),
                          ["--clips", "100", "--seconds", "0.25", "--batch", "16", "--epochs", "2", "--mels", "16",
                           "--width", "4"]),
    "tabular_pandas.py": (("as_written", "numpy_once", "pinned_once", "on_gpu"),
                          ["--rows", "1000", "--batch", "64", "--hidden", "32", "--epochs", "2"]),
    "sparse_features.py": (("as_written", "pinned_loader", "workers", "packed", "dataset_on_gpu", "no_item"),
                           ["--samples", "300", "--batch", "64", "--epochs", "2", "--rows", "5000", "--max-len", "12",
                            "--dim", "8", "--hidden", "32", "--workers", "2"]),
    "detection_postprocess.py": (("as_written", "pinned_io", "batch_readback", "gpu_filter", "gpu_nms", "side_stream"),
                                 ["--frames", "37", "--batch", "8", "--height", "96", "--width", "128", "--channels",
                                  "8", "--classes", "5", "--pre-nms", "100", "--max-det", "40"]),
}


def _cpu(x):
    if isinstance(x, str) and x.startswith("cuda"):
        return "cpu"
    import torch

    if isinstance(x, torch.device) and x.type == "cuda":
        return torch.device("cpu")
    return x


def _patch_torch() -> None:
    import torch
    import torch.nn as nn

    def mapped(fn):
        def call(*a, **k):
            k.pop("pin_memory", None)
            if "device" in k:
                k["device"] = _cpu(k["device"])
            return fn(*[_cpu(v) for v in a], **k)
        return call

    for name in ("empty", "zeros", "ones", "randn", "rand", "full", "arange", "tensor"):
        setattr(torch, name, mapped(getattr(torch, name)))

    class Generator(torch.Generator):
        def __new__(cls, device="cpu"):
            return torch._C.Generator(device=_cpu(device))

    torch.Generator = Generator
    torch.Tensor.to = mapped(torch.Tensor.to)
    torch.Tensor.cuda = lambda self, *a, **k: self
    torch.Tensor.pin_memory = lambda self, *a, **k: self.clone()
    nn.Module.to = mapped(nn.Module.to)
    nn.Module.cuda = lambda self, *a, **k: self

    class Event:
        def record(self, stream=None): pass
        def synchronize(self): pass
        def wait(self, stream=None): pass
        def query(self): return True

    class Stream:
        def wait_event(self, event): pass
        def wait_stream(self, stream): pass
        def synchronize(self): pass
        def record_event(self, event=None): return event or Event()

    torch.cuda.Event, torch.cuda.Stream = Event, Stream
    torch.cuda.CUDAGraph, torch.cuda.graph = _graph_stand_ins()
    torch.Tensor.record_stream = lambda self, stream: None
    torch.cuda.stream = lambda s: contextlib.nullcontext()
    torch.cuda.current_stream = lambda *a: Stream()
    torch.cuda.synchronize = lambda *a: None


def _graph_stand_ins():
    """``torch.cuda.CUDAGraph`` and ``torch.cuda.graph`` on the CPU: the capture runs its block once (a real capture
    runs nothing: the programs zero what that leaves) recording every aten op with the tensors it took and made; a
    replay runs the recorded ops again on those tensors, copying each result into the tensor the capture made (the
    static outputs and intermediates keep their identity, as a graph's memory does)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class Recorder(TorchDispatchMode):
        def __init__(self, ops):
            super().__init__()
            self.ops = ops

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            self.ops.append((func, args, kwargs, out))
            return out

    class CUDAGraph:
        def __init__(self, *a, **k):
            self.ops = []

        def replay(self):
            with torch.no_grad():  # a graph's replay records nothing for autograd
                for func, args, kwargs, out in self.ops:
                    res = func(*args, **kwargs)
                    for old, new in zip(tree_flatten(out)[0], tree_flatten(res)[0]):
                        if not isinstance(old, torch.Tensor) or (
                                old.data_ptr() == new.data_ptr() and old.stride() == new.stride()):
                            continue  # not a tensor, or the same memory (an in-place op's, a view's)
                        old.copy_(new)

    class graph:
        def __init__(self, cuda_graph, *a, **k):
            self.mode = Recorder(cuda_graph.ops)

        def __enter__(self):
            self.mode.__enter__()

        def __exit__(self, *exc):
            return self.mode.__exit__(*exc)

    return CUDAGraph, graph


def run_one(argv: list[str]) -> None:
    _patch_torch()
    sys.path.insert(0, str(HERE))
    sys.argv = argv
    runpy.run_path(argv[0], run_name="__main__")


def run_all() -> int:
    bad = 0
    for prog, (modes, small) in SMALL.items():
        sums = {}
        for mode in modes:
            cmd = [sys.executable, __file__, str(HERE / prog), "--mode", mode, *small]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                print(f"{prog} {mode}: exit {p.returncode}\n{p.stderr[-2000:]}")
                bad += 1
                continue
            sums[mode] = json.loads(p.stdout.strip().splitlines()[-1])["checksum"]
        ref = next(iter(sums.values()), None)
        agree = all(abs(v - ref) <= 1e-4 * max(1.0, abs(ref)) for v in sums.values())
        bad += not agree
        print(f"{prog:20s} {'ok ' if agree else 'DIFFER'} {sums}")
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__)
    elif len(sys.argv) > 1:
        run_one(sys.argv[1:])
    else:
        sys.exit(run_all())
