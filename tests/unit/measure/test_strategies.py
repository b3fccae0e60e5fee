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
