from umprof.measure.runner import measure_case
from umprof.measure.scenario import resolve
from umprof.measure.timing import StoppingRule

QUICK = StoppingRule(min_samples=3, min_time=0.0, max_noise=1.0, timeout=5.0, warmup=1)


def scenario(name, **axes):
    s = resolve([name])[0]
    for k, v in axes.items():
        s.override(k, v)
    return s


def run_cases(ctx_factory, name, rule=QUICK, **axes):
    s = scenario(name, **axes)
    ctx = ctx_factory(s)
    rows = []
    for case in s.cases():
        rows.extend(measure_case(ctx, case, rule))
    return rows


def by(rows, **match):
    return [r for r in rows if all(r.get(k) == v for k, v in match.items())]


def assert_faster(name: str, fast: float, slow: float, factor: float = 1.0) -> None:
    """Assert ``slow > factor * fast`` (times in seconds, or any cost), and record the margin
    ``slow / fast`` in $UMPROF_MARGINS (one JSON line per check) so that runs on several GPUs
    show how far each ordering is from its edge."""
    _check_margin(name, ("fast", fast), ("slow", slow), factor)


def assert_higher(name: str, high: float, low: float, factor: float = 1.0) -> None:
    """Assert ``high > factor * low`` for rates (bytes per second: the faster way has the higher
    figure), recording the margin ``high / low`` as :func:`assert_faster` does, under its own keys."""
    _check_margin(name, ("low", low), ("high", high), factor)


def _check_margin(name: str, small: tuple[str, float], large: tuple[str, float], factor: float) -> None:
    import json
    import os

    (small_key, a), (large_key, b) = small, large
    ratio = b / a if a > 0 else float("inf")
    log = os.environ.get("UMPROF_MARGINS")
    if log:
        with open(log, "a") as f:
            f.write(json.dumps({"check": name, small_key: a, large_key: b, "ratio": ratio, "needed": factor}) + "\n")
    assert b > factor * a, f"{name}: {b:.4g} is not > {factor} x {a:.4g} (ratio {ratio:.3f})"
