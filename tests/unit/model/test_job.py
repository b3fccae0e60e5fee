"""A job's ranks read as one answer (umprof.model.job), on records of real traces advised (the fixtures), copied
as the ranks of a job would be: other hosts, ranks and GPUs, one rank's copies slower."""

import copy

import pytest

from umprof import api
from umprof.core.results import ResultSet
from umprof.model import job
from umprof.model.shared_links import ConcurrentFigures, concurrent_figures
from tests.unit.data import RESULTS, TRACES, readable
from tests.unit.nsight.test_trace_db import fixture


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("job")
    return {name: api._advise_rank(str(fixture(n, tmp, gpu=g))) for name, (n, g) in
            {"stream": ("stream_loop", "h100"), "pycuda": ("pycuda_loop", "h100"),
             "h200": ("stream_loop", "h200")}.items()}


def rank(record, i, host="node0", device=None, collectives=0):
    r = copy.deepcopy(record)
    r.update(path=f"job/rank{i}.sqlite", rank=i, host=host, collectives=collectives)
    r["applications"][0]["device"] = i % 8 if device is None else device
    return r


def test_records_are_advised_and_small(records):
    r = records["stream"]
    assert r["error"] is None and r["applications"][0]["gpu"] == "NVIDIA H100 80GB HBM3"
    assert r["rank_from"] == "" and r["rank"] is None  # a trimmed fixture names neither host nor rank


def test_identical_ranks_read_as_one_group_per_behaviour(records):
    ranks = [rank(records["stream"], i, host=f"node{i // 8}") for i in range(16)]
    ranks += [rank(records["pycuda"], 16 + i, host="node2") for i in range(4)]
    doc = job.job_answer(ranks)
    groups = doc["job"]["groups"]
    assert [g["count"] for g in groups] == [16, 4]
    assert groups[0]["hosts"] == {"node0": 8, "node1": 8}
    assert groups[0]["advice"] == records["stream"]["applications"][0]["advice"]
    assert [h["host"] for h in doc["job"]["hosts"]] == ["node0", "node1", "node2"]
    assert doc["job"]["totals"]["advised"] == 20 and len(doc["ranks"]) == 20


def test_sizes_within_a_step_group_together_and_twice_the_size_does_not(records):
    near, far = rank(records["stream"], 1), rank(records["stream"], 2)
    for f in near["applications"][0]["flows"]:
        f["bytes"] *= 1.05
    for f in far["applications"][0]["flows"]:
        f["bytes"] *= 2
    base = job.signature(records["stream"]["applications"][0])
    assert job.signature(near["applications"][0]) == base != job.signature(far["applications"][0])


def test_a_rank_whose_copies_are_slower_is_a_straggler_by_its_excess(records):
    ranks = [rank(records["stream"], i) for i in range(8)]
    slow = ranks[5]["applications"][0]["totals"]
    slow["copy_s"] *= 1.5
    s = job.job_answer(ranks)["job"]["stragglers"]
    assert s["count"] == 1 and s["slowest"][0]["rank"] == "rank 5"
    assert s["slowest"][0]["extra_share"] == pytest.approx(0.5)


def test_ranks_that_synchronise_save_what_the_slowest_rank_saves(records):
    ranks = [rank(records["stream"], i, collectives=10) for i in range(2)] + [rank(records["pycuda"], 2, collectives=10)]
    ranks[1]["applications"][0]["loop"]["measured_s"] *= 1.2  # the slowest rank, its saving unchanged
    rows = {r["path"]: job.rank_row(r, None) for r in ranks}
    s = job.job_saving(rows)
    assert s["synchronised"] and s["slowest_now"] == "rank 1"
    assert s["saving_s"] == pytest.approx(rows["job/rank1.sqlite"]["saving_s"])
    assert s["saving_s"] < s["rank_seconds_saved"]


def test_ranks_on_one_gpu_share_its_link(records):
    ranks = [rank(records["stream"], i, device=0) for i in range(2)]
    shares, limits = job.shared_links(ranks, ConcurrentFigures())
    app = ranks[0]["applications"][0]
    share = shares["job/rank0.sqlite"]
    assert not limits and share["ranks_on_link"] == 2
    assert share["shared_bytes_per_s"]["h2d"] == pytest.approx(app["link_bytes_per_s"] / 2)
    need = job.loop_bytes(app)
    assert share["least_s"] == pytest.approx(max(need[d] / (app["link_bytes_per_s"] / 2) for d in ("h2d", "d2h")))


def test_gpus_of_one_host_without_a_concurrent_figure_say_so(records):
    ranks = [rank(records["stream"], i, host=f"node{i // 8}") for i in range(16)]
    _, limits = job.shared_links(ranks, ConcurrentFigures())
    assert [x["code"] for x in limits] == ["no-concurrent-figure"]  # one line for the hosts alike
    assert "2 host(s) (node0, node1): 8 NVIDIA H100" in limits[0]["text"]


def test_the_host_links_measurement_prices_two_gpus_of_its_model(records):
    figures = concurrent_figures([("h200-x2", ResultSet.load(RESULTS / "nvidia-h200-x2-multi-gpu.parquet"))])
    two = [rank(records["h200"], i) for i in range(2)]
    shares, limits = job.shared_links(two, figures)
    assert not limits
    kept = shares["job/rank0.sqlite"]["kept"]
    assert 0.95 < kept["h2d"] < 1.0 and 0.95 < kept["d2h"] < 1.0  # 2.1% and 1.6% lost sharing the host (H200 x2)
    _, limits = job.shared_links([rank(records["h200"], i) for i in range(4)], figures)
    assert [x["code"] for x in limits] == ["no-concurrent-figure"]  # measured with two GPUs, not four


def test_failed_mixed_gpu_and_mixed_version_ranks_are_named_and_the_others_read(records):
    ranks = [rank(records["stream"], i) for i in range(3)] + [rank(records["h200"], 3)]
    ranks[1]["umprof"] = "0.1.0"
    ranks.append(api._failed_rank("job/rank4.sqlite", ValueError("bad header")))
    doc = job.job_answer(ranks)
    codes = {p["path"]: p["code"] for p in doc["job"]["problems"]}
    assert codes == {"job/rank1.sqlite": "schema-mixed", "job/rank3.sqlite": "gpu-mixed", "job/rank4.sqlite": "rank-failed"}
    assert doc["job"]["totals"]["advised"] == 2 and doc["job"]["totals"]["failed"] == 1
    assert all(p["text"].startswith(p["path"]) for p in doc["job"]["problems"])


def test_the_report_shows_a_timeline_per_host_and_each_group_once(records):
    from umprof.views import html

    ranks = [rank(records["stream"], i, host=f"node{i // 4}") for i in range(8)] + [rank(records["pycuda"], 8, "node1")]
    text = html.build([], ["job"], None, [], job.job_answer(ranks))
    section = text[text.index("<h2 id='job'>"):]
    assert section.count("<img") == 2 and section.count("<h3>group ") == 2
    assert "group 1: 8 rank(s)" in section and "no-concurrent-figure" in section


def test_a_hosts_shared_links_are_summed_up_beside_the_ranks_measured_copies(records):
    ranks = [rank(records["stream"], i, device=0) for i in range(2)]
    (h,) = job.job_answer(ranks)["job"]["shared_links"]
    app = records["stream"]["applications"][0]
    assert h["ranks"] == 2 and h["ranks_on_a_link"] == 2 and h["gpus_at_once"] == 1
    assert h["measured_bytes_per_s"] == job.measured_rates(app)
    assert h["shared_bytes_per_s"]["d2h"] == pytest.approx(app["link_bytes_per_s"] / 2)


def test_the_terminal_reads_each_group_once_with_the_hosts_stragglers_links_and_saving(records):
    from rich.console import Console

    from umprof.views.job import print_job

    ranks = [rank(records["stream"], i, device=i % 2, collectives=4) for i in range(4)]
    ranks[3]["applications"][0]["totals"]["copy_s"] *= 1.3
    console = Console(record=True, width=200)
    print_job(job.job_answer(ranks), console)
    text = console.export_text()
    assert text.count("group 1: 4 ranks (node0 ×4)") == 1 and "group 2" not in text
    assert "rank 3 on node0 (group 1)" in text and "(30%) over" in text
    assert "shared links, node0: 4 ranks copy at once on 2 GPU(s) (up to 2 a link)" in text
    assert "the job's saving" in text and "a step ends with the slowest rank" in text
    assert "no-concurrent-figure" in text


def test_the_terminal_prints_what_the_traces_name_as_it_is_never_as_markup(records):
    from rich.console import Console

    from umprof.views.job import print_job

    ranks = [rank(records["stream"], i, host="node[bold]1", collectives=4) for i in range(2)]
    console = Console(record=True, width=200)
    print_job(job.job_answer(ranks), console)
    text = console.export_text()
    assert "group 1: 2 ranks (node[bold]1 ×2)" in text and "│ node[bold]1 │" in text
    assert "shared links, node[bold]1:" in text and "(node[bold]1): 2 NVIDIA" in text


def test_one_off_small_copies_do_not_split_identical_ranks(records):
    a, b = rank(records["stream"], 0), rank(records["stream"], 1)
    extra = dict(b["applications"][0]["flows"][0], bytes=8, total_bytes=8, count=1, host_kind="pinned", time_s=1e-6)
    b["applications"][0]["flows"].append(extra)  # a scalar read back by one rank only
    assert job.signature(a["applications"][0]) == job.signature(b["applications"][0])


def test_ranks_launched_as_one_job_synchronise_without_collective_kernels(records):
    ranks = [rank(records["stream"], i) for i in range(2)]
    assert not job.job_saving({r["path"]: job.rank_row(r, None) for r in ranks})["synchronised"]
    for r in ranks:
        r["world_size"] = 2  # torchrun's WORLD_SIZE: gloo's all-reduce runs on the host, as no kernel
    s = job.job_saving({r["path"]: job.rank_row(r, None) for r in ranks})
    assert s["synchronised"] and "launched as one job of 2" in s["why"]


def _decompressed(stem: str, folder) -> str:
    """A torch fixture's nsys export by its stem, decompressed into ``folder`` (.sqlite.gz or .sqlite.xz)."""
    import gzip
    import lzma

    base = readable(TRACES / "torch")
    for suffix, opener in ((".sqlite.xz", lzma.open), (".sqlite.gz", gzip.open)):
        if (base / f"{stem}{suffix}").is_file():
            out = folder / f"{stem}.sqlite"
            with opener(base / f"{stem}{suffix}") as f:
                out.write_bytes(f.read())
            return str(out)
    pytest.skip(f"no fixture {stem}")


def test_a_real_two_rank_torchrun_job_reads_as_one_group_on_one_host(tmp_path):
    """Two ranks of one torchrun job (gloo, both on one H100), traced by nsys and by torch.profiler: one host, the
    launcher's world size read from each trace, the job's steps ending with its slowest rank."""

    torch_dir = readable(TRACES / "torch")
    nsys = [_decompressed(f"h100-ddp_train-rank{r}", tmp_path) for r in (0, 1)]
    kineto = [str(torch_dir / f"h100-ddp_train-rank{r}.json.gz") for r in (0, 1)]
    for files in (nsys, kineto):  # each rank advised in this process (the Dask path is tests/unit/cluster's)
        doc = job.job_answer([api._advise_rank(f) for f in files])
        j = doc["job"]
        assert j["totals"]["advised"] == 2 and j["totals"]["failed"] == 0 and j["totals"]["hosts"] == 1, j["totals"]
        # the nsys traces hold both ranks' whole loops and group as one; the torch.profiler ones hold half of each
        # rank's steps, whose advice may differ by rank
        assert len(j["groups"]) == 1 or files is kineto, j["groups"]
        assert sum(len(g["ranks"]) for g in j["groups"]) == 2, j["groups"]
        assert sorted(r["rank"] for r in doc["ranks"]) == [0, 1] and {r["world_size"] for r in doc["ranks"]} == {2}
        assert j["saving"]["synchronised"] and 0 <= j["saving"]["saving_s"] <= j["saving"]["now_s"], j["saving"]


def test_a_jobs_folder_gives_its_traces_and_leaves_other_json_out(tmp_path):
    """A folder of a job's outputs: its traces (an nsys report beside its own export counted once, torch.profiler's
    JSON) are read, a config or results JSON is not."""

    torch_dir = readable(TRACES / "torch")
    (tmp_path / "run" / "rank1").mkdir(parents=True)
    kineto = tmp_path / "run" / "rank1" / "h100-ddp_train-rank1.json.gz"
    kineto.write_bytes((torch_dir / "h100-ddp_train-rank1.json.gz").read_bytes())
    (tmp_path / "run" / "report_0.nsys-rep").write_bytes(b"a report")
    (tmp_path / "run" / "report_0.sqlite").write_bytes(b"its export")
    (tmp_path / "run" / "config.json").write_text('{"lr": 0.1, "world_size": 2}')
    (tmp_path / "run" / "results.json").write_text('[{"step": 1, "loss": 0.5}]')
    assert api.job_traces([tmp_path / "run"]) == [str(tmp_path / "run" / "rank1" / kineto.name),
                                                  str(tmp_path / "run" / "report_0.sqlite")]


def test_a_folder_without_traces_is_one_line_naming_it_and_what_was_expected(tmp_path):
    from umprof.core.errors import UsageError
    from umprof.nsight.trace_db import EXPECTED

    (tmp_path / "config.json").write_text('{"lr": 0.1}')
    with pytest.raises(UsageError) as e:
        api.job_traces([tmp_path])
    assert str(e.value) == (f"{tmp_path}: a folder with no traces in it (1 JSON file(s) in it, none a torch.profiler "
                            f"trace); {EXPECTED}")


def test_ranks_are_labelled_by_what_their_traces_say_not_their_file_names(tmp_path):
    """torchrun's ranks saved under names whose numbers mislead: each labelled by its trace's own rank (the nsys
    export's environment, torch.profiler's distributedInfo)."""

    torch_dir = readable(TRACES / "torch")
    swapped = tmp_path / "report_0.sqlite"
    swapped.write_bytes(open(_decompressed("h100-ddp_train-rank1", tmp_path), "rb").read())
    kineto = tmp_path / "trace_5.json.gz"
    kineto.write_bytes((torch_dir / "h100-ddp_train-rank0.json.gz").read_bytes())
    labels = {r["path"]: (r["rank"], r["rank_from"], r["job"]["label"])
              for r in job.job_answer([api._advise_rank(str(f)) for f in (swapped, kineto)])["ranks"]}
    assert labels == {str(swapped): (1, "environment", "rank 1"), str(kineto): (0, "trace", "rank 0")}
