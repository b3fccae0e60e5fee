"""Device facts and the ceilings every figure is shown against.

* PCIe link: NVML's link generation × width, at the per-lane data rate after line coding
  (gen3+ use 128b/130b), e.g. PCIe 5.0 x16 = 63.0 GB/s per direction. Transfers reach about
  85-90% of it (packet overheads), which is why figures are shown as a share of it.
* theoretical DRAM: memory clock × bus width × 2 (double data rate), as the seeds compute.
* measured device copy: a large cuMemcpyDtoD, read + write counted, the practical ceiling.
"""

from __future__ import annotations

import platform
from dataclasses import asdict, dataclass, field

# Per-lane, per-direction data rate in bytes/s after line coding.
PCIE_LANE_BYTES_PER_S = {
    1: 2.5e9 * 8 / 10 / 8,
    2: 5.0e9 * 8 / 10 / 8,
    3: 8.0e9 * 128 / 130 / 8,
    4: 16.0e9 * 128 / 130 / 8,
    5: 32.0e9 * 128 / 130 / 8,
    6: 64.0e9 * 242 / 256 / 8,  # PAM4 with FLIT mode; the FLIT's 242/256 payload share
}


def pcie_bytes_per_s(gen: int | None, width: int | None) -> float | None:
    """Per-direction PCIe bandwidth of a link, or None where the link is unknown."""
    if not gen or not width or gen not in PCIE_LANE_BYTES_PER_S:
        return None
    return PCIE_LANE_BYTES_PER_S[gen] * width


def dram_bytes_per_s(memory_clock_khz: int | None, bus_width_bits: int | None) -> float | None:
    """Theoretical DRAM bandwidth: clock × bus width × 2 (DDR) / 8."""
    if not memory_clock_khz or not bus_width_bits:
        return None
    return memory_clock_khz * 1e3 * bus_width_bits * 2 / 8


@dataclass
class DeviceInfo:
    index: int
    name: str
    cc: str
    sms: int
    memory_total_bytes: int
    memory_free_bytes: int
    driver: int
    l2_bytes: int | None = None
    memory_clock_khz: int | None = None
    bus_width_bits: int | None = None
    managed_memory: bool | None = None
    concurrent_managed_access: bool | None = None
    pageable_memory_access: bool | None = None
    can_map_host_memory: bool | None = None
    max_threads_per_sm: int | None = None
    pcie_gen: int | None = None
    pcie_width: int | None = None
    pcie_gen_current: int | None = None
    pcie_width_current: int | None = None
    pcie_bytes_per_s: float | None = None
    dram_bytes_per_s: float | None = None
    d2d_bytes_per_s: float | None = None  # measured copy, read + write counted
    pci_bus_id: str | None = None
    # the path to each other GPU of the run, by its index as text: {"1": {"path": "NV18",
    # "nvlinks": 18, "bytes_per_s": 450e9, ...}} (see :func:`peer_topology`)
    peers: dict = field(default_factory=dict)
    # every pair of the run's GPUs, "A-B" → its path as in ``peers`` (p2p rows' ceiling and path)
    links: dict = field(default_factory=dict)
    host: str = field(default_factory=platform.node)
    rank: int = 0
    notes: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


# NVLink data rate per link and direction, by nvmlDeviceGetNvLinkVersion's nvmlNvlinkVersion_t:
# 1 = NVLink 1.0 (20 GB/s); 2, 3, 4, 5, 6 = 2.0, 2.2, 3.0, 3.1, 4.0 (25 GB/s: an H100/H200's 18
# links make 450 GB/s); 7 = 5.0 (50 GB/s).
NVLINK_LINK_BYTES_PER_S = {1: 20e9, 2: 25e9, 3: 25e9, 4: 25e9, 5: 25e9, 6: 25e9, 7: 50e9}
# nvmlDeviceGetTopologyCommonAncestor's levels, as nvidia-smi topo -m names them
PCIE_PATHS = {0: "X", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}


def link_summary(nvlinks: int, nvlink_version: int | None, pcie_a: float | None, pcie_b: float | None,
                 level: int | None, p2p_ok: bool | None = None) -> dict:
    """The path between two GPUs and its per-direction ceiling: NVLink (links × the version's
    per-link rate) where they are joined, else PCIe (the slower of the two GPUs' links)."""
    if nvlinks:
        rate = NVLINK_LINK_BYTES_PER_S.get(nvlink_version or 0)
        return {"path": f"NV{nvlinks}", "nvlinks": nvlinks, "nvlink_version": nvlink_version,
                "bytes_per_s": nvlinks * rate if rate else None, "p2p": p2p_ok}
    caps = [c for c in (pcie_a, pcie_b) if c]
    return {"path": PCIE_PATHS.get(level, "PCIe") if level is not None else "PCIe", "nvlinks": 0,
            "nvlink_version": None, "bytes_per_s": min(caps) if caps else None, "p2p": p2p_ok}


def _bus(bus_id: str | None) -> str:
    """A PCI bus id in one spelling (NVML and CUDA differ in the domain's width and case)."""
    if not bus_id:
        return ""
    parts = str(bus_id).lower().split(":")
    if len(parts) == 3:
        parts[0] = parts[0][-4:].rjust(4, "0")
    return ":".join(parts)


def peer_topology(infos: list) -> None:
    """Fill each DeviceInfo's ``peers`` with the path to every other GPU in ``infos`` (NVML:
    active NVLinks to it and their version, the PCIe common ancestor, peer-to-peer support)."""
    if len(infos) < 2:
        return
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception as e:
        for info in infos:
            info.notes.append(f"NVML unavailable ({e}): the GPU-to-GPU paths are unknown")
            for other in infos:
                if other is not info:
                    info.peers[str(other.index)] = link_summary(0, None, info.pcie_bytes_per_s, other.pcie_bytes_per_s, None)
        _share_links(infos)
        return
    try:
        handles = {}
        for info in infos:
            try:
                handles[info.index] = pynvml.nvmlDeviceGetHandleByPciBusId(info.pci_bus_id)
            except Exception:
                handles[info.index] = pynvml.nvmlDeviceGetHandleByIndex(info.index)
        bus_of = {}
        for i, h in handles.items():
            try:
                bus_of[i] = _bus(pynvml.nvmlDeviceGetPciInfo(h).busId)
            except Exception:
                bus_of[i] = _bus(next(x.pci_bus_id for x in infos if x.index == i))
        active = {}
        for info in infos:
            h = handles[info.index]
            links_to, version, count = {}, None, 0
            for link in range(getattr(pynvml, "NVML_NVLINK_MAX_LINKS", 18)):
                try:
                    if pynvml.nvmlDeviceGetNvLinkState(h, link) != pynvml.NVML_FEATURE_ENABLED:
                        continue
                    remote = _bus(pynvml.nvmlDeviceGetNvLinkRemotePciInfo(h, link).busId)
                    version = version or int(pynvml.nvmlDeviceGetNvLinkVersion(h, link))
                except Exception:
                    continue
                count += 1
                links_to[remote] = links_to.get(remote, 0) + 1
            active[info.index] = (count, version, links_to)
        for info in infos:
            h = handles[info.index]
            count, version, links_to = active[info.index]
            for other in infos:
                if other is info:
                    continue
                try:
                    level = int(pynvml.nvmlDeviceGetTopologyCommonAncestor(h, handles[other.index]))
                except Exception:
                    level = None
                try:
                    p2p = pynvml.nvmlDeviceGetP2PStatus(h, handles[other.index], pynvml.NVML_P2P_CAPS_INDEX_READ) == 0
                except Exception:
                    p2p = None
                nvlinks = links_to.get(bus_of[other.index], 0)
                if not nvlinks and _nvlink_p2p(pynvml, h, handles[other.index]):
                    # through NVSwitches (an HGX board): every link goes to the switches, whose bus ids
                    # are what the links report; the pair shares the fewer of the two GPUs' links
                    nvlinks = min(count, active[other.index][0])
                info.peers[str(other.index)] = link_summary(nvlinks, version, info.pcie_bytes_per_s,
                                                            other.pcie_bytes_per_s, level, p2p)
        _share_links(infos)
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass


def _nvlink_p2p(pynvml, a, b) -> bool:
    """Whether NVML says the two GPUs reach each other over NVLink."""
    try:
        return pynvml.nvmlDeviceGetP2PStatus(a, b, pynvml.NVML_P2P_CAPS_INDEX_NVLINK) == pynvml.NVML_P2P_STATUS_OK
    except Exception:
        return False


def _share_links(infos) -> None:
    links = {f"{i.index}-{j}": p for i in infos for j, p in i.peers.items()}
    for info in infos:
        info.links = dict(links)


def _nvml_link(pci_bus_id: str | None, index: int) -> dict:
    """PCIe generation and width from NVML (max for the link, and current), where NVML works."""
    out = {}
    try:
        import pynvml
    except ImportError:
        return {"_note": "nvidia-ml-py is not installed: PCIe link unknown (pip install nvidia-ml-py)"}
    try:
        pynvml.nvmlInit()
    except Exception as e:
        return {"_note": f"NVML did not initialise ({e}): PCIe link unknown"}
    try:
        try:
            h = pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id) if pci_bus_id else pynvml.nvmlDeviceGetHandleByIndex(index)
        except Exception:
            h = pynvml.nvmlDeviceGetHandleByIndex(index)
        for key, fn in (("pcie_gen", "nvmlDeviceGetMaxPcieLinkGeneration"),
                        ("pcie_width", "nvmlDeviceGetMaxPcieLinkWidth"),
                        ("pcie_gen_current", "nvmlDeviceGetCurrPcieLinkGeneration"),
                        ("pcie_width_current", "nvmlDeviceGetCurrPcieLinkWidth"),
                        ("_nvml_mem_clock_mhz", None), ("_nvml_bus_width", "nvmlDeviceGetMemoryBusWidth")):
            try:
                if key == "_nvml_mem_clock_mhz":
                    out[key] = pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_MEM)
                else:
                    out[key] = int(getattr(pynvml, fn)(h))
            except Exception:
                pass
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass
    return out


def query(session) -> DeviceInfo:
    """Everything ``umprof devices`` prints, for the session's device."""
    cuda, dev = session.cuda, session.device
    free, total = session.mem_info()
    major, minor = dev.compute_capability()
    try:
        bus_id = dev.pci_bus_id()
    except Exception:
        bus_id = None
    a = session.attribute
    info = DeviceInfo(
        index=session.index, name=dev.name(), cc=f"{major}.{minor}", sms=a("MULTIPROCESSOR_COUNT"),
        memory_total_bytes=int(total), memory_free_bytes=int(free), driver=cuda.get_driver_version(),
        l2_bytes=a("L2_CACHE_SIZE"), memory_clock_khz=a("MEMORY_CLOCK_RATE"), bus_width_bits=a("GLOBAL_MEMORY_BUS_WIDTH"),
        managed_memory=_bool(a("MANAGED_MEMORY")), concurrent_managed_access=_bool(a("CONCURRENT_MANAGED_ACCESS")),
        pageable_memory_access=_bool(a("PAGEABLE_MEMORY_ACCESS")), can_map_host_memory=_bool(a("CAN_MAP_HOST_MEMORY")),
        max_threads_per_sm=a("MAX_THREADS_PER_MULTIPROCESSOR"), pci_bus_id=bus_id,
    )
    link = _nvml_link(bus_id, session.index)
    if "_note" in link:
        info.notes.append(link.pop("_note"))
    nvml_clock, nvml_bus = link.pop("_nvml_mem_clock_mhz", None), link.pop("_nvml_bus_width", None)
    for k, v in link.items():
        setattr(info, k, v)
    if not info.memory_clock_khz and nvml_clock:  # CUDA 13 may drop the attribute; NVML still knows
        info.memory_clock_khz = nvml_clock * 1000
    if not info.bus_width_bits and nvml_bus:
        info.bus_width_bits = nvml_bus
    info.pcie_bytes_per_s = pcie_bytes_per_s(info.pcie_gen, info.pcie_width)
    info.dram_bytes_per_s = dram_bytes_per_s(info.memory_clock_khz, info.bus_width_bits)
    return info


def measure_d2d(session, nbytes: int = 512 * 1024**2, reps: int = 10) -> float | None:
    """The practical DRAM ceiling: median of cuMemcpyDtoD copies, read + write counted."""
    import numpy as np

    cuda = session.cuda
    free, _ = session.mem_info()
    nbytes = min(nbytes, max(0, (free - 1024**3) // 2) // 4096 * 4096)
    if nbytes < 64 * 1024**2:
        return None
    a, b = cuda.mem_alloc(nbytes), cuda.mem_alloc(nbytes)
    try:
        cuda.memset_d8(a, 1, nbytes)
        start, end = cuda.Event(), cuda.Event()
        times = []
        for i in range(reps + 2):
            start.record()
            cuda.memcpy_dtod(b, a, nbytes)
            end.record()
            end.synchronize()
            if i >= 2:  # two warm-ups
                times.append(end.time_since(start) / 1e3)
        return 2 * nbytes / float(np.median(times))
    finally:
        a.free()
        b.free()


def _bool(v):
    return None if v is None else bool(v)


def describe_devices(index=None, measure: bool = True) -> list[DeviceInfo]:
    """DeviceInfo for the GPUs ``index`` names (an index, a list, None or 'all': every GPU),
    with the device-copy ceiling measured (about a second each) unless ``measure`` is false,
    and, for two or more, the paths between them (:func:`peer_topology`)."""
    from umprof.core.devices import parse_devices, resolve_devices
    from umprof.measure.gpu import load_pycuda, open_session

    cuda = load_pycuda()
    chosen = resolve_devices(parse_devices("all" if index is None else index), cuda.Device.count())
    infos = []
    for i in chosen:
        s = open_session(i)
        try:
            info = query(s)
            if measure:
                info.d2d_bytes_per_s = measure_d2d(s)
            infos.append(info)
        finally:
            s.close()
    peer_topology(infos)
    return infos
