import pytest

from umprof.core.axes import AxisSpec, parse_override
from umprof.core.errors import UsageError
from umprof.core.units import (
    format_percent,
    format_rate,
    format_size,
    format_time,
    parse_size,
)

SIZE = AxisSpec("bytes", "size", minimum=1)
INT = AxisSpec("reuse", "int", minimum=1, maximum=1024)
CHOICE = AxisSpec("strategy", "choice", choices=("pinned", "pageable"))


@pytest.mark.parametrize("text,expected", [
    (4096, 4096), ("4096", 4096), ("4KiB", 4096), ("4k", 4096), ("256 MiB", 256 * 2**20), ("1GiB", 2**30),
    ("1G", 2**30), ("1GB", 10**9), ("1.5KiB", 1536),
])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["", "abc", "4XB", "1.3B", -1, True])
def test_parse_size_rejects(bad):
    with pytest.raises(ValueError):
        parse_size(bad)


def test_formatting():
    assert format_size(256 * 2**20) == "256MiB"
    assert format_size(4096) == "4KiB"
    assert format_size(100) == "100B"
    assert format_rate(55.2e9) == "55.2 GB/s"
    assert format_rate(4.13e12) == "4.13 TB/s"
    assert format_time(4.86e-3) == "4.86 ms"
    assert format_time(2.7e-6) == "2.7 µs"
    # a figure that rounds to 1000 of its unit is printed in the next one
    assert format_time(0.9996) == "1 s" and format_time(0.9994) == "999 ms" and format_time(999.7e-6) == "1 ms"
    assert format_percent(0.877) == "87.7%"


def test_pow2_generator():
    assert SIZE.parse("pow2:20..30:2") == [2**e for e in (20, 22, 24, 26, 28, 30)]
    assert SIZE.parse("pow2:12..12") == [4096]


def test_range_generator_and_lists():
    assert INT.parse("range:32..128:32") == [32, 64, 96, 128]
    assert INT.parse([1, 8]) == [1, 8]
    assert INT.parse("1,8,8") == [1, 8]  # repeats dropped, order kept
    assert SIZE.parse(["4KiB", "1MiB"]) == [4096, 2**20]


@pytest.mark.parametrize("raw,match", [
    ("pow2:20", "pow2:START..STOP"),
    ("pow2:30..20", "START <= STOP"),
    ("pow2:1..70", "between 0 and 62"),
    ("range:1..10:0", "STEP >= 1"),
    ([], "empty list"),
    ("12XB", "byte size"),
])
def test_size_axis_errors(raw, match):
    with pytest.raises(UsageError, match=match):
        SIZE.parse(raw, where="scenarios/x.toml: axis 'bytes'")


def test_errors_name_where_expected_and_given():
    with pytest.raises(UsageError) as e:
        CHOICE.parse("pinned,zero", where="f.toml: axis 'strategy'")
    msg = str(e.value)
    assert msg.startswith("f.toml: axis 'strategy'") and "one of pinned, pageable" in msg and "'zero'" in msg


def test_int_axis_bounds_and_types():
    with pytest.raises(UsageError, match=">= 1"):
        INT.parse([0])
    with pytest.raises(UsageError, match="<= 1024"):
        INT.parse([4096])
    with pytest.raises(UsageError, match="integers"):
        INT.parse(["x"])
    with pytest.raises(UsageError, match="integers"):
        INT.parse([True])


def test_generator_refused_on_choice_axis():
    with pytest.raises(UsageError, match="generator"):
        CHOICE.parse("pow2:1..3")


def test_parse_override():
    assert parse_override("bytes=pow2:20..24") == ("bytes", "pow2:20..24")
    for bad in ("bytes", "=1", "bytes="):
        with pytest.raises(UsageError, match="NAME=VALUES"):
            parse_override(bad)


@pytest.mark.parametrize("seconds, text", [
    (0.0, "0 s"), (-0.0, "0 s"), (-1e-12, "0 s"), (1e-12, "0 s"), (4e-7, "400 ns"), (-0.587, "-587 ms"),
    (999.4, "999 s"), (1260.0, "21 min"), (1.26e3 * 4.7, "98.7 min"), (7200.0, "2 h"), (4e6, "1111 h"),
    (999.6e-9, "1 µs"), (-1e-7, "-100 ns"),
])
def test_a_time_is_never_a_negative_zero_nor_an_exponent(seconds, text):
    assert format_time(seconds) == text
    assert "e+" not in format_time(seconds) and "e-" not in format_time(seconds)


def test_a_size_or_share_is_never_an_exponent_nor_a_negative_zero():
    from umprof.core.units import format_share

    assert format_size(1023.9 * 2**20) == "1024MiB" and format_size(1500 * 2**40) == "1.46PiB"
    assert format_size(3 * 2**40) == "3TiB" and format_size(-2**20) == "-1MiB"
    assert format_percent(-1e-9) == "0.0%"
    assert format_share(0.003) == "under 1%" and format_share(0.0) == "0%" and format_share(-0.001) == "over -1%"
    assert format_share(0.25) == "25%" and format_share(-0.004999) == "over -1%"
