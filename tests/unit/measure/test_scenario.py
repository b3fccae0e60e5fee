import pytest

from umprof.core.errors import UsageError
from umprof.measure.scenario import (
    apply_overrides,
    load_scenario,
    resolve,
    shipped_scenarios,
)


def write(tmp_path, text, name="s.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_shipped_scenarios_load_and_expand():
    shipped = shipped_scenarios()
    assert {"transfers", "host-strategies"} <= set(shipped)
    for path in shipped.values():
        s = load_scenario(path)
        assert s.cases(), path


def test_default_suite():
    names = {s.name for s in resolve([])}
    assert {"transfers", "host-strategies"} <= names


def test_transfers_d2d_is_measured_once_per_size():
    s = resolve(["transfers"])[0]
    cases = s.cases()
    d2d = [c for c in cases if c.params["direction"] == "d2d"]
    sizes = s.axes["bytes"]
    assert len(d2d) == len(sizes)
    assert all(c.params["strategy"] == "device" for c in d2d)
    assert len(cases) == 3 * 2 * len(sizes) + len(sizes)


def test_host_strategies_covers_every_strategy():
    """Every memory strategy; the loop's pipelined plan is not one (the lifecycle has no chunks)."""
    from umprof.measure.strategies import STRATEGIES

    s = resolve(["host-strategies"])[0]
    assert set(s.axes["strategy"]) == {n for n, st in STRATEGIES.items() if not st.pipelined}
    assert s.axes["reuse"] == [1, 8]


def test_override_and_case_labels():
    s = resolve(["host-strategies"])
    apply_overrides(s, ["bytes=pow2:24..28:2", "strategy=pinned,managed"])
    cases = s[0].cases()
    assert len(cases) == 2 * 3 * 2  # strategies × 16/64/256 MiB × reuse
    assert cases[0].label == "strategy=pinned bytes=16MiB reuse=1"


def test_override_unknown_axis_lists_the_valid_ones():
    with pytest.raises(UsageError, match="no selected scenario has an axis 'stride'.*bytes, direction, strategy"):
        apply_overrides(resolve(["transfers"]), ["stride=2"])


def test_override_bad_value_names_option_and_scenario():
    with pytest.raises(UsageError, match=r"option '-a strategy=...' \(scenario 'transfers'\): expected one of"):
        apply_overrides(resolve(["transfers"]), ["strategy=zero-copy"])


def test_unknown_scenario_name():
    with pytest.raises(UsageError, match="unknown scenario 'nope'.*transfers"):
        resolve(["nope"])


def test_defaults_fill_missing_axes(tmp_path):
    p = write(tmp_path, '[scenario]\nname = "t"\nop = "transfer"\n[axes]\nbytes = ["1MiB"]\n')
    s = load_scenario(p)
    assert s.axes["direction"] == ["h2d", "d2h"] and s.axes["bytes"] == [2**20]


@pytest.mark.parametrize("text,match", [
    ('[scenario]\nname = "t"\nop = "nope"\n', r"\[scenario\] op: expected one of .*lifecycle.*got 'nope'"),
    ('[scenario]\nname = "t"\n', r"\[scenario\] op: expected a non-empty string"),
    ('[scenario]\nname = "t"\nop = "transfer"\ncolour = 1\n', "unknown key"),
    ('[scenario]\nname = "t"\nop = "transfer"\n[axes]\nstride = [1]\n', r"\[axes\] stride: op 'transfer' has no axis 'stride'"),
    ('[scenario]\nname = "t"\nop = "transfer"\n[axes]\nbytes = "pow2:20"\n', r"axis 'bytes': expected pow2:START..STOP"),
    ('[scenario]\nname = "t"\nop = "lifecycle"\nkernel = "nofile"\n', r"kernel: expected FILE.cu:SYMBOL"),
    ('[scenario]\nname = "t"\nop = "transfer"\n[timing]\nmin_samples = -1\n', r"\[timing\] min_samples"),
    ('[scenario]\nname = "t"\nop = "transfer"\n[timing]\nsamples = 3\n', r"\[timing\]: expected keys"),
    ('[scenario\nname = "t"', "not valid TOML"),
    ('[axes]\nbytes = [1]\n', r"expected a \[scenario\] table"),
    ('[scenario]\nname = "t"\nop = "transfer"\n[extra]\n', "unknown table"),
    ('[scenario]\nname = "t"\nop = "transfer"\nrounds = 0\n', r"\] rounds: expected a positive integer, got 0$"),
    ('[scenario]\nname = "t"\nop = "transfer"\nrounds = "3"\n', r"rounds: expected a positive integer, got '3'"),
    ('[scenario]\nname = "t"\nop = "transfer"\nouter = "stride"\n',
     r"\[scenario\] outer: expected one of op 'transfer''s axes \(.*bytes.*\), got 'stride'"),
])
def test_bad_files_name_the_file_and_key(tmp_path, text, match):
    p = write(tmp_path, text)
    with pytest.raises(UsageError, match=match) as e:
        load_scenario(p)
    assert str(e.value).startswith(str(p))


def test_missing_file():
    with pytest.raises(UsageError, match="no such scenario file"):
        load_scenario("does/not/exist.toml")


def test_rounds_run_every_case_again_in_reverse_order_under_their_own_names(tmp_path):
    """A scenario measured in rounds is its rounds once selected: NAME, NAME.r2, ... each with
    every case, the even ones in reverse order; ``outer`` makes an axis the slowest; the rounds
    travel to a fresh process (to_data) as plain scenarios."""
    from umprof.api import select
    from umprof.measure.scenario import scenario_from_data

    p = write(tmp_path, '[scenario]\nname = "t"\nop = "transfer"\nrounds = 3\nouter = "bytes"\n'
                        '[axes]\nbytes = ["1MiB", "2MiB"]\ndirection = ["h2d", "d2h"]\n')
    rounds = select(str(p))
    assert [r.name for r in rounds] == ["t", "t.r2", "t.r3"]
    first = [(c.params["bytes"], c.params["direction"]) for c in rounds[0].cases()]
    assert first[:2] == [(2**20, "h2d"), (2**20, "d2h")]  # one size's cases one after another
    assert [(c.params["bytes"], c.params["direction"]) for c in rounds[1].cases()] == first[::-1]
    assert [(c.params["bytes"], c.params["direction"]) for c in rounds[2].cases()] == first
    assert {c.scenario for c in rounds[1].cases()} == {"t.r2"}
    assert rounds[0].cases()[0].label == load_scenario(p).cases()[0].label  # labels keep the op's axis order
    back = scenario_from_data(rounds[1].to_data(), p)
    assert back.rounds == 1 and back.name == "t.r2" and back.cases() == rounds[1].cases()
    plain = write(tmp_path, '[scenario]\nname = "u"\nop = "transfer"\n', "u.toml")
    assert [s.name for s in select(str(plain))] == ["u"]
