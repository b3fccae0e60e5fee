"""The torch.profiler (Kineto) reader on real traces (tests/fixtures/traces/kineto, from HTA's test data): its
copies, kernels, calls and their joins, ranges, GPUs and ranks; totals against the JSON's own events."""

import gzip

import orjson
import pandas as pd
import pytest

from tests.unit.data import TRACES, readable
from umprof.core.errors import UsageError
from umprof.model.application import applications
from umprof.nsight.kineto import is_kineto_trace, read_kineto
from umprof.nsight.trace_db import folder_traces, open_trace

KINETO = readable(TRACES / "kineto")


def raw_events(name: str) -> list:
    data = (KINETO / name).read_bytes()
    return orjson.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)["traceEvents"]


def of_cat(events: list, *cats: str) -> list:
    return [e for e in events if e.get("ph") == "X" and e.get("cat") in cats]


@pytest.mark.parametrize("name", ["a100-alexnet.json.gz", "a100-trainer-rank0.json.gz"])
def test_totals_equal_the_traces_own_copy_bytes_and_kernel_times(name):
    events = raw_events(name)
    t = read_kineto(KINETO / name)
    copies, kernels = of_cat(events, "gpu_memcpy"), of_cat(events, "kernel")
    assert len(t.copies) == len(copies) and int(t.copies["bytes"].sum()) == sum(e["args"]["bytes"] for e in copies)
    assert len(t.kernels) == len(kernels)
    assert int((t.kernels["end"] - t.kernels["start"]).sum()) == sum(round(e["dur"] * 1000) for e in kernels)
    assert len(t.memsets) == len(of_cat(events, "gpu_memset"))
    app = applications(t)[0]
    h2d = sum(e["args"]["bytes"] for e in copies if e["name"].startswith("Memcpy HtoD"))
    d2h = sum(e["args"]["bytes"] for e in copies if e["name"].startswith("Memcpy DtoH"))
    assert (app.totals["h2d_bytes"], app.totals["d2h_bytes"]) == (h2d, d2h)
    assert app.totals["kernel_s"] == pytest.approx(sum(e["dur"] for e in kernels) / 1e6)


def test_copies_carry_direction_host_memory_stream_and_the_call_that_made_them():
    t = read_kineto(KINETO / "a100-trainer-rank0.json.gz")
    kinds = t.copies.groupby(["kind", "src", "dst"]).size().to_dict()
    assert kinds[("h2d", "pageable", "device")] and kinds[("h2d", "pinned", "device")]
    assert kinds[("d2h", "device", "pageable")] and kinds[("d2d", "device", "device")]
    assert set(t.copies["stream"]) == {7, 25, 27}
    joined = t.copies.merge(t.calls, on="correlation", suffixes=("", "_call"))
    assert len(joined) == len(t.copies) and set(joined["name"]) == {"cudaMemcpyAsync"}
    assert (joined["start_call"] <= joined["start"]).all()  # a copy runs after the call that queued it


def test_gpu_events_belong_to_the_traces_process_and_its_device():
    t = read_kineto(KINETO / "a100-alexnet.json.gz")
    assert set(t.copies["pid"]) == set(t.kernels["pid"]) == set(t.calls["pid"]) == {2869224}
    assert set(t.kernels["device"]) == {0}
    assert t.processes.to_dict("records") == [{"pid": 2869224, "name": "python3.10", "program": "python3.10"}]
    assert t.gpus.to_dict("records")[0] == {"device": 0, "name": "NVIDIA A100-PG509-200", "memory_bytes": 42297524224}
    assert (t.source, t.rank, t.world_size) == ("kineto", 0, None)
    app = applications(t)[0]
    assert (app.pid, app.name, app.gpu, app.strategy) == (2869224, "python3.10", "NVIDIA A100-PG509-200", "pageable")


def test_ranges_are_cpu_ops_and_annotations_with_their_kind():
    t = read_kineto(KINETO / "a100-alexnet.json.gz")
    assert set(t.ranges["kind"]) == {"cpu_op", "user_annotation"}
    assert {"aten::to", "aten::copy_"} <= set(t.ranges["name"])
    assert (t.ranges["end"] > t.ranges["start"]).all()


def test_kernels_launched_by_driver_calls_and_the_old_category_names_join():
    driver = read_kineto(KINETO / "a100-triton-driver.json.gz")
    assert driver.kernels.merge(driver.calls, on="correlation")["name_y"].tolist() == ["cuLaunchKernel"]
    old = read_kineto(KINETO / "torch-1.x-categories.json.gz")  # Kernel, Runtime
    assert len(old.kernels) == 4
    assert set(old.kernels.merge(old.calls, on="correlation")["name_y"]) == {"cudaLaunchKernel"}


def test_a_folder_of_ranks_reads_one_table_set_per_rank():
    files = folder_traces(KINETO / "ranks")
    assert [f.name for f in files] == ["rank-0.pt.trace.json.gz", "rank-1.pt.trace.json.gz"]
    tables = [read_kineto(f) for f in files]
    assert [(t.rank, t.world_size) for t in tables] == [(0, 128), (1, 128)]
    assert [t.processes["pid"].iloc[0] for t in tables] == [4037, 4045]


def test_a_trace_is_told_from_other_json_by_its_first_bytes(tmp_path):
    for name in ("backward-thread.json", "a100-alexnet.json.gz", "torch-1.x-categories.json.gz", "cpu-only.json.gz"):
        assert is_kineto_trace(KINETO / name), name
    (tmp_path / "events.json").write_bytes(b'[{"name": "x", "ph": "X", "ts": 1, "dur": 2}]')  # a bare list of events
    (tmp_path / "cut.json.gz").write_bytes(gzip.compress(b'{"schemaVersion": 1, "traceEvents": [')[:12])
    assert is_kineto_trace(tmp_path / "events.json") and is_kineto_trace(tmp_path / "cut.json.gz")  # read says why
    (tmp_path / "config.json").write_text('{"lr": 0.1, "batch_size": 64}')
    (tmp_path / "results.json.gz").write_bytes(gzip.compress(b'[{"loss": 0.5}]'))
    assert not is_kineto_trace(tmp_path / "config.json") and not is_kineto_trace(tmp_path / "results.json.gz")


def test_a_folder_of_traces_leaves_its_other_json_out(tmp_path):
    for name in ("a100-alexnet.json.gz", "backward-thread.json"):
        (tmp_path / name).write_bytes((KINETO / name).read_bytes())
    (tmp_path / "config.json").write_text('{"lr": 0.1}')
    assert [f.name for f in folder_traces(tmp_path)] == ["a100-alexnet.json.gz", "backward-thread.json"]


def test_open_trace_reads_json_and_gzip_by_content(tmp_path):
    plain = open_trace(KINETO / "backward-thread.json")
    assert plain.source == "kineto" and len(plain.kernels) == 1
    renamed = tmp_path / "trace.bin"  # the content decides, not the name
    renamed.write_bytes((KINETO / "a100-alexnet.json.gz").read_bytes())
    assert len(open_trace(renamed).copies) == 16


def test_host_memory_a_trace_does_not_name_is_unknown(tmp_path):
    events = raw_events("mi250-rocm.json.gz")  # ROCm: "Memcpy HtoD (Host -> Device)", no byte count
    for e in of_cat(events, "gpu_memcpy"):
        e["args"]["bytes"] = 4096
    path = tmp_path / "sized.json"
    path.write_bytes(orjson.dumps({"traceEvents": events}))
    t = read_kineto(path)
    assert t.copies[["kind", "src", "dst"]].drop_duplicates().values.tolist() == [["h2d", "unknown", "device"]]


def test_copies_without_a_byte_count_are_left_out_and_said():
    """ROCm's tracer records no bytes for its copies: they cannot be priced, and the trace says so, once."""
    t = read_kineto(KINETO / "mi250-rocm.json.gz")
    assert t.copies.empty and len(t.kernels) == 14
    assert [n for n in t.notes if "byte count" in n] == [
        "2 of its 2 copies carry no byte count (its tracer recorded none): left out of what is priced"]


def test_a_trace_without_cuda_activity_says_how_to_record_it():
    with pytest.raises(UsageError) as e:
        read_kineto(KINETO / "cpu-only.json.gz")
    msg = str(e.value)
    assert "\n" not in msg and "cpu-only.json.gz" in msg and "ProfilerActivity.CUDA" in msg
    assert not read_kineto(KINETO / "cpu-only.json.gz", require_cuda=False).has_cuda


@pytest.mark.parametrize("content, says", [(b'{"traceEvents": [{"ph": "X", "ts": 1', "not valid JSON"),
                                           (b'{"schema": 1}', "not a Chrome trace"),
                                           (gzip.compress(b"{}", mtime=0)[:12], "gzip file that could not be read")],
                         ids=["truncated-json", "not-chrome", "truncated-gzip"])  # ids fixed: xdist's workers must agree
def test_bad_input_is_one_line_naming_the_file(tmp_path, content, says):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(UsageError) as e:
        open_trace(path)
    assert says in str(e.value) and str(path) in str(e.value) and "\n" not in str(e.value)


def test_a_gpu_event_without_correlation_takes_its_flows(tmp_path):
    events = [{"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 5, "tid": 5, "ts": 10, "dur": 2,
               "args": {"correlation": 42}},
              {"ph": "f", "cat": "ac2g", "id": 42, "pid": 0, "tid": 7, "ts": 13, "bp": "e"},
              {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)", "pid": 0, "tid": 7,
               "ts": 13, "dur": 4, "args": {"device": 0, "stream": 7, "bytes": 4096}}]
    path = tmp_path / "t.json"
    path.write_bytes(orjson.dumps({"traceEvents": events}))
    t = read_kineto(path)
    row = t.copies.iloc[0]
    assert (row["correlation"], row["kind"], row["dst"], row["pid"], row["start"], row["end"]) == \
        (42, "d2h", "pinned", 5, 13000, 17000)


def test_a_copy_whose_call_the_trace_left_out_is_read_with_its_range_empty(tmp_path):
    # a trace cut short or sampled (HTA's trace_compare data) keeps copies whose runtime call it dropped: the
    # copy has no thread, and the ranges around the calls it does have are still found
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::copy_", "pid": 5, "tid": 5, "ts": 0, "dur": 50},
              {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 5, "tid": 5, "ts": 10, "dur": 2,
               "args": {"correlation": 1}},
              {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0, "tid": 7,
               "ts": 13, "dur": 4, "args": {"device": 0, "stream": 7, "bytes": 4096, "correlation": 1}},
              {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0, "tid": 7,
               "ts": 30, "dur": 4, "args": {"device": 0, "stream": 7, "bytes": 4096, "correlation": 2}}]
    path = tmp_path / "t.json"
    path.write_bytes(orjson.dumps({"traceEvents": events}))
    copies = applications(read_kineto(path))[0].explicit_copies.sort_values("start")
    assert copies["range"].tolist() == ["aten::copy_", ""]


def test_thread_ids_written_as_text_are_read_as_numbers(tmp_path):
    # Kineto's 2021 traces (TensorBoard's ResNet-50 samples) write "tid": "25738" and the old category names
    calls = [{"ph": "X", "cat": "Runtime", "name": "cudaMemcpyAsync", "pid": 5, "tid": "5", "ts": 10 * i, "dur": 2,
              "args": {"correlation": i}} for i in range(1, 13)]
    copies = [{"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": "stream 7",
               "ts": 10 * i + 3, "dur": 4, "args": {"device": 0, "stream": 7, "bytes": 4096, "correlation": i}}
              for i in range(1, 13)]
    path = tmp_path / "t.json"
    path.write_bytes(orjson.dumps({"traceEvents": calls + copies}))
    t = read_kineto(path)
    assert set(t.calls["tid"]) == {5} and t.copies["stream"].tolist() == [7] * 12
    app = applications(t)[0]
    assert app.loop is not None and app.loop.iterations == 12


def test_calls_on_no_named_thread_are_read_as_one_threads(tmp_path):
    calls = [{"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 5, "tid": "main", "ts": 10 * i,
              "dur": 2, "args": {"correlation": i}} for i in range(1, 13)]
    copies = [{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7,
               "ts": 10 * i + 3, "dur": 4, "args": {"device": 0, "stream": 7, "bytes": 4096, "correlation": i}}
              for i in range(1, 13)]
    path = tmp_path / "t.json"
    path.write_bytes(orjson.dumps({"traceEvents": calls + copies}))
    t = read_kineto(path)
    assert t.calls["tid"].isna().all()
    assert applications(t)[0].loop.iterations == 12


def test_a_device_or_stream_named_instead_of_numbered_is_left_empty(tmp_path):
    events = [{"ph": "X", "cat": "kernel", "name": "k", "pid": "GPU 0", "tid": "stream 7", "ts": 1, "dur": 2,
               "args": {"correlation": 3}},
              {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9, "ts": 0, "dur": 1,
               "args": {"correlation": 3}}]
    path = tmp_path / "t.json"
    path.write_bytes(orjson.dumps({"traceEvents": events}))
    k = read_kineto(path).kernels.iloc[0]
    assert pd.isna(k["device"]) and pd.isna(k["stream"]) and (k["pid"], k["correlation"]) == (9, 3)


TORCH = readable(TRACES / "torch")  # PyTorch programs traced on an H100 (2026-12-06)
TORCH_TRACES = sorted(TORCH.glob("*.json.gz")) if TORCH.is_dir() else []


@pytest.mark.skipif(not TORCH_TRACES, reason="the PyTorch programs' torch.profiler traces are not in this checkout")
@pytest.mark.parametrize("path", TORCH_TRACES, ids=lambda p: p.name)
def test_pytorch_programs_traces_read_whole(path):
    events = orjson.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    t = read_kineto(path)
    copies, kernels = of_cat(events, "gpu_memcpy"), of_cat(events, "kernel")
    assert int(t.copies["bytes"].sum()) == sum(e["args"]["bytes"] for e in copies)
    assert int((t.kernels["end"] - t.kernels["start"]).sum()) == sum(round(e["dur"] * 1000) for e in kernels)
    assert t.copies["correlation"].isin(t.calls["correlation"]).all()  # every copy joined to its call
    gpu = {"h100": "NVIDIA H100 80GB HBM3", "h200": "NVIDIA H200"}[path.name.split("-")[0]]  # the file's prefix
    assert t.gpus["name"].tolist() == [gpu]
