"""The explicit-copy strategies' host buffers without a GPU: each is freed the way it was taken (a
registered malloc'd buffer unregistered, pageable memory left to numpy)."""

from umprof.measure import strategies


class _Device:
    def __init__(self, log):
        self.log = log

    def __int__(self):
        return 0x1000

    def free(self):
        self.log.append("free device")


class _Cuda:
    def __init__(self, log):
        self.log = log

    def mem_alloc(self, n):
        return _Device(self.log)


class _Session:
    def __init__(self):
        self.log = []
        self.cuda = _Cuda(self.log)

    def check_device_alloc(self, n):
        pass

    def check_host_alloc(self, n):
        pass

    def host_register(self, ptr, n):
        self.log.append(("register", ptr, n))
        return ptr

    def host_unregister(self, ptr):
        self.log.append(("unregister", ptr))


def test_a_registered_buffer_is_unregistered_where_it_was_registered():
    s = _Session()
    st = strategies.get("pageable-registered")
    buf = st.allocate(s, 1 << 20)
    assert s.log == [("register", buf.host.ctypes.data, 1 << 20)] and buf.host.ctypes.data % 4096 == 0
    st.free(s, buf)
    assert s.log[1:] == ["free device", ("unregister", s.log[0][1])] and not buf.handles


def test_pageable_memory_is_left_to_numpy():
    s = _Session()
    st = strategies.get("pageable")
    st.free(s, st.allocate(s, 4096))
    assert s.log == ["free device"]


def test_copies_in_parts_are_equal_aligned_synchronous_copies_that_cover_the_bytes():
    """An application's records: ``parts`` synchronous copies one after another, 4-byte aligned, together
    exactly the bytes asked for, each from its own offset of both buffers."""
    calls = []

    class Cuda(_Cuda):
        def memcpy_htod(self, dst, src):
            calls.append(("htod", dst, src.ctypes.data, src.nbytes))

        def memcpy_dtoh(self, dst, src):
            calls.append(("dtoh", src, dst.ctypes.data, dst.nbytes))

    s = _Session()
    s.cuda = Cuda(s.log)
    st = strategies.get("pageable")
    buf = st.allocate(s, 1 << 20)
    for to_device, kind in ((True, "htod"), (False, "dtoh")):
        calls.clear()
        st.copy_parts(s, buf, 10_000, 3, to_device=to_device)
        assert [c[0] for c in calls] == [kind] * 3
        assert [c[3] for c in calls] == [3332, 3332, 3336] and all(c[3] % 4 == 0 for c in calls)
        offsets = [c[1] - buf.device_ptr for c in calls]
        assert offsets == [c[2] - buf.host.ctypes.data for c in calls] == [0, 3332, 6664]


def test_malloced_pages_are_a_mapping_of_their_own_that_the_pageable_strategies_take():
    """host_pages = malloc: a page-aligned, writable mapping of exactly the bytes (an anonymous mmap with no
    advice, as glibc's malloc makes for large buffers); the strategies whose buffer is pageable memory take
    it, the others ignore it."""
    import mmap

    import pytest

    a = strategies.pageable_empty(8 << 20, "malloc")
    assert a.size == 8 << 20 and a.ctypes.data % 4096 == 0 and a.flags.writeable
    assert isinstance(a.base.obj, mmap.mmap)  # numpy holds the mapping through a memoryview
    s = _Session()
    for name in ("pageable", "pageable-registered", "mapped", "pageable-staged", "system"):
        assert strategies.get(name).malloc_backed
    buf = strategies.get("pageable-registered").allocate(s, 1 << 20, "malloc")
    assert isinstance(buf.host.base.obj, mmap.mmap) and s.log == [("register", buf.host.ctypes.data, 1 << 20)]
    assert not strategies.get("pinned").malloc_backed and not strategies.get("managed").malloc_backed
    with pytest.raises(ValueError, match="pages: expected one of numpy, malloc, got 'huge'"):
        strategies.pageable_empty(4096, "huge")


def test_the_free_of_malloced_pages_gives_them_back_to_the_kernel_and_numpys_are_left_to_numpy():
    """A C program's free() of its malloc'd buffer unmaps every page it touched, which the applications'
    traces measured (0.04-0.05 s a GiB): every malloc-backed strategy's free does that work (the pages read
    as fresh zeros after), after unregistering a registered buffer; numpy's pages keep their data."""
    for name in ("pageable", "pageable-registered", "mapped", "system"):
        s = _Session()
        st = strategies.get(name)
        buf = st.allocate(s, 1 << 20, "malloc")
        host = buf.host
        host[:] = 7
        st.free(s, buf)
        assert not host.any(), name  # the pages were given back: a touch now maps fresh zeros
        assert not buf.handles, name
        if name in ("pageable-registered", "mapped"):
            assert s.log[-1] == ("unregister", host.ctypes.data), name
    s = _Session()
    st = strategies.get("pageable")
    buf = st.allocate(s, 1 << 20)  # numpy's pages
    host = buf.host
    host[:] = 7
    st.free(s, buf)
    assert (host == 7).all()
    strategies.release_pages(host[:10].view("u2"))  # a view of numpy's memory: nothing to release
    assert (host == 7).all()
