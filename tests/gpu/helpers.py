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
