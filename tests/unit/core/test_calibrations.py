"""Calibrations on disk: shipped, cached, quick ones completed by their model's shipped one, and the
one-line refusals (another GPU, an older layout, an unfinished one, an unwritable cache)."""

import json

import pytest
from click.testing import CliRunner

from tests.unit.data import RESULTS, SHIPPED
from umprof import api
from umprof.cli import cli
from umprof.core import calibrations as store
from umprof.core.errors import UsageError
from umprof.core.results import ResultSet

H100 = "NVIDIA H100 80GB HBM3"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(store.ENV_CACHE, str(tmp_path / "cache"))
    return tmp_path / "cache" / "calibrations"


def test_the_shipped_calibrations_are_listed_and_found_by_name(cache):
    names = {c.gpu for c in store.shipped()}
    assert names == {"NVIDIA H200", H100}
    assert store.shipped_for("h100").gpu == H100 and store.shipped_for("NVIDIA H200").gpu == "NVIDIA H200"
    with pytest.raises(UsageError, match="'A100' matches no shipped calibration.*NVIDIA H200"):
        store.shipped_for("A100")
    with pytest.raises(UsageError, match="matches several"):
        store.shipped_for("H")
    r = CliRunner().invoke(cli, ["calibrations", "--format", "json"])
    assert r.exit_code == 0 and {d["gpu"] for d in json.loads(r.stdout)} == names


def test_recommend_answers_offline_for_a_shipped_gpu(cache):
    for gpu, name in (("H200", "NVIDIA H200"), ("H100", H100)):
        r = CliRunner().invoke(cli, ["recommend", "--gpu", gpu, "--bytes", "256MiB", "--host-writes", "0.1",
                                     "--iterations", "100", "--json"])
        assert r.exit_code == 0, r.output
        doc = json.loads(r.stdout)
        assert doc["device"] == name and "shipped calibration" in doc["calibration"]
        assert doc["recommendations"][0]["ranking"][0]["whole_s"] > 0
    r = CliRunner().invoke(cli, ["recommend", "--gpu", "V100", "--bytes", "1MiB"])
    assert r.exit_code == 2 and "NVIDIA H200" in r.output and "Traceback" not in r.output


def test_without_a_gpu_or_a_calibration_recommend_says_what_to_do(cache, monkeypatch):
    monkeypatch.setenv("UMPROF_NO_GPU", "1")
    r = CliRunner().invoke(cli, ["recommend", "--bytes", "1MiB"])
    assert r.exit_code == 3 and "--gpu NAME" in r.output and "NVIDIA H200" in r.output


def test_a_cached_calibration_answers_before_the_shipped_one(cache):
    cache.mkdir(parents=True)
    mine = store.cache_path(H100, 85017493504, "580.1", "here", "full")
    rs = ResultSet.load(SHIPPED / "nvidia-h100-80gb-hbm3.parquet")
    rs.meta["host"], rs.meta["driver_version"] = "here", "580.1"
    rs.save(mine)
    assert store.for_gpu(H100, 85017493504, "580.1", "here").path == mine
    assert store.for_gpu("NVIDIA H200", None).origin == "shipped"
    assert [c.origin for c in api.calibrations()] == ["shipped", "shipped", "cached"]


def test_a_quick_calibration_is_completed_by_its_model_s_shipped_one():
    quick = RESULTS / "calibration" / "nvidia-h100-calibration-quick-c.parquet"
    cf = store.describe(quick)
    assert cf.profile == "quick" and cf.base == "nvidia-h100-80gb-hbm3.parquet" and cf.complete
    cal = api.load_calibration(quick)
    scenarios = set(cal.ok["base_scenario"]) | set(cal.setup_rows["base_scenario"])
    assert {"calibration-loop-sizes", "calibration-loop-resident", "calibration-loop-patterns-large",
            "calibration-loop-setup"} <= scenarios  # its own and its base's
    own = cal.ok[cal.ok["base_scenario"] == "calibration-loop-sizes"]
    assert set(own["axis.bytes"].astype(int)) == {16 * 2**20, 256 * 2**20}  # the quick one's, not mixed with the base's


def _with_header(src, dst, **changes):
    rs = ResultSet.load(src)
    rs.save(dst)
    import pyarrow.parquet as pq

    table = pq.read_table(dst)
    header = json.loads(table.schema.metadata[b"umprof"])
    for k, v in changes.items():
        if k == "schema_version":
            header[k] = v
        else:
            header["meta"].setdefault("calibration", {})[k] = v
    md = {**table.schema.metadata, b"umprof": json.dumps(header).encode()}
    pq.write_table(table.replace_schema_metadata(md), dst)
    return dst


def test_bad_calibration_files_are_one_line(tmp_path, cache):
    src = SHIPPED / "nvidia-h200.parquet"
    old = _with_header(src, tmp_path / "old.parquet", schema_version=3)
    cut = _with_header(src, tmp_path / "cut.parquet", complete=False)
    for path, message in ((old, "older than this umprof's"), (cut, "unfinished calibration")):
        r = CliRunner().invoke(cli, ["recommend", "--from", str(path), "--bytes", "1MiB"])
        assert r.exit_code == 2 and message in r.output and str(path) in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(cli, ["recommend", "--from", str(src), "--gpu", "H100", "--bytes", "1MiB"])
    assert r.exit_code == 2 and "a calibration of NVIDIA H200, not of H100" in r.output
    r = CliRunner().invoke(cli, ["recommend", "--from", str(src), "--gpu", "H200", "--bytes", "1MiB"])
    assert r.exit_code == 0, r.output


def test_an_unwritable_cache_is_one_line(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(store.ENV_CACHE, str(blocker))
    with pytest.raises(UsageError, match="not writable.*UMPROF_CACHE_DIR"):
        store.writable_cache()


def test_the_calibration_s_time_is_estimated_from_the_shipped_one_s_cases():
    full = api.calibration_estimate("full", H100)
    quick = api.calibration_estimate("quick", H100)
    # measured: 290-315 s (1000 cases) and 50-53 s before calibration-loop-setup-malloc (about 20 s in full) and
    # calibration-loop-setup-stores (72-80 s alone on each GPU, 2026-11-26; its quick part at two sizes)
    assert 200 < full < 420 and 30 < quick < 100


def test_a_calibration_saved_as_csv_or_json_describes_itself(tmp_path):
    rs = ResultSet.load(SHIPPED / "nvidia-h200.parquet")
    for suffix in (".csv", ".json"):
        path = tmp_path / f"cal{suffix}"
        rs.save(path)
        cf = store.describe(path)
        assert cf.gpu == "NVIDIA H200" and cf.schema == 4 and cf.complete
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(UsageError, match="not an umprof result"):
        store.describe(tmp_path / "bad.json")


def test_a_shipped_calibration_of_two_runs_keeps_them_apart():
    """The H100's shipped calibration pools two runs in one file (column ``run``), two runs of one
    scenario measured alone on two more (calibration-loop-copies, added after them) and the staged plan of three
    more (with their reference rows, kept out of pageable memory's own figures): they stay apart when it is
    loaded alone, beside another file, or as a quick calibration's base, whose own rows are a run of
    their own; the time estimate reads the first run's cases (this release's)."""
    from umprof.model.calibration import RUN

    path = SHIPPED / "nvidia-h100-80gb-hbm3.parquet"
    cf = store.describe(path, "shipped")
    assert len(cf.runs) == 12 and "12 runs pooled" in cf.summary()
    cal = api.load_calibration(path)
    # runs 4-6 bring the staged plan's rows (0.5.0's ring, then 0.6.0's twice) and pageable memory's as their
    # reference alone
    assert sorted(cal.ok[RUN].unique()) == [0, 1, 4, 5, 6] and set(cal.parts_rows[RUN]) == {2, 3}
    for run in (4, 5, 6):
        assert set(cal.ok[cal.ok[RUN] == run]["axis.strategy"]) == {"pageable-staged"}
    # runs 7, 8, 10 and 11: the setup of malloc'd pages, which only the setup steps of a C program's workload read;
    # its free is the last two runs' alone (their free gives the pages back; runs 7 and 8 left them)
    malloc = cal.setup_rows[cal.setup_rows["base_scenario"] == "calibration-loop-setup-malloc"]
    assert set(malloc[RUN]) == {7, 8, 10, 11} and not (cal.ok[RUN] >= 7).any()
    assert set(malloc.loc[malloc["phase"] == "free", RUN]) == {10, 11}
    assert set(malloc.loc[malloc["phase"] == "alloc", RUN]) == {7, 8, 10, 11}
    assert cf.runs[7].endswith("(its free rows left out: run 10 measured them anew)")
    # run 9: the first write stored word by word and copied in, which only a workload first written by stores reads
    stores = cal.setup_rows[cal.setup_rows["base_scenario"] == "calibration-loop-setup-stores"]
    assert set(stores[RUN]) == {9} and set(stores["axis.first_write"]) == {"copy", "stores"}
    assert set(cal.reference_rows[RUN]) == {4, 5, 6} and set(cal.reference_rows["axis.strategy"]) == {"pageable"}
    assert "pageable-staged" not in set(cal.ok[cal.ok[RUN] < 4]["axis.strategy"])
    both = api.load_calibration([path, SHIPPED / "nvidia-h200.parquet"])  # the H200's: 10 runs, 12-21 here
    assert sorted(both.ok[RUN].unique()) == [0, 1, 4, 5, 6, 12, 14, 15, 16]
    assert set(both.parts_rows[RUN]) == {2, 3, 12, 13} and set(both.reference_rows[RUN]) == {4, 5, 6, 15, 16}
    quick = api.load_calibration(RESULTS / "calibration" / "nvidia-h100-calibration-quick-c.parquet")
    sizes = quick.ok[quick.ok["base_scenario"] == "calibration-loop-sizes"]
    assert set(sizes[RUN]) == {12} and {0, 1} <= set(quick.ok[RUN])
    # 265 s measured on the H200, 2026-11-25, about 20 s more since calibration-loop-setup-malloc and 72-80 s
    # more since calibration-loop-setup-stores (measured alone, each GPU, 2026-11-26)
    assert 200 < api.calibration_estimate("full", H100) < 420
    assert 200 < api.calibration_estimate("full", "NVIDIA H200") < 420

