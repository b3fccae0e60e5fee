"""The streams family without a GPU: busy time from event intervals, chunking, the pointer
chase's chain and its end, and the cases each op expands to."""

import numpy as np
import pytest

from umprof.measure.ops.latency import chase_chain, chase_end
from umprof.measure.ops.overlap import busy_time
from umprof.measure.staging_ring import chunks
from umprof.measure.scenario import resolve


def test_busy_time_is_the_union_of_intervals():
    assert busy_time([]) == 0
    assert busy_time([(0, 1), (2, 3)]) == 2  # apart
    assert busy_time([(0, 2), (1, 3)]) == 3  # overlapping: counted once
    assert busy_time([(1, 3), (0, 5), (6, 7)]) == 6  # nested, unsorted
    assert busy_time([(0, 1), (1, 2)]) == 2  # touching


def test_chunks_cover_the_buffer_once():
    assert chunks(10, 4) == [(0, 4), (4, 4), (8, 2)]
    assert sum(n for _, n in chunks(256 * 2**20, 3 * 2**20)) == 256 * 2**20


def test_pointer_chase_chain_is_one_cycle_over_every_line():
    words, stride = 4096, 16
    chain = chase_chain(words, stride)
    seen, i = set(), 0
    for _ in range(words // stride):
        seen.add(i)
        i = int(chain[i])
    assert i == 0 and seen == set(range(0, words, stride))  # back at the start after visiting every line
    assert chase_end(chain, words // stride) == 0 and chase_end(chain, 1) == int(chain[0])
    assert chase_end(chain, 10) == chase_end(chain, 4, chase_end(chain, 6))  # a chase goes on where it stopped


def test_the_streams_group_expands_as_documented():
    by = {s.name: s for s in resolve(["streams"])}
    assert set(by) == {"overlap", "overlap-strategies", "staging", "staging-sweep", "staging-loop", "bidirectional",
                       "latency"}
    assert len(by["overlap"].cases()) == 4 * 5 * 3  # chunk x streams x compute, pinned
    labels = [c.label for c in by["staging"].cases()]
    # the ring's shape is the rule's (axes at 0, left out of the names); the sweep names it
    assert "method=pageable direction=h2d bytes=256MiB" in labels
    assert "method=host-copy direction=h2d bytes=1GiB" in labels
    assert "method=pageable-staged direction=d2h bytes=1GiB" in labels and len(labels) == 16
    sweep = [c.label for c in by["staging-sweep"].cases()]
    assert "method=pageable-staged direction=h2d bytes=1GiB chunk=8MiB threads=12" in sweep
    assert "method=host-copy direction=d2h bytes=1GiB threads=15" in sweep and len(sweep) == 2 * (16 + 4 + 1)
    lat = [c.label for c in by["latency"].cases()]
    assert "method=pointer-chase-host" in lat and len(lat) == 3 * 4 + 2
