"""recommend, crossovers and compare through the CLI, on committed H200 results."""


import pytest
from click.testing import CliRunner

from tests.unit.data import CAL, CROSS, RESULTS, VERIFY, WORKLOADS, holdout
from umprof.cli import cli
from umprof.core.results import ResultSet


def test_crossovers_cli_writes_plots(tmp_path):
    r = CliRunner().invoke(cli, ["crossovers", str(CROSS), "--pair", "pinned,zero-copy", "-o", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "zero-copy" in r.output and len(list(tmp_path.glob("*.png"))) == 3
    r = CliRunner().invoke(cli, ["crossovers", str(CROSS), "--pair", "pinned"])
    assert r.exit_code == 2 and "option '--pair'" in r.output


def test_compare_cli_on_two_real_runs(tmp_path):
    a, b = holdout("h200", 16, "-b")
    r = CliRunner().invoke(cli, ["compare", str(a), str(b)])
    assert r.exit_code == 0, r.output
    assert "matched:" in r.output
    same = CliRunner().invoke(cli, ["compare", str(b), str(b), "--fail-on-slow"])
    assert same.exit_code == 0 and "0 FAST, 0 SLOW" in same.output
    slow_b = tmp_path / "slow.parquet"
    rs = ResultSet.load(b)
    rs.frame["time_median_s"] = rs.frame["time_median_s"] * 1.5
    rs.save(slow_b)
    r = CliRunner().invoke(cli, ["compare", str(b), str(slow_b), "--fail-on-slow"])
    assert r.exit_code == 1 and "SLOW" in r.output
    r = CliRunner().invoke(cli, ["compare", str(RESULTS / "nvidia-h200-access.parquet"), str(RESULTS / "nvidia-h200-ncu.parquet"),
                                 "--phase", "h2d"])
    assert r.exit_code == 2 and "no case of" in r.output and "Traceback" not in r.output


def test_recommend_cli_from_saved_results():
    r = CliRunner().invoke(cli, ["recommend", "--from", str(CAL), "--bytes", "256MiB", "--reuse", "16"])
    assert r.exit_code == 0, r.output
    assert "is predicted fastest" in r.output and "× best" in r.output
    for mode, held in (([], 15), (["--steady"], 12)):
        r = CliRunner().invoke(cli, ["recommend", "--from", str(CAL), "--workload", str(WORKLOADS / "verify.toml"),
                                     "--measured", str(VERIFY), *mode])
        assert r.exit_code == 0, r.output
        assert r.output.count("verified: top pick") == 16
        summary = r.output.split("recommend --verify (")[-1]
        assert int(summary.split(":")[1].split(" of ")[0]) >= held, summary


def test_recommend_verifies_against_several_runs_by_their_median(tmp_path):
    """--measured twice: each strategy's figure is the median over the files (here a run and the
    same run 1.5× slower: the median of two is their mean, so the errors change, the picks not)."""
    import json

    slow = tmp_path / "slow.parquet"
    rs = ResultSet.load(VERIFY)
    for col in ("wall_s", "wall_steady_s", "wall_setup_s"):
        rs.frame[col] = rs.frame[col] * 1.5
    rs.save(slow)
    args = ["recommend", "--from", str(CAL), "--workload", str(WORKLOADS / "verify.toml"), "--json", "--measured",
            str(VERIFY)]
    one, two = (json.loads(CliRunner().invoke(cli, a).stdout) for a in (args, [*args, "--measured", str(slow)]))
    for a, b in zip(one["recommendations"], two["recommendations"]):
        va, vb = a["verification"], b["verification"]
        assert va["held"] == vb["held"] and va["fastest"] == vb["fastest"]
        assert vb["strategies"][0]["measured_s"] == pytest.approx(1.25 * va["strategies"][0]["measured_s"])
        assert len(vb["round_gaps"]) == 2 * len(va["round_gaps"]) > 1  # each file's rounds, round by round
    # the same run slower throughout: each file's fastest holds in the other, for every workload
    assert one["runs_agree"] is None and two["runs_agree"]["held"] == two["runs_agree"]["of"] == 2 * 16
    assert set(one["phase_drift"]) == {"host memory", "copies", "kernels"}
    text = CliRunner().invoke(cli, [a for a in args if a != "--json"] + ["--measured", str(slow)])
    assert text.exit_code == 0, text.output
    assert "the measured runs against each other" in text.output and "32 of 32" in text.output


def test_recommend_names_the_runs_a_measured_file_pools(tmp_path, monkeypatch):
    """One --measured file that pools two runs (column ``run``, as the committed holdout-18 does):
    the runs are judged against each other and named by file and run."""
    import pandas as pd

    from umprof.model.calibration import RUN

    rs = ResultSet.load(VERIFY)
    monkeypatch.chdir(tmp_path)  # a short name, which the terminal's width does not fold
    pooled = "pooled.parquet"
    ResultSet(pd.concat([rs.frame.assign(**{RUN: 0}), rs.frame.assign(**{RUN: 1})], ignore_index=True), rs.meta,
              rs.devices).save(pooled)
    r = CliRunner().invoke(cli, ["recommend", "--from", str(CAL), "--workload", str(WORKLOADS / "verify.toml"),
                                 "--measured", str(pooled)])
    assert r.exit_code == 0, r.output
    assert f"fastest in {pooled}, run 0, judged by {pooled}, run 1" in r.output.replace("\n", " ")


def test_recommend_json_is_one_document_a_script_reads():
    import json

    r = CliRunner().invoke(cli, ["recommend", "--from", str(CAL), "--workload",
                                                 str(WORKLOADS / "verify.toml"), "--measured", str(VERIFY), "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["device"] == "NVIDIA H200" and len(doc["recommendations"]) == 16
    rec = doc["recommendations"][0]
    assert set(rec) == {"workload", "ranked_by", "ranking", "excluded", "reason", "notes", "tie", "verification"}
    top = rec["ranking"][0]
    assert set(top) >= {"rank", "strategy", "setup_s", "steady_s", "whole_s", "setup_phases_s", "steady_phases_s"}
    assert top["whole_s"] == pytest.approx(top["setup_s"] + rec["workload"]["iterations"] * top["steady_s"])
    v = rec["verification"]
    assert set(v) >= {"held", "fastest", "top_pick_vs_fastest", "strategies"} and v["strategies"][0]["measured_s"] > 0


@pytest.mark.parametrize("command", [["show", str(RESULTS / "nvidia-h200-default.parquet")],
                                     ["compare", *map(str, holdout("h200", 17, "-b"))],
                                     ["crossovers", str(CROSS)]])
def test_format_json_on_show_compare_and_crossovers(command):
    import json

    r = CliRunner().invoke(cli, [*command, "--format", "json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc and "NaN" not in r.stdout


@pytest.mark.parametrize("args, message", [
    (["--bytes", "1MiB", "--touched", "2"], "recommend: option '--touched': expected a fraction in (0, 1]"),
    (["--reuse", "4"], "no workload: give --bytes"),
    (["--bytes", "1MiB", "--workload", "x.toml"], "not both"),
    (["--bytes", "1MiB", "--verify-top", "zero"], "--verify-top"),
    (["--bytes", "1MiB", "--verify-rounds", "0"], "'--verify-rounds'"),
    (["--bytes", "1MiB", "--host-writes", "1.5"], "recommend: option '--host-writes': expected a fraction from 0 to 1"),
    (["--bytes", "1MiB", "--gpu-writes", "-1"], "option '--gpu-writes'"),
    (["--bytes", "1MiB", "--steady", "--iterations", "10"], "'--steady' and '--iterations'"),
    (["--bytes", "1MiB", "--pingpong", "--host-reads", "0.5"], "option '--pingpong' means --host-writes = --gpu-writes = --host-reads = 1, but '--host-reads'"),
    (["--bytes", "1MiB", "--copies", "0"], "option '--copies': expected an integer from 1"),
    (["--bytes", "1xB"], "option '--bytes': expected a size ('256MiB', 1073741824), got '1xB'"),
])
def test_recommend_usage_errors_exit_2(args, message):
    r = CliRunner().invoke(cli, ["recommend", "--from", str(CAL), *args])
    assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output


def test_recommend_prices_records_copied_one_by_one():
    """--copies: the copies each way in that many parts, priced from calibration-loop-copies (the H100's
    shipped calibration has it): 512 records of 16 KiB cost pinned memory many times one 8 MiB copy."""
    import json

    one, parts = (CliRunner().invoke(cli, ["recommend", "--gpu", "H100", "--bytes", "8MiB", "--host-writes", "1",
                                           "--iterations", "10", "--json", *extra]) for extra in ([], ["--copies", "512"]))
    assert one.exit_code == 0 and parts.exit_code == 0, parts.output
    recs = [json.loads(x.stdout)["recommendations"][0] for x in (one, parts)]
    h2d = [{r["strategy"]: r["steady_phases_s"]["h2d"] for r in rec["ranking"]} for rec in recs]
    assert h2d[1]["pinned"] > 5 * h2d[0]["pinned"]
    assert recs[1]["workload"]["copies"] == 512 and "512 copies each way" in recs[1]["workload"]["name"]


def test_recommend_without_results_or_gpu_says_what_is_missing(tmp_path):
    r = CliRunner().invoke(cli, ["recommend", "--from", str(RESULTS / "nvidia-h200-ncu.parquet"), "--bytes", "1MiB"])
    assert r.exit_code == 2 and "calibration" in r.output


def test_recommend_answers_for_each_gpu_of_a_calibration(tmp_path):
    """A calibration measured with --device all: --device picks each GPU's rows."""
    import json

    import pandas as pd

    rs = ResultSet.load(CAL)
    slower = rs.frame.copy()
    slower["device"] = 1
    for c in ("time_median_s", "gpu_time_median_s", "cpu_time_median_s"):
        slower[c] = slower[c] * 2
    two = ResultSet(pd.concat([rs.frame, slower], ignore_index=True), rs.meta,
                    rs.devices + [dict(rs.devices[0], index=1)])
    path = tmp_path / "two.parquet"
    two.save(path)
    r = CliRunner().invoke(cli, ["recommend", "--from", str(path), "--device", "all", "--bytes", "256MiB", "--reuse", "16",
                                 "--json"])
    assert r.exit_code == 0, r.output
    docs = json.loads(r.stdout)["gpus"]
    assert [d["gpu"] for d in docs] == [0, 1]
    best = [d["recommendations"][0]["ranking"][0] for d in docs]
    assert best[1]["steady_s"] > best[0]["steady_s"]
    r = CliRunner().invoke(cli, ["recommend", "--from", str(path), "--device", "3", "--bytes", "256MiB"])
    assert r.exit_code == 2 and "the calibration was measured on GPU [0, 1], not GPU 3" in r.output


def test_recommend_each_gpu_answers_from_its_own_calibration(monkeypatch):
    """--device 0,1 without --gpu: every GPU's calibration is looked up for that GPU, not for the
    model the previous GPU's calibration named."""
    from umprof import api

    asked = []

    def calibration_for(*, gpu=None, device=0, calibrate_now=False, console=None):
        asked.append((gpu, device))
        return api.load_calibration(CAL), None, []

    monkeypatch.setattr(api, "calibration_for", calibration_for)
    r = CliRunner().invoke(cli, ["recommend", "--device", "0,1", "--bytes", "64MiB", "--reuse", "4"])
    assert r.exit_code == 0, r.output
    assert asked == [(None, 0), (None, 1)]


def _setup_of_1gib(*extra):
    """recommend --json for 1 GiB written once on the shipped H100 calibration: its workload, and each strategy's
    setup phases."""
    import json

    r = CliRunner().invoke(cli, ["recommend", "--gpu", "H100", "--bytes", "1GiB", "--host-writes", "0", "--json", *extra])
    assert r.exit_code == 0, r.output
    (rec,) = json.loads(r.stdout)["recommendations"]
    return rec["workload"], {p["strategy"]: p["setup_phases_s"] for p in rec["ranking"]}


def test_recommend_prices_a_c_program_s_malloced_pages_with_host_pages():
    """--host-pages malloc: the pageable strategies' setup from the shipped calibration's setup loop of malloc'd
    pages (their first write of 1 GiB costs more than a numpy array's on an H100 machine's host of 16 cores, 2026-11-26), the memory the
    driver allocates as before; a value that is neither is a usage error naming the option."""
    (w_numpy, numpy), (w_malloc, malloc) = _setup_of_1gib(), _setup_of_1gib("--host-pages", "malloc")
    assert w_numpy["host_pages"] == "numpy" and w_malloc["host_pages"] == "malloc"
    assert malloc["pageable"]["host_init"] > 1.5 * numpy["pageable"]["host_init"]
    assert malloc["mapped"]["alloc"] > numpy["mapped"]["alloc"]
    assert malloc["pinned"] == numpy["pinned"] and malloc["managed-prefetch"] == numpy["managed-prefetch"]
    bad = CliRunner().invoke(cli, ["recommend", "--gpu", "H100", "--bytes", "1GiB", "--host-pages", "huge"])
    assert bad.exit_code == 2 and "--host-pages" in bad.output


def test_recommend_prices_a_first_write_by_stores_with_first_write():
    """--first-write stores: every strategy's first write from the shipped calibration's setup loop of stores
    (page-locked memory's about twice memcpy's copy on an H100 machine of 16 cores, 2026-11-26), the other setup steps as
    before; a value that is neither is a usage error naming the option."""
    (w_copy, copy), (w_stores, stores) = _setup_of_1gib(), _setup_of_1gib("--first-write", "stores")
    assert w_copy["first_write"] == "copy" and w_stores["first_write"] == "stores"
    assert stores["pinned"]["host_init"] > 1.5 * copy["pinned"]["host_init"]
    assert stores["pinned"]["alloc"] == copy["pinned"]["alloc"] and stores["pinned"]["free"] == copy["pinned"]["free"]
    bad = CliRunner().invoke(cli, ["recommend", "--gpu", "H100", "--bytes", "1GiB", "--first-write", "memset"])
    assert bad.exit_code == 2 and "--first-write" in bad.output and "Traceback" not in bad.output


def test_recommend_reads_back_word_by_word_with_host_reader():
    """--host-reader words: the workload read back as a compiled program's loop reads it (the JSON says so); a value
    that is neither reader is a usage error naming the option."""
    import json

    r = CliRunner().invoke(cli, ["recommend", "--gpu", "H200", "--bytes", "64MiB", "--host-reader", "words", "--json"])
    assert r.exit_code == 0, r.output
    (rec,) = json.loads(r.stdout)["recommendations"]
    assert rec["workload"]["host_reader"] == "words"
    bad = CliRunner().invoke(cli, ["recommend", "--gpu", "H200", "--bytes", "64MiB", "--host-reader", "simd"])
    assert bad.exit_code == 2 and "--host-reader" in bad.output and "Traceback" not in bad.output


def test_recommend_puts_input_and_output_apart_with_split():
    """--split: the host writes one half and reads the other; on-demand managed memory's host writes fault back
    from the GPU (priced above the in-place loop's), copies move the same bytes; too large a share of reads apart
    is a usage error naming the key."""
    import json

    def steady(*extra):
        r = CliRunner().invoke(cli, ["recommend", "--gpu", "H200", "--bytes", "128MiB", "--host-writes", "0.5",
                                     "--host-reads", "0.5", "--gpu-writes", "0.5", "--iterations", "40", "--json",
                                     *extra])
        assert r.exit_code == 0, r.output
        (rec,) = json.loads(r.stdout)["recommendations"]
        return rec["workload"], {p["strategy"]: p["steady_phases_s"] for p in rec["ranking"]}

    (w_in, in_place), (w_apart, apart) = steady(), steady("--split")
    assert not w_in["split"] and w_apart["split"]
    assert apart["managed"]["host_write"] > in_place["managed"]["host_write"]
    assert apart["pinned"]["h2d"] == in_place["pinned"]["h2d"]
    bad = CliRunner().invoke(cli, ["recommend", "--gpu", "H200", "--bytes", "1MiB", "--host-writes", "0.75",
                                   "--host-reads", "0.5", "--split"])
    assert bad.exit_code == 2 and "option '--host-reads'" in bad.output and "with --split" in bad.output
    assert "Traceback" not in bad.output
