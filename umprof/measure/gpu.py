"""The GPU session: pycuda for the driver, cuda-bindings for what pycuda lacks.

Nothing here is imported until a command needs the GPU; every way that can fail
(no pycuda, no driver, no device) ends in one :class:`GpuUnavailable` line that says
which and what to install. The session also guards allocations: device and managed memory
against the GPU's free memory (managed oversubscription can hang a GPU, so it is refused
unless asked for), pinned host memory against the host's available memory.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

from umprof.core.errors import CaseSkipped, GpuUnavailable, UsageError
from umprof.core.units import format_size

INSTALL_HINT = "pip install 'umprof[gpu]' (needs an NVIDIA driver and the CUDA toolkit's nvcc)"
# Head-room left on the GPU when judging whether an allocation fits (contexts, kernels, events).
DEVICE_MARGIN = 256 * 1024**2
MANAGED_FRACTION = 0.9


def load_pycuda():
    """Import and initialise pycuda's driver module, or say exactly what is missing."""
    try:
        import pycuda.driver as cuda
    except ModuleNotFoundError as e:
        if e.name and e.name.split(".")[0] == "pycuda":
            raise GpuUnavailable(f"pycuda is not installed: {INSTALL_HINT}") from None
        raise GpuUnavailable(f"pycuda could not be imported ({e}): {INSTALL_HINT}") from None
    except ImportError as e:
        if "libcuda" in str(e):
            raise GpuUnavailable(f"no NVIDIA driver: pycuda cannot load libcuda ({e}); install the NVIDIA driver") from None
        raise GpuUnavailable(f"pycuda could not be imported ({e}); reinstall it against this CUDA: {INSTALL_HINT}") from None
    try:
        cuda.init()
    except Exception as e:
        raise GpuUnavailable(f"no usable NVIDIA driver: cuInit failed ({e}); install or repair the NVIDIA driver") from None
    if cuda.Device.count() == 0:
        raise GpuUnavailable("no CUDA device: the driver loaded but reports no GPU")
    return cuda


def load_bindings():
    """cuda-bindings' driver module (prefetch, advice, host registration, occupancy)."""
    try:
        from cuda.bindings import driver as cu
    except ImportError:
        try:
            from cuda import cuda as cu  # cuda-python < 12.6 layout
        except ImportError:
            raise GpuUnavailable(f"cuda-bindings is not installed (needed for prefetch, advice and host registration): {INSTALL_HINT}") from None
    return cu


def check(result):
    """Unwrap a cuda-bindings ``(err, *values)`` tuple, raising on an error."""
    err, *values = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        raise RuntimeError(f"CUDA driver error {int(err)} ({getattr(err, 'name', err)})")
    return values[0] if len(values) == 1 else (tuple(values) or None)


def host_available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (None where unknown)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


class _EventPairs:
    """CUDA event pairs by phase name, created once and reused sample after sample."""

    def __init__(self, cuda):
        self._cuda = cuda
        self._pairs = {}

    def pair(self, name):
        p = self._pairs.get(name)
        if p is None:
            p = self._pairs[name] = (self._cuda.Event(), self._cuda.Event())
        return p


class Session:
    """One device, its primary context (shared by pycuda and cuda-bindings), one stream.

    The session's context is current while it is open; another GPU's session, opened through
    :meth:`peer` for work that spans GPUs, is made current only inside ``with peer.current():``.
    ``um_devices``: the GPUs whose unified-memory traffic CUPTI counts (default: this one).
    """

    def __init__(self, device_index: int = 0, allow_oversubscription: bool = False, um_counters: bool = False,
                 *, um_devices=None, um=None, push: bool = True):
        self.cuda = cuda = load_pycuda()
        count = cuda.Device.count()
        if not 0 <= device_index < count:
            raise UsageError(f"option '--device': expected 0..{count - 1} (this machine has {count} GPU(s)), got {device_index}")
        self.index = device_index
        # CUPTI's unified-memory counters must be configured after cuInit (load_pycuda ran it)
        # and before the context does any work; a collector already started is shared, not owned
        self.um, self.um_note, self._owns_um = um, "on (CUPTI)" if um is not None else "off (not asked for)", False
        if um_counters and um is None:
            from umprof.measure.um_counters import start

            self.um, self.um_note = start(list(um_devices or [device_index]))
            self._owns_um = True
        self.device = cuda.Device(device_index)
        self.context = self.device.retain_primary_context()
        self._pushed = push
        if push:
            self.context.push()
        self.stream = None  # the legacy default stream: every phase is ordered behind the last
        self.allow_oversubscription = allow_oversubscription
        self._cu = None
        self._events = None  # created on first use, reused by every sample
        self._peers: dict = {}  # other GPUs' sessions, by index
        self._peer_access: dict = {}  # peer index → whether this context may address its memory

    # -- other GPUs ------------------------------------------------------------------------
    @contextmanager
    def current(self):
        """This session's context made current for the body (for a peer's allocations, streams
        and kernels), the caller's restored after."""
        self.context.push()
        try:
            yield self
        finally:
            self.cuda.Context.pop()

    def peer(self, index: int) -> "Session":
        """GPU ``index``'s session (opened once, closed with this one), not made current."""
        if index == self.index:
            return self
        if index not in self._peers:
            self._peers[index] = Session(index, self.allow_oversubscription, um=self.um, push=False)
        return self._peers[index]

    def can_access_peer(self, other: "Session") -> bool:
        return bool(self.device.can_access_peer(other.device))

    def set_peer_access(self, other: "Session", on: bool) -> None:
        """Let this context's kernels and copies address ``other``'s memory directly (or not):
        cuCtxEnablePeerAccess / cuCtxDisablePeerAccess, made current for the call."""
        if self._peer_access.get(other.index, False) == on:
            return
        with self.current():
            if on:
                self.cuda.Context.enable_peer_access(other.context)
            else:
                self.cuda.Context.disable_peer_access(other.context)
        self._peer_access[other.index] = on

    # -- facts ---------------------------------------------------------------------------
    def attribute(self, name: str, default=None):
        """A device attribute by its CU_DEVICE_ATTRIBUTE_ suffix, e.g. 'PAGEABLE_MEMORY_ACCESS'."""
        attr = getattr(self.cuda.device_attribute, name, None)
        if attr is not None:
            try:
                return self.device.get_attribute(attr)
            except Exception:
                pass
        try:  # pycuda may predate the attribute; ask the driver through cuda-bindings
            cu = self.cu
            return check(cu.cuDeviceGetAttribute(getattr(cu.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}"), self.index))
        except Exception:
            return default

    def mem_info(self) -> tuple[int, int]:
        """(free, total) bytes of this session's GPU (whichever GPU's context is current)."""
        with self.current():
            return self.cuda.mem_get_info()

    @property
    def cu(self):
        if self._cu is None:
            self._cu = load_bindings()
        return self._cu

    # -- guards --------------------------------------------------------------------------
    def check_device_alloc(self, nbytes: int, what: str = "device memory") -> None:
        free, _ = self.mem_info()
        if nbytes + DEVICE_MARGIN > free:
            raise CaseSkipped(f"{what}: needs {format_size(nbytes)}, the GPU has {format_size(free)} free")

    def check_managed_alloc(self, nbytes: int) -> None:
        """Refuse managed memory beyond the GPU's free memory unless oversubscription was asked for."""
        free, _ = self.mem_info()
        if nbytes > MANAGED_FRACTION * free and not self.allow_oversubscription:
            raise CaseSkipped(
                f"managed memory: {format_size(nbytes)} would oversubscribe the GPU ({format_size(free)} free); "
                "refused because oversubscription can hang a GPU (pass --allow-oversubscription to run it anyway)")

    def check_host_alloc(self, nbytes: int, what: str = "host memory") -> None:
        avail = host_available_bytes()
        if avail is not None and nbytes > 0.8 * avail:
            raise CaseSkipped(f"{what}: needs {format_size(nbytes)}, the host has {format_size(avail)} available")

    # -- operations pycuda lacks -----------------------------------------------------------
    def _location(self, where: str):
        cu = self.cu
        loc = cu.CUmemLocation()
        if where == "device":
            loc.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
            loc.id = self.index
        elif where == "host":
            loc.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_HOST
            loc.id = 0
        else:
            raise ValueError(f"location: expected 'device' or 'host', got {where!r}")
        return loc

    def _legacy_device(self, where: str):
        return self.index if where == "device" else -1  # CU_DEVICE_CPU

    def prefetch(self, ptr: int, nbytes: int, where: str, stream=None) -> None:
        """cuMemPrefetchAsync managed memory to the device or the host, on the session's stream
        (or a pycuda ``stream``)."""
        cu = self.cu
        handle = cu.CUstream(stream.handle) if stream is not None else 0
        try:  # CUDA 13 signature: a CUmemLocation and flags
            check(cu.cuMemPrefetchAsync(ptr, nbytes, self._location(where), 0, handle))
        except TypeError:  # CUDA 12 signature: a device ordinal (CU_DEVICE_CPU = -1)
            check(cu.cuMemPrefetchAsync(ptr, nbytes, self._legacy_device(where), handle))

    ADVICE = {
        "read-mostly": ("CU_MEM_ADVISE_SET_READ_MOSTLY", "device"),
        "prefer-gpu": ("CU_MEM_ADVISE_SET_PREFERRED_LOCATION", "device"),
        "prefer-host": ("CU_MEM_ADVISE_SET_PREFERRED_LOCATION", "host"),
        "accessed-by-gpu": ("CU_MEM_ADVISE_SET_ACCESSED_BY", "device"),
    }

    def advise(self, ptr: int, nbytes: int, advice: str) -> None:
        """cuMemAdvise with one of :attr:`ADVICE`'s names."""
        cu = self.cu
        name, where = self.ADVICE[advice]
        value = getattr(cu.CUmem_advise, name)
        try:
            check(cu.cuMemAdvise(ptr, nbytes, value, self._location(where)))
        except TypeError:
            check(cu.cuMemAdvise(ptr, nbytes, value, self._legacy_device(where)))

    def host_register(self, ptr: int, nbytes: int) -> int:
        """Page-lock and map an existing host range (cuMemHostRegister, DEVICEMAP); its device pointer."""
        cu = self.cu
        check(cu.cuMemHostRegister(ptr, nbytes, cu.CU_MEMHOSTREGISTER_DEVICEMAP))
        return int(check(cu.cuMemHostGetDevicePointer(ptr, 0)))

    def host_unregister(self, ptr: int) -> None:
        check(self.cu.cuMemHostUnregister(ptr))

    # -- timing --------------------------------------------------------------------------
    def event_pair_pool(self) -> _EventPairs:
        if self._events is None:
            self._events = _EventPairs(self.cuda)
        return self._events

    def synchronize(self) -> None:
        self.cuda.Context.synchronize()

    def _synchronize_own(self) -> None:
        if self._pushed:
            self.synchronize()
        else:
            with self.current():
                self.synchronize()

    def healthy(self) -> bool:
        """False after a sticky CUDA error (a kernel that trapped, an illegal address): the
        driver then refuses all further work in this process, even in a reset context."""
        try:
            self.synchronize()
            self.cuda.mem_get_info()
            return True
        except Exception:
            return False

    def close(self) -> None:
        """Finish the GPU's work and release the context; after a sticky error each step may be
        refused, and none of that is the user's concern (the case that caused it is recorded)."""
        for peer in self._peers.values():
            for a, b in ((self, peer), (peer, self)):
                try:  # peer access outlives a case: leave no context mapped into another
                    a.set_peer_access(b, False)
                except Exception:
                    pass
            peer.close()
        self._peers = {}
        steps = (self._synchronize_own, self.um.close if self.um is not None and self._owns_um else None,
                 self.context.pop if self._pushed else None)
        for step in steps:
            try:
                if step is not None:
                    step()
            except Exception:
                pass
        self._events = None


def _no_gpu_asked() -> None:
    if os.environ.get("UMPROF_NO_GPU"):  # lets tests and users check the no-GPU path anywhere
        raise GpuUnavailable(f"no GPU: UMPROF_NO_GPU is set; unset it on a machine with an NVIDIA GPU and {INSTALL_HINT}")


def device_count() -> int:
    """How many GPUs the driver shows, or :class:`GpuUnavailable` with the reason."""
    _no_gpu_asked()
    return load_pycuda().Device.count()


def open_session(device_index: int = 0, allow_oversubscription: bool = False, um_counters: bool = False,
                 **kwargs) -> Session:
    """Open the GPU or raise :class:`GpuUnavailable` with one line that says why.

    ``um_counters`` starts CUPTI's unified-memory counters (see :mod:`umprof.measure.um_counters`);
    ``kwargs`` go to :class:`Session` (``um_devices``, a shared ``um`` collector).
    """
    _no_gpu_asked()
    return Session(device_index, allow_oversubscription, um_counters, **kwargs)


def identify(device_index: int = 0) -> dict:
    """This machine's GPU as a calibration is matched to it: ``name``, ``memory_bytes`` and
    ``driver`` (NVML's driver version), from NVML where it answers (no CUDA context needed), else
    from the driver through pycuda; :class:`GpuUnavailable` where neither finds a GPU."""
    _no_gpu_asked()

    def query(nvml):
        handle = nvml.nvmlDeviceGetHandleByIndex(device_index)
        return {"name": _text(nvml.nvmlDeviceGetName(handle)),
                "memory_bytes": int(nvml.nvmlDeviceGetMemoryInfo(handle).total),
                "driver": _text(nvml.nvmlSystemGetDriverVersion())}

    found = _nvml(query)  # None: no NVML, or no such GPU there: ask the driver
    if found is not None:
        return found
    cuda = load_pycuda()
    if device_index >= cuda.Device.count():
        raise GpuUnavailable(f"no GPU {device_index}: the driver shows {cuda.Device.count()}")
    dev = cuda.Device(device_index)
    version = cuda.get_driver_version()
    return {"name": dev.name(), "memory_bytes": int(dev.total_memory()),
            "driver": f"CUDA {version // 1000}.{version % 1000 // 10}"}


def driver_version() -> str:
    """NVML's driver version ('580.82.07'), or '' where NVML does not answer."""
    return _nvml(lambda nvml: _text(nvml.nvmlSystemGetDriverVersion())) or ""


def _nvml(query):
    """``query(pynvml)`` between NVML's init and shutdown; None where NVML or the query fails."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return None
    try:
        return query(pynvml)
    except Exception:
        return None
    finally:
        pynvml.nvmlShutdown()


def _text(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)
