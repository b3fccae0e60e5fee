"""The compiled reader of the loop's host_reader = words (kernels/host_read.c): built by nvcc, it sums every word
in turn into a double, and takes contiguous uint32 words alone (no GPU needed)."""

import shutil

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")


def test_the_words_reader_sums_every_word_into_a_double(tmp_path, monkeypatch):
    monkeypatch.setenv("UMPROF_CACHE_DIR", str(tmp_path))
    from umprof.measure.host_read import prepare, sum_words

    prepare()
    words = np.arange(1, 300_001, dtype=np.uint32)
    assert sum_words(words) == 300_000 * 300_001 / 2
    assert sum_words(np.full(1024, 2**32 - 1, dtype=np.uint32)) == 1024 * (2**32 - 1)  # no 32-bit wrap
    assert sum_words(words[:0]) == 0.0
    assert sum_words(words[10:20]) == sum(range(11, 21))  # a view from its own first word
    for bad in (words.astype(np.uint64), words[::2]):
        with pytest.raises(ValueError, match="contiguous uint32"):
            sum_words(bad)
