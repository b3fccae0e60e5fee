"""The host CPUs near a GPU: which cores a staging ring's copy threads run on, and how many.

A GPU hangs off one NUMA node's PCIe root; host copies into pinned buffers that the GPU's DMA
then reads go fastest from that node's cores into that node's memory. Linux says which node in
``/sys/bus/pci/devices/<bus id>/numa_node`` and which CPUs it has in
``/sys/devices/system/node/node<N>/cpulist``; the process may only use its affinity mask. Where
sysfs says nothing (no NUMA, another OS, a container hiding it), every CPU the process may use is
near.
"""

from __future__ import annotations

import os
from pathlib import Path

SYS = Path("/sys")


def parse_cpulist(text: str) -> list[int]:
    """CPUs of a Linux cpulist ('0-7,16-23', '3', ''), sorted."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            cpus.update(range(int(lo), int(hi) + 1))
        else:
            cpus.add(int(part))
    return sorted(cpus)


def usable_cpus() -> list[int]:
    """The CPUs this process may run on."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return list(range(os.cpu_count() or 1))


def numa_node(pci_bus_id: str | None, sys_root: Path = SYS) -> int | None:
    """The NUMA node of a PCI device ('0000:1b:00.0'), or None where sysfs does not say."""
    if not pci_bus_id:
        return None
    parts = pci_bus_id.lower().split(":")
    if len(parts) == 3:  # CUDA spells the domain with 8 digits, sysfs with 4
        parts[0] = parts[0][-4:].rjust(4, "0")
    try:
        node = int((sys_root / "bus/pci/devices" / ":".join(parts) / "numa_node").read_text())
    except (OSError, ValueError):
        return None
    return node if node >= 0 else None  # -1: the platform does not say


def near_cpus(pci_bus_id: str | None, sys_root: Path = SYS, usable: list[int] | None = None) -> list[int]:
    """The usable CPUs on the GPU's NUMA node; all usable CPUs where the node is unknown or has none."""
    usable = usable_cpus() if usable is None else usable
    node = numa_node(pci_bus_id, sys_root)
    if node is None:
        return usable
    try:
        cpus = parse_cpulist((sys_root / f"devices/system/node/node{node}/cpulist").read_text())
    except OSError:
        return usable
    near = [c for c in cpus if c in set(usable)]
    return near or usable


def session_cpus(session) -> list[int]:
    """The usable CPUs near a session's GPU (all usable ones where its bus id is unknown)."""
    try:
        bus = session.device.pci_bus_id()
    except Exception:  # a stand-in session, or a pycuda without the call
        bus = None
    return near_cpus(bus)
