"""`umprof list` and `umprof devices`: what umprof can run, and what the GPUs can do."""

from __future__ import annotations

import json

import click
from rich.table import Table

from umprof import api
from umprof.cli import common
from umprof.cli.common import out
from umprof.core.units import format_rate, format_size


@click.command("list")
@click.option("--cases", "cases_of", metavar="SCENARIO", help="List every case of one scenario.")
@click.option("-a", "--axis", "axes", multiple=True, metavar="NAME=VALUES", help="Override an axis (with --cases).")
def list_cmd(cases_of, axes):
    """Shipped scenarios: their op, axes and number of cases (× its rounds where it is measured in
    rounds; * = in the default suite), and their groups (the calibration's scenarios as a group:
    `umprof calibrate` measures them)."""
    from umprof.measure.scenario import CALIBRATION_FOLDER, load_scenario, shipped_scenarios

    console = out()
    if cases_of:
        for c in api.select([cases_of], axes)[0].cases():
            console.print(c.label)
        return
    table = Table(header_style="bold")
    for col in ("scenario", "op", "cases", "axes", "about"):
        table.add_column(col)
    groups = {}
    for name, path in shipped_scenarios().items():
        s = load_scenario(path)
        if s.group:
            groups.setdefault(s.group, []).append(name)
        if path.parent.name == CALIBRATION_FOLDER:
            continue
        axes_txt = "; ".join(f"{k}: {_values(s.op.axes.by_name[k], v)}" for k, v in s.axes.items())
        count = str(len(s.cases())) + (f" × {s.rounds} rounds" if s.rounds > 1 else "")
        table.add_row(("* " if s.default else "  ") + name, s.op.name, count, axes_txt, s.about)
    console.print(table)
    console.print("* = run by a plain `umprof run`; override axes with -a NAME=VALUES")
    for group, names in groups.items():
        console.print(f"group {group}: `umprof run {group}` runs {len(names)} scenarios ({', '.join(names)})")


def _values(spec, values) -> str:
    shown = [spec.format(v) for v in values]
    return ", ".join(shown) if len(shown) <= 6 else ", ".join(shown[:3] + ["…"] + shown[-2:]) + f" ({len(shown)})"


@click.command()
@click.option("--device", "device_index", type=common.DEVICES, default=None,
              help="These GPUs: an index, a list (0,1) or all (default: all).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option("--measure/--no-measure", default=True, show_default=True,
              help="Measure the device-to-device copy ceiling (about a second per GPU).")
def devices(device_index, as_json, measure):
    """What each GPU and its link can do, with the ceilings umprof measures against."""
    from umprof.measure import device as devmod

    infos = devmod.describe_devices(device_index, measure)
    if as_json:
        click.echo(json.dumps([i.to_dict() for i in infos], indent=1))
        return
    console = out()
    for info in infos:
        t = Table(title=f"GPU {info.index}: {info.name}", title_justify="left", show_header=False)
        t.add_column(style="bold")
        t.add_column()
        for k, v in _device_rows(info):
            t.add_row(k, v)
        console.print(t)
        for n in info.notes:
            console.print(f"[yellow]note:[/] {n}")
    if len(infos) > 1:
        console.print(topology_table(infos))


def topology_table(infos) -> Table:
    """nvidia-smi topo -m's matrix with the ceilings: the path between each pair of GPUs (NVLink
    links or the PCIe level) and its bytes/s per direction, and each GPU's host link."""
    t = Table(title="GPU-to-GPU paths (NVML) and host links; GB/s per direction", title_justify="left",
              header_style="bold")
    t.add_column("")
    for i in infos:
        t.add_column(f"GPU {i.index}", justify="center")
    t.add_column("host link", justify="center")
    for a in infos:
        cells = []
        for b in infos:
            p = a.peers.get(str(b.index)) if a is not b else None
            cells.append("X" if p is None else f"{p['path']} {format_rate(p['bytes_per_s']) if p.get('bytes_per_s') else ''}".strip())
        host = (f"PCIe {a.pcie_gen}.0 x{a.pcie_width} {format_rate(a.pcie_bytes_per_s)}" if a.pcie_bytes_per_s else "-")
        t.add_row(f"GPU {a.index}", *cells, host)
    return t


def _device_rows(info) -> list[tuple[str, str]]:
    yes = lambda v: "-" if v is None else ("yes" if v else "no")  # noqa: E731
    return [
        ("compute capability", info.cc), ("SMs", str(info.sms)),
        ("memory", f"{format_size(info.memory_total_bytes)} total, {format_size(info.memory_free_bytes)} free"),
        ("L2", format_size(info.l2_bytes) if info.l2_bytes else "-"),
        ("driver", f"{info.driver // 1000}.{info.driver % 1000 // 10}"),
        ("managed memory", yes(info.managed_memory)), ("concurrent managed access", yes(info.concurrent_managed_access)),
        ("pageable memory access (HMM)", yes(info.pageable_memory_access)), ("maps host memory", yes(info.can_map_host_memory)),
        ("PCIe link", f"gen {info.pcie_gen} x{info.pcie_width} (now gen {info.pcie_gen_current} x{info.pcie_width_current})"
         if info.pcie_gen else "unknown"),
        ("PCIe ceiling", (format_rate(info.pcie_bytes_per_s) + " per direction") if info.pcie_bytes_per_s else "-"),
        ("DRAM ceiling", (format_rate(info.dram_bytes_per_s) + f" theoretical ({info.memory_clock_khz // 1000} MHz × "
                          f"{info.bus_width_bits} bit × 2)") if info.dram_bytes_per_s else "-"),
        ("device copy", (format_rate(info.d2d_bytes_per_s) + " measured, read+write") if info.d2d_bytes_per_s else "-"),
    ]


COMMANDS = [list_cmd, devices]
