"""Judge umprof's advice on the verification programs against their measured modes, offline.

    python3 judge.py TIMINGS_DIR ADVICE_DIR [--json OUT.json] [--time loop|wall]

TIMINGS_DIR holds run_gpu.py's timings (NAME.json: mode -> seconds); ADVICE_DIR holds the advice umprof gave on
each program's trace of its as_written mode, ``python3 -m umprof advise TRACE --json > NAME.TRACER.json`` (TRACER:
nsys or kineto; NAME-rankN.TRACER.json for each rank of a job; a file that is not JSON, e.g. umprof's one-line error, counts as "no advice"). For each advice:
the change it advises is mapped to the program's mode that applies it (MODES below, kept here and never in
umprof), and that mode's measured median is compared with as_written's: faster (by more than 5%), within 5%, or
slower; with the share of the best mode's saving it captured. ``idiom`` says whether the change is written in the
program's own framework (a PyTorch program advised in pycuda's or CUDA C's API is not).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

WITHIN = 0.05  # a mode within 5% of as_written measured the same (rounds on one machine differ by about that)
KEEP = "keep"  # the advice changes nothing: as_written is the mode that applies it
SAVING_WITHIN = 0.25  # a predicted saving within this share of the measured one is right (issue 88's bound)

# program -> advised strategy (umprof's names) or idiom code (the advice's "idiom": umprof.model.torch_choices' codes,
# and packing's "packed-copy") -> the mode that applies it, or the measured mode nearest it (a side stream where only
# pinning once was measured: ddp_train's offload-prefetched; loader_workers' as_written, already pinned and
# asynchronous, where no side stream was measured). A key absent from a program's table was not measured on it:
# judged "unmeasured".
# the advice a held-out program may be given, applied as its one pinned mode or its one mode that keeps the data on
# the GPU (``_pinned_or_gpu``)
PINNED_CODES = ("pinned", "pageable-registered", "preallocated-pinned", "pinned-in", "pinned-out", "pin-once",
                "offload-pinned", "offload-prefetched", "dataset-pinned-once")
GPU_CODES = ("resident", "keep-on-gpu", "device-resident", "host-step-on-gpu")
# the advice to upload the next piece while this one computes: a held-out program's double-buffered mode, where it
# has one
PIPELINED_CODES = ("pinned-pipelined", "side-stream", "offload-prefetched")


def _pinned_or_gpu(pinned: str, gpu: str, *more_pinned: str) -> dict:
    """A held-out program's advice -> mode: kept or pageable as written, every pinning code (``PINNED_CODES`` and
    ``more_pinned``) its pinned mode, every keeping on the GPU its ``gpu`` mode."""
    return {KEEP: "as_written", "pageable": "as_written", **{c: pinned for c in PINNED_CODES + more_pinned},
            **{c: gpu for c in GPU_CODES}}


MODES = {
    "train_loader": {KEEP: "as_written", "pageable": "as_written", "pinned": "dataset_pinned_once",
                     "pageable-registered": "dataset_pinned_once", "pageable-staged": "loader_pinned",
                     "pinned-pipelined": "loader_pinned", "dataloader-pin-memory": "loader_pinned",
                     "pin-once": "dataset_pinned_once", "keep-on-gpu": "dataset_on_gpu",
                     "device-resident": "dataset_on_gpu", "resident": "dataset_on_gpu",
                     "dataset-pinned-once": "dataset_pinned_once", "dataloader-pinned": "loader_pinned",
                     "dataloader-pin-thread": "as_written", "dataloader-unpinned": "as_written",
                     "offload-pinned": "dataset_pinned_once", "offload-prefetched": "dataset_pinned_once"},
    "infer_service": {KEEP: "as_written", "pageable": "as_written", "pinned": "pinned_prealloc",
                      "pageable-registered": "pinned_prealloc", "pageable-staged": "pinned_prealloc",
                      "pinned-pipelined": "two_streams", "preallocated-pinned": "pinned_prealloc",
                      "side-stream": "two_streams", "pinned-out": "pinned_prealloc", "pinned-in": "pinned_prealloc",
                      "offload-prefetched": "two_streams"},
    "offload_weights": {KEEP: "as_written", "pageable": "as_written", "pinned": "pinned_once",
                        "pageable-registered": "pinned_once", "pinned-pipelined": "pinned_side_stream",
                        "pin-once": "pinned_once", "side-stream": "pinned_side_stream",
                        "offload-pinned": "pinned_once", "offload-prefetched": "pinned_side_stream"},
    "pin_per_call": {KEEP: "as_written", "pageable": "pageable", "pinned": "pinned_once",
                     "pageable-registered": "pinned_once", "pin-once": "pinned_once", "drop-pin": "pageable",
                     "resident": "on_gpu"},
    "small_copies": {KEEP: "as_written", "pageable": "as_written", "pinned": "pinned_each",
                     "pageable-registered": "pinned_each", "pageable-staged": "packed", "packed-copy": "packed",
                     "pin-once": "pinned_each", "pinned-in": "pinned_each"},
    "resident": {KEEP: "as_written", "pageable": "as_written", "pinned": "pinned_readback",
                 "preallocated-pinned": "pinned_readback", "pinned-out": "pinned_readback",
                 "async-readback": "pinned_readback"},
    "readback": {KEEP: "as_written", "pageable": "pageable_prealloc", "pinned": "pinned_prealloc",
                 "pageable-registered": "pinned_prealloc", "preallocated-pinned": "pinned_prealloc",
                 "pinned-out": "pinned_prealloc"},
    # no side stream measured: copying out through pinned tensors on a side stream (pinned-pipelined, and mapped,
    # which PyTorch says as that) is applied as its pinned mode, the nearest timed (as ddp_train's)
    "readback_compute": {KEEP: "as_written", "pinned": "pinned_prealloc", "pageable-registered": "pinned_prealloc",
                         "preallocated-pinned": "pinned_prealloc", "pinned-out": "pinned_prealloc",
                         "pinned-pipelined": "pinned_prealloc", "mapped": "pinned_prealloc"},
    "managed_loop": {KEEP: "as_written", "managed": "as_written", "managed-prefetch": "prefetch",
                     "pageable-registered": "registered", "pinned": "registered"},
    "batch_loop": {KEEP: "as_written", "pinned": "as_written", "pinned-pipelined": "as_written",
                   "pageable": "pageable", "managed-prefetch": "managed_prefetch"},
    "cupy_batches": {KEEP: "as_written", "pageable": "as_written", "pinned": "pinned_once",
                     "pageable-registered": "pinned_once", "pageable-staged": "pinned_staging",
                     "pin-once": "pinned_once", "mapped": "mapped", "zero-copy": "mapped"},
    "ddp_train": {KEEP: "as_written", "pageable": "as_written", "pinned": "pinned_once",
                  "pageable-registered": "pinned_once", "pin-once": "pinned_once", "offload-pinned": "pinned_once",
                  "offload-prefetched": "pinned_once", "dataset-pinned-once": "pinned_once", "resident": "on_gpu"},
    "dict_batches": {KEEP: "as_written", "pageable": "as_written", "pinned": "pinned_each",
                     "pageable-registered": "pinned_each", "pageable-staged": "packed", "packed-copy": "packed",
                     "pin-once": "pinned_each", "pinned-in": "pinned_each", "pinned-pipelined": "pinned_each"},
    "generate_tokens": {KEEP: "as_written", "pageable": "as_written", "pinned": "pinned_async",
                        "pageable-registered": "pinned_async", "pinned-pipelined": "pinned_async",
                        "pinned-out": "pinned_async", "resident": "gpu_tokens", "packed-copy": "gpu_tokens",
                        "async-readback": "pinned_async"},
    "loader_workers": {KEEP: "as_written", "pinned": "as_written", "dataloader-pinned": "as_written",
                       "pinned-pipelined": "as_written", "offload-prefetched": "as_written", "pageable": "unpinned",
                       "dataloader-unpinned": "unpinned", "dataloader-pin-thread": "unpinned"},
    # held out: written after the model, judged first as they came (see the verification README)
    "activation_offload": _pinned_or_gpu("pinned_prealloc", "keep_on_gpu"),
    "augment_batches": _pinned_or_gpu("pinned_prealloc", "gpu_augment"),
    "embedding_gather": _pinned_or_gpu("pinned_gather", "table_on_gpu"),
    "ema_snapshots": _pinned_or_gpu("pinned_async", "ema_on_gpu", "async-readback", "pinned-pipelined", "side-stream"),
    "dict_collate": _pinned_or_gpu("pinned_loader", "on_gpu", "dataloader-pinned", "packed-copy"),
    # the loader's pinning, the host running ahead of the GPU: its pinned mode is the pipelined one too (as
    # train_loader's)
    "seq_padding": _pinned_or_gpu("pinned_loader", "on_gpu", "dataloader-pinned", "dataloader-pin-memory",
                                  "packed-copy", "pageable-staged", "pinned-pipelined"),
    # a stream of chunks: staging through pinned buffers, a side stream or a prefetch is its double-buffered mode,
    # every other pinning the array pinned once
    "chunked_stream": {**_pinned_or_gpu("pinned_once", "on_gpu"),
                       **{c: "double_buffered" for c in PIPELINED_CODES + ("pageable-staged",)}},
    # batches from a memory map: one pinned staging buffer for the pinning codes a batch at a time, a side stream or
    # prefetch its double-buffered mode, pinning the whole array once its loaded_pinned
    "memmap_batches": {**_pinned_or_gpu("pinned_staging", "on_gpu", "pageable-staged"),
                       **{c: "pinned_double" for c in PIPELINED_CODES},
                       **{c: "loaded_pinned" for c in ("pin-once", "dataset-pinned-once", "offload-pinned")}},
    # an optimizer on the host: every pinning its pinned buffers, packing its flat buffers, keeping on the GPU the
    # optimizer there
    "cpu_adam_offload": {**_pinned_or_gpu("pinned_buffers", "gpu_optimizer", "async-readback", "pinned-pipelined",
                                          "side-stream", "pageable-staged"),
                         "packed-copy": "flat_pinned"},
    # an evaluation collecting logits: pinning the read-backs its pinned_out, pinning the inputs (the dataset once,
    # a pinned buffer, all host memory) its pinned_in_out, which pins both, and the nearest mode to a side stream,
    # which none adds; keeping the data on the GPU its dataset_on_gpu (its gpu_collect keeps the results there,
    # which no code names)
    "eval_collect": {**_pinned_or_gpu("pinned_in_out", "dataset_on_gpu", "dataloader-pinned", "pageable-staged",
                                      "pinned-pipelined", "side-stream"),
                     **{c: "pinned_out" for c in ("pinned-out", "preallocated-pinned", "async-readback")}},
    # snapshots of the weights: every pinning its pinned snapshot, a side stream or pipelining its side_stream,
    # keeping them on the GPU its gpu_clone
    "checkpoint_copies": {**_pinned_or_gpu("pinned_snapshot", "gpu_clone", "async-readback", "pageable-staged"),
                          **{c: "side_stream" for c in PIPELINED_CODES}},
    # uint8 frames normalised on the host: every pinning its pinned_float (pinned without changing the data type; its
    # uint8_to_gpu and uint8_pinned, which move uint8 and convert on the GPU, no code names), keeping the frames on
    # the GPU its frames_on_gpu; it has no side stream: the pipelining codes its pinned_float, the nearest
    "uint8_frames": _pinned_or_gpu("pinned_float", "frames_on_gpu", "pageable-staged", "pinned-pipelined",
                                   "side-stream"),
    # metrics read back each step: every pinning its pinned_async, a side stream or pipelining its side_stream,
    # keeping the metrics on the GPU its gpu_metrics, and so async-readback ("keep the values on the GPU and read them
    # once after the loop", its first way; pinned_async still waits on each step's copies before reading them)
    "metrics_logging": {**_pinned_or_gpu("pinned_async", "gpu_metrics", "pageable-staged"),
                        **{c: "side_stream" for c in PIPELINED_CODES}, "async-readback": "gpu_metrics"},
    # a KV cache offloaded to the host: every pinning its pinned cache (preallocated, only the new position written
    # back), uploading the next layer while this one computes its prefetch_next_layer, keeping it on the GPU its
    # cache_on_gpu
    "kv_offload": {**_pinned_or_gpu("pinned_cache", "cache_on_gpu"),
                   **{c: "prefetch_next_layer" for c in PIPELINED_CODES}},
    # batches padded on the host from Python lists: every pinning, and staging through pinned buffers (what its pinned
    # mode does), its pinned_nonblocking, packing ids and mask into one copy its packed, keeping the corpus on the
    # GPU its pretokenized_gpu; it has no side stream (loss.item() each step): the pipelining codes unmeasured
    "token_batches": {**_pinned_or_gpu("pinned_nonblocking", "pretokenized_gpu", "pageable-staged"),
                      "packed-copy": "packed"},
    # a CUDA graph replayed on batches copied in from pageable memory, its outputs read back: every pinning its
    # pinned_staging (pinned input and output buffers), pinning the dataset once its dataset_pinned (which pins the
    # outputs as pinned_staging does; the nearest to offload-prefetched, as ddp_train's), keeping the data on the GPU
    # its dataset_on_gpu (the outputs accumulated there too); it has no side stream: the other pipelining codes
    # unmeasured
    "graph_replay": {**_pinned_or_gpu("pinned_staging", "dataset_on_gpu", "pageable-staged"),
                     **{c: "dataset_pinned" for c in ("pin-once", "dataset-pinned-once", "offload-pinned",
                                                      "offload-prefetched")}},
    # batches augmented on the host and uploaded with non_blocking=True from pageable memory: every pinning its
    # pinned_buffer (the augmentation written into two pinned buffers in turn), a side stream or pipelining its
    # side_stream_prefetch, keeping the data on the GPU its augment_on_gpu (the augmentation done there)
    "nonblocking_pageable": {**_pinned_or_gpu("pinned_buffer", "augment_on_gpu", "pageable-staged"),
                             **{c: "side_stream_prefetch" for c in PIPELINED_CODES}},
    # a readback only: the pinning codes that name its direction, and the two pinned buffers in turn its pinned_out is
    "cupy_readback": {KEEP: "as_written", "pageable": "as_written", "pinned": "pinned_out", "pinned-out": "pinned_out",
                      "async-readback": "pinned_out", "pageable-registered": "pinned_out",
                      "preallocated-pinned": "pinned_out", "pageable-staged": "pinned_out",
                      "resident": "reduce_on_gpu", "keep-on-gpu": "reduce_on_gpu", "device-resident": "reduce_on_gpu"},
    # tiles cut and normalised on the host, batches uploaded and logits read back: every pinning its pinned_batches
    # (pinned batch and logits buffers), a side stream or pipelining its side_stream, keeping the images on the GPU
    # (cut, normalised and stitched there) its gpu_tiling
    "tile_inference": {**_pinned_or_gpu("pinned_batches", "gpu_tiling", "pageable-staged", "async-readback"),
                       **{c: "side_stream" for c in PIPELINED_CODES}},
    # a sensor's frames made in malloc'd memory, copied in and their binned results back: each way its mode (mapped,
    # a registered buffer the kernels read in place, its zero_copy, the nearest; its managed mode prefetches)
    "sensor_frames": {KEEP: "as_written", "pageable": "as_written", "pinned": "pinned", "write-combined": "pinned",
                      "pageable-registered": "registered", "pinned-pipelined": "pipelined", "zero-copy": "zero_copy",
                      "mapped": "zero_copy", "managed-prefetch": "managed"},
    # a managed simulation whose host reads and writes a few pages between kernels: prefetching its prefetch, the GPU
    # preferred its advise_accessed (the host's accesses mapped), the explicit ways its device grids with only what
    # the host touches copied (pinned or pageable small buffers: the nearest to a whole buffer copied, unmeasured)
    "heat_managed": {KEEP: "as_written", "managed": "as_written", "managed-prefetch": "prefetch",
                     "managed-advise-prefer-gpu": "advise_accessed", "pinned": "explicit",
                     "pageable-registered": "explicit", "pinned-pipelined": "explicit", "pageable": "explicit_pageable"},
    # gpuarray batches from a numpy dataset: pinning its pinned staging buffer (also what staging through pinned
    # memory does), registering the dataset in place its registered, pipelining its pinned_async, keeping the data on
    # the GPU its resident
    "pycuda_batches": {KEEP: "as_written", "pageable": "as_written", "pinned": "pinned", "write-combined": "pinned",
                       "pageable-staged": "pinned", "pageable-registered": "registered",
                       "pinned-pipelined": "pinned_async", "resident": "resident", "keep-on-gpu": "resident",
                       "device-resident": "resident"},
    # a shuffled DataLoader over a TensorDataset: every pinning, and uploading ahead, its loader_pinned (the loader's
    # pin thread runs ahead of the GPU, as seq_padding's), keeping the dataset on the GPU its dataset_on_gpu; reading
    # the losses once an epoch was measured only with the dataset on the GPU (gpu_epoch_loss): not a mode of its own
    "shuffled_epochs": {**_pinned_or_gpu("loader_pinned", "dataset_on_gpu", "dataloader-pinned",
                                         "dataloader-pin-memory", "pageable-staged", "pinned-pipelined",
                                         "side-stream")},
    # PPO rollouts, small copies each way every step: every pinning, and uploading ahead, its pinned_buffers; keeping
    # the data on the GPU its gpu_storage (the rollout kept there; the environment still on the host)
    "rl_rollouts": _pinned_or_gpu("pinned_buffers", "gpu_storage", "pageable-staged", "pinned-pipelined",
                                  "side-stream"),
    # frames decoded on the host as the loop runs: every pinning its pinned_float (the batch normalised into pinned
    # memory), uploading the next batch while this one computes its side_stream; no mode keeps frames that are still
    # being decoded on the GPU: keeping the data there is unmeasured
    "video_pipeline": {KEEP: "as_written", "pageable": "as_written",
                       **{c: "pinned_float" for c in PINNED_CODES + ("pageable-staged",)},
                       **{c: "side_stream" for c in ("pinned-pipelined", "side-stream", "offload-prefetched")}},
    # requests padded into batches on the host: every pinning its pinned_prealloc, uploading the next batch while this
    # one computes its side_stream; packing the batch's tokens into one upload its gpu_packing; no mode keeps data on
    # the GPU (requests arrive as the loop runs): keeping it there is unmeasured
    "request_batching": {KEEP: "as_written", "pageable": "as_written",
                         **{c: "pinned_prealloc" for c in PINNED_CODES + ("pageable-staged",)},
                         **{c: "side_stream" for c in ("pinned-pipelined", "side-stream", "offload-prefetched")},
                         "packed-copy": "gpu_packing"},
    # an embedding table kept in host memory, its rows gathered up and their gradients read back each step: every
    # pinning its pinned_staging (pinning the table once its table_pinned), uploading the next step's rows ahead its
    # side_stream, keeping the table (and its update) on the GPU its table_on_gpu
    "cpu_embedding_rows": {**_pinned_or_gpu("pinned_staging", "table_on_gpu", "pageable-staged"),
                           **{c: "table_pinned" for c in ("pin-once", "dataset-pinned-once", "offload-pinned")},
                           **{c: "side_stream" for c in PIPELINED_CODES}},
    # a signal filtered block by block with CuPy: every pinning its pinned_staging (pinned buffers, one stream),
    # uploading the next block while this one computes its double_buffered, keeping the signal on the GPU its on_gpu
    # (pinned_pool, CuPy's pool swapped, is a control no advice names)
    "cupy_fft_blocks": {**_pinned_or_gpu("pinned_staging", "on_gpu", "pageable-staged", "write-combined"),
                        **{c: "double_buffered" for c in PIPELINED_CODES}},
    # previews of a sampler's images read back each step: every pinning, reading back asynchronously and uploading
    # or reading ahead its pinned_async (two pinned buffers, the host converting step i-1 while step i runs),
    # keeping the previews on the GPU its previews_on_gpu (read once a batch); converting on the GPU (gpu_convert)
    # is host-ops-on-gpu's mode
    "diffusion_preview": {KEEP: "as_written", "pageable": "as_written", "host-ops-on-gpu": "gpu_convert",
                          **{c: "pinned_async" for c in PINNED_CODES + PIPELINED_CODES
                             + ("pageable-staged", "async-readback")},
                          **{c: "previews_on_gpu" for c in GPU_CODES}},
    # a simulation's walls read back, changed by the host and sent up each step, the whole grid read back every 25th:
    # every pinning its pinned, copying out on a second stream while the steps go on its async_output, keeping the
    # walls on the GPU (the boundary model a kernel) its boundary_on_gpu; its managed mode was not timed
    "halo_stencil": {KEEP: "as_written", "pageable": "as_written", "pinned": "pinned", "write-combined": "pinned",
                     "pageable-registered": "pinned", "pageable-staged": "pinned", "preallocated-pinned": "pinned",
                     **{c: "async_output" for c in PIPELINED_CODES + ("async-readback",)},
                     **{c: "boundary_on_gpu" for c in GPU_CODES}},
    # a graph's features gathered on the host for each step's sampled nodes and uploaded: every pinning its
    # pinned_gather (two pinned buffer sets, index_select into them), uploading the next batch while this one computes
    # its prefetch_thread (a thread and a side stream), keeping the features on the GPU its features_on_gpu
    "graph_sampling": {**_pinned_or_gpu("pinned_gather", "features_on_gpu", "pageable-staged"),
                       **{c: "prefetch_thread" for c in PIPELINED_CODES}},
    # windows of a series on the host collated by a DataLoader each step: every pinning, and uploading ahead, its
    # pinned_loader (the loader's pin thread runs ahead, as shuffled_epochs'), a pinned loader with workers (what
    # dataloader-pinned's words ask) its workers, keeping the series on the GPU (windows gathered there) its
    # series_on_gpu
    "sliding_windows": {**_pinned_or_gpu("pinned_loader", "series_on_gpu", "dataloader-pin-memory", "pageable-staged",
                                         "pinned-pipelined", "side-stream"), "dataloader-pinned": "workers"},
    # log-mel features made on the host from waveforms each step and uploaded: every pinning its pinned_features,
    # keeping the waveforms on the GPU (features made there) its waveforms_on_gpu; making the features on the GPU from
    # uploaded waveforms (gpu_features) host-ops-on-gpu's; it has no side stream: those codes unmeasured
    "audio_features": {**_pinned_or_gpu("pinned_features", "waveforms_on_gpu", "pageable-staged"),
                       "host-ops-on-gpu": "gpu_features"},
    # an image's tiles copied up from fresh contiguous copies and back into fresh arrays: pinning its pinned (two
    # reused pinned tiles), staging or pipelining its pinned_async (double-buffered on two streams), registering the
    # images in place its registered (pitched copies straight from them), keeping the image on the GPU its resident
    "pycuda_tiles": {KEEP: "as_written", "pageable": "as_written", "pinned": "pinned", "write-combined": "pinned",
                     "pageable-staged": "pinned_async", "pinned-pipelined": "pinned_async",
                     "pageable-registered": "registered", **{c: "resident" for c in GPU_CODES}},
    # batches cut from a pandas DataFrame each step (iloc, .values, torch.tensor): every pinning, and the loader's or
    # a side stream's uploading ahead, its pinned_once (converted once, pinned, gathered into two pinned buffers),
    # keeping the data on the GPU its on_gpu; converting once without pinning (numpy_once) is a mode no code names
    "tabular_pandas": _pinned_or_gpu("pinned_once", "on_gpu", "pageable-staged", "pinned-pipelined", "side-stream",
                                     "dataloader-pinned", "dataloader-pin-memory"),
    # a DQN's minibatches gathered from a numpy replay buffer on the host each step and uploaded field by field: every
    # pinning its pinned_staging (np.take into pinned staging tensors), pinning the buffer once its buffer_pinned,
    # uploading the next minibatch while this step computes its side_stream_prefetch, keeping the buffer on the GPU
    # (rows gathered there) its buffer_on_gpu
    "replay_buffer": {**_pinned_or_gpu("pinned_staging", "buffer_on_gpu", "pageable-staged"),
                      **{c: "buffer_pinned" for c in ("pin-once", "dataset-pinned-once", "offload-pinned")},
                      **{c: "side_stream_prefetch" for c in PIPELINED_CODES}},
    # a memory bank of negatives on the host: rows gathered up and the step's keys written back each step: every
    # pinning, and reading back into pinned memory, its pinned_staging (index_select into a pinned buffer, keys through
    # a pinned one), pinning the bank once its pinned_nonblocking, writing back on a side stream while the next step
    # computes its side_stream, keeping the bank on the GPU its bank_on_gpu
    "memory_bank": {**_pinned_or_gpu("pinned_staging", "bank_on_gpu", "pageable-staged"),
                    **{c: "pinned_nonblocking" for c in ("pin-once", "dataset-pinned-once", "offload-pinned")},
                    **{c: "side_stream" for c in PIPELINED_CODES + ("async-readback",)}},
    # point clouds of different sizes collated as a list of tensors, each uploaded on its own: every pinning, packing
    # the batch into one upload, and a pinned loader uploading ahead its concat_pinned (collated into one tensor with
    # offsets, pin_memory=True, non_blocking), a pinned loader with workers (what dataloader-pinned's words ask) its
    # workers, keeping the dataset on the GPU (points gathered there) its dataset_on_gpu; padding (padded) is a mode
    # no code names
    "point_clouds": {**_pinned_or_gpu("concat_pinned", "dataset_on_gpu", "pageable-staged", "packed-copy",
                                      "dataloader-pin-memory", "pinned-pipelined", "side-stream"),
                     "dataloader-pinned": "workers"},
    # a recommendation model's batches of id bags collated from Python lists by a DataLoader: every pinning, and the
    # pinned loader uploading ahead, its pinned_loader (pin_memory=True, non_blocking), a pinned loader with workers
    # (what dataloader-pinned's words ask) its workers, packing a step's tensors into one upload its packed, keeping
    # the dataset on the GPU (bags gathered there) its dataset_on_gpu, not waiting on the loss each step its no_item
    "sparse_features": {**_pinned_or_gpu("pinned_loader", "dataset_on_gpu", "pageable-staged", "dataloader-pin-memory",
                                         "pinned-pipelined", "side-stream"),
                        "dataloader-pinned": "workers", "packed-copy": "packed", "async-readback": "no_item"},
    # detection outputs read back frame by frame and post-processed in numpy: every pinning, and reading back without
    # waiting, its pinned_io (pinned input and outputs, non_blocking, events), uploading ahead its side_stream, one
    # read-back a batch (packing the frames' copies) its batch_readback, the host's post-processing done on the GPU
    # its gpu_nms; keeping data on the GPU names no mode (each batch is new frames); gpu_filter is a mode no code names
    "detection_postprocess": {KEEP: "as_written", "pageable": "as_written",
                              **{c: "pinned_io" for c in PINNED_CODES + ("pageable-staged", "async-readback")},
                              **{c: "side_stream" for c in PIPELINED_CODES}, "packed-copy": "batch_readback",
                              **{c: "gpu_nms" for c in ("host-ops-on-gpu", "host-step-on-gpu")}},
    # a Jacobi solver reading its residual's partial sums back each iteration: every pinning its pinned (the same
    # synchronous copy into cudaMallocHost memory), reading back asynchronously, one iteration late, its async_lagged,
    # the kernel writing them into mapped memory its zero_copy; checking only every 50th iteration (check_every) is a
    # mode no code names
    "jacobi_residual": {KEEP: "as_written", "pageable": "as_written",
                        **{c: "pinned" for c in ("pinned", "write-combined", "pageable-registered", "pinned-out",
                                                 "preallocated-pinned", "pageable-staged")},
                        **{c: "async_lagged" for c in ("async-readback", "pinned-pipelined")},
                        "zero-copy": "zero_copy", "mapped": "zero_copy"},
    "pycuda_frames": {KEEP: "as_written", "pageable": "as_written", "pinned": "pinned",
                      "pageable-registered": "pinned", "pageable-staged": "pinned_async",
                      "pinned-pipelined": "pinned_async", "mapped": "mapped", "zero-copy": "mapped"},
}
FRAMEWORK = {"cupy_batches": "cupy", "cupy_readback": "cupy", "cupy_fft_blocks": "cupy", "managed_loop": "cuda",
             "batch_loop": "cuda", "pycuda_frames": "pycuda", "sensor_frames": "cuda", "heat_managed": "cuda",
             "pycuda_batches": "pycuda", "halo_stencil": "cuda", "pycuda_tiles": "pycuda",
             "jacobi_residual": "cuda"}  # else pytorch
# words that name another framework's API: a change naming one is not written in this program's idiom
FOREIGN = {
    "pytorch": ("pycuda", "pagelocked_empty", "memcpy_htod", "memcpy_dtoh", "cuda-bindings", "cuMemHostRegister",
                "cudaHostAlloc", "cudaMallocHost", "cudaHostRegister", "cudaMemcpy", "cudaMemPrefetchAsync", "cupy",
                "malloc'd"),
    "cupy": ("pycuda", "pagelocked_empty", "memcpy_htod", "cuda-bindings", "cuMemHostRegister", "cudaHostAlloc",
             "cudaMallocHost", "torch", "pin_memory()"),
    "cuda": ("pycuda", "pagelocked_empty", "cuda-bindings", "numpy", "torch", "cupy"),
    # cuda-bindings' calls (cuMemHostRegister, ...) are what pycuda lacks: a pycuda program's own
    "pycuda": ("torch", "pin_memory()", "cupy", "cudaHostAlloc", "cudaMallocHost", "cudaHostRegister", "cudaMemcpy",
               "cudaMemPrefetchAsync", "cudaMalloc'd"),
}
# a change that copies back only the part of a buffer the host reads is applied by the mode's "_window" variant
# where the program has one (managed_loop's registered_window)
PART_BACK = "only what the host reads"
PART_SUFFIX = "_window"


def medians(timings: dict, key: str) -> dict:
    """mode -> median seconds (modes with at least one run)."""
    return {m: statistics.median(v[key]) for m, v in timings["modes"].items() if v.get(key)}


def loop_advice(advice: dict) -> dict | None:
    return next((a for a in advice.get("advice", []) if a.get("flow") == "loop"), None)


def advised_key(advice: dict) -> tuple[str, str]:
    """(the key looked up in MODES, the change's words): an idiom code where umprof gives one, else its
    strategy; KEEP where it advises no change."""
    a = loop_advice(advice)
    if a is None or (a.get("saving_s") or 0) <= 0 or (not a.get("idiom") and a.get("strategy") in (
            None, advice.get("strategy_now"))):
        return KEEP, (a or {}).get("change", "")
    return a.get("idiom") or a["strategy"], a.get("change", "")


def idiom_of(program: str, change: str) -> str:
    """'own' where the change names no other framework's API, else 'foreign: WORD'."""
    if not change:
        return "-"
    # PyTorch's own binding of the runtime (torch.cuda.cudart().cudaHostRegister) is its idiom, not a foreign API
    said = change.lower().replace("torch.cuda.cudart().cudahostregister", "").replace("cudahostunregister", "")
    hit = [w for w in FOREIGN[FRAMEWORK.get(program, "pytorch")] if w.lower() in said]
    return f"foreign: {hit[0]}" if hit else "own"


def judge_one(program: str, tracer: str, timings: dict, advice: dict | None, key: str, whole: bool = True) -> dict:
    """One advice judged on ``key`` (loop_s or wall_s); ``whole``: its trace holds the whole loop (not shortened)."""
    t = medians(timings, key)
    base = t.get("as_written")
    best_mode = min(t, key=t.get) if t else None
    row = {"program": program, "tracer": tracer, "as_written_s": base, "best_mode": best_mode,
           "best_s": t.get(best_mode), "advised": None, "mode": None, "mode_s": None, "verdict": "no advice",
           "captured": None, "idiom": "-", "predicted_saving_s": None, "measured_saving_s": None, "saving_error": None}
    if advice is None:
        return row
    k, change = advised_key(advice)
    mode = MODES.get(program, {}).get(k)
    if mode and PART_BACK in change and mode + PART_SUFFIX in timings["modes"]:
        mode += PART_SUFFIX
    row.update(advised=k, mode=mode, idiom=idiom_of(program, change) if k != KEEP else "-")
    if mode is None or mode not in t or base is None:
        row["verdict"] = "unmeasured"
        return row
    row["mode_s"] = t[mode]
    if k != KEEP:
        row.update(_savings(advice, base, t[mode], whole))
    ratio = t[mode] / base
    row["verdict"] = "faster" if ratio < 1 - WITHIN else "slower" if ratio > 1 + WITHIN else "within 5%"
    available = base - t[best_mode]
    if available > WITHIN * base:
        row["captured"] = round((base - t[mode]) / available, 3)
    return row


def _savings(advice: dict, base: float, mode_s: float, whole: bool) -> dict:
    """A change's saving in seconds as umprof predicted it and as measured, and the prediction's error
    where a saving was measured (more than WITHIN of as_written) on a trace of the whole loop (``whole``: a shortened
    trace's prediction is of its part)."""
    a = loop_advice(advice) or {}
    if not a.get("saving_s"):
        return {}
    predicted, measured = a["saving_s"], base - mode_s
    error = predicted / measured - 1 if whole and measured > WITHIN * base else None
    return {"predicted_saving_s": round(predicted, 4), "measured_saving_s": round(measured, 4),
            "saving_error": None if error is None else round(error, 3)}


def read_advice(path: Path) -> dict | None:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and "advice" in doc else None


def judge(timings_dir: Path, advice_dir: Path, key: str = "loop_s", shortened=()) -> list[dict]:
    """Every program's advice judged; ``shortened``: the NAME.TRACER of the traces that hold part of the loop."""
    rows = []
    for tf in sorted(Path(timings_dir).glob("*.json")):
        timings = json.loads(tf.read_text())
        if not isinstance(timings, dict) or "modes" not in timings:
            continue  # not a program's timings (the judge's own output, say)
        program = timings["program"]
        # NAME.TRACER.json, or NAME-rankN.TRACER.json for a job's ranks
        advices = sorted([*Path(advice_dir).glob(f"{program}.*.json"), *Path(advice_dir).glob(f"{program}-rank*.json")])
        for af in advices or [None]:
            tracer = af.name[len(program) + 1:-len(".json")] if af else "-"
            rows.append(judge_one(program, tracer, timings, read_advice(af) if af else None, key,
                                  f"{program}.{tracer}" not in shortened))
    return rows


def fmt(v, spec=".3f") -> str:
    return "-" if v is None else format(v, spec)


def table(rows: list[dict]) -> str:
    out = [f"{'program':17s} {'tracer':11s} {'advised':20s} {'-> mode':20s} {'as_written':>10s} {'mode s':>7s} "
           f"{'best (mode)':>28s} {'verdict':11s} {'captured':>8s} {'saving s: predicted/measured':>28s}  idiom"]
    for r in rows:
        best = f"{fmt(r['best_s'])} ({r['best_mode']})"
        out.append(f"{r['program']:17s} {r['tracer']:11s} {str(r['advised']):20s} {str(r['mode']):20s} "
                   f"{fmt(r['as_written_s']):>10s} {fmt(r['mode_s']):>7s} {best:>28s} {r['verdict']:11s} "
                   f"{fmt(r['captured'], '.0%') if r['captured'] is not None else '-':>8s} {_saving_words(r):>28s}  "
                   f"{r['idiom']}")
    return "\n".join(out)


def _saving_words(r: dict) -> str:
    if r.get("predicted_saving_s") is None:
        return "-"
    return f"{r['predicted_saving_s']:.3f}/{r['measured_saving_s']:.3f}" + (
        f" ({r['saving_error']:+.0%})" if r.get("saving_error") is not None else "")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("timings", type=Path)
    p.add_argument("advice", type=Path)
    p.add_argument("--json", type=Path)
    p.add_argument("--shortened", type=Path, help="tests/fixtures/traces/torch/shortened.json: the shortened traces")
    p.add_argument("--gpu", default="h100", help="the GPU prefix of the fixtures judged (h100, h200)")
    p.add_argument("--time", choices=("loop", "wall"), default="loop",
                   help="the loop's own time (default) or the process's wall time")
    a = p.parse_args()
    for d in (a.timings, a.advice):
        if not d.is_dir():
            print(f"judge.py: {d}: expected a folder, got {'a file' if d.exists() else 'nothing'}", file=sys.stderr)
            return 2
    shortened = json.loads(a.shortened.read_text()).get(a.gpu, {}) if a.shortened else {}
    rows = judge(a.timings, a.advice, f"{a.time}_s", shortened)
    print(table(rows))
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
