"""The judged runs' JSON a row a line: the same document back, each row on one line."""

import json

from benchmarks.apps.rows_json import rows_a_line


def test_a_document_reads_back_the_same_with_each_row_on_a_line():
    doc = {"gpu": "NVIDIA H200", "rounds": 3, "judged": [{"app": "a", "s": 0.5}, {"app": "b", "s": None}],
           "apps": [], "tie": {"held": 2}}
    text = rows_a_line(doc)
    assert json.loads(text) == doc
    assert '  {"app":"a","s":0.5},' in text.splitlines() and '  {"app":"b","s":null}' in text.splitlines()
