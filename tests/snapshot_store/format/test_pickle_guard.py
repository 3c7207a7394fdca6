"""The memo check that keeps a hostile pickle from making the C unpickler allocate gigabytes."""

from __future__ import annotations

import pickle
import pickletools
import random

import pytest

from snapshot_store.format import batches
from snapshot_store.format import frames as fmt
from snapshot_store.format.pickle_guard import memo_problem

# Each names a memo index far beyond its opcodes: the C unpickler of Python 3.11
# zeroes a memo table twice that long (gigabytes) before storing the object.
HOSTILE = [
    b"]r\xff\xff\xff\x7f.",  # LONG_BINPUT 2**31 - 1
    b"]replace.",  # the reproducer of CPython gh-115952: 'epla' read as an index
    b"\x80\x04]r\x00\x00\x000.",  # inside a protocol-4 pickle
    b"(lp1000000000\n.",  # PUT, the text form
    b"\x80\x02]q\x00]r\x00\x10\x00\x00.",  # after a legitimate BINPUT
    pickle.dumps([1.0] * 3000, protocol=4)[:-1] + b"r\x00\x00\x00\x10.",  # after a long run
]


def _documents() -> list[object]:
    rng = random.Random(7)
    n = 3000
    column = [rng.random() for _ in range(n)]
    shared = ["a", "b"]
    return [
        {
            "v": 1,
            "series": [
                ("train", "loss", list(range(n)), [0] * n, [1.7e9 + i for i in range(n)], column)
            ],
        },
        [[1, 2], [3, "x" * 300], ("a", "a"), b"xx" * 100, {"k": [1.5] * 10}],
        list(range(2**31, 2**31 + 1500)) * 2,  # LONG1 ints
        [f"s{i}" for i in range(600)] * 2,  # more than 256 memo entries: LONG_BINPUT in protocol 2
        [shared] * 400,
        [None, True, False, -1, 2**70, 1.5, "é", b"\x00", bytearray(b"ab")],
    ]


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_every_pickle_python_writes_passes(protocol):
    for doc in _documents():
        payload = pickle.dumps(doc, protocol=protocol)
        assert memo_problem(payload) is None
        # the walk and pickletools agree on where the opcodes are
        assert [op for op, _, _ in pickletools.genops(payload)][-1].name == "STOP"


@pytest.mark.parametrize("payload", HOSTILE)
def test_a_memo_index_beyond_the_opcodes_is_refused(payload):
    assert "index" in memo_problem(payload)


def test_loads_refuses_it_before_the_unpickler_runs():
    # 2**24: without the check the unpickler would take 256 MB and succeed, and
    # this test fail, without endangering the machine that runs it.
    with pytest.raises(fmt.UnsafePickleError, match="huge memo"):
        fmt.loads(b"\x80\x04]r\x00\x00\x00\x01.", "scalars-00000000.pickle")


@pytest.mark.parametrize(
    "payload",
    [b"", b"]r\xff", b"(lp12", b"\xff\xfe", b"\x80\x04\x95\x00", b"cos\nsystem\n)R."],
)
def test_what_the_unpickler_rejects_itself_passes_the_walk(payload):
    assert memo_problem(payload) is None
    with pytest.raises(fmt.StoreError):
        fmt.loads(payload)


def test_a_frame_sharing_one_list_many_times_is_one_bad_record():
    column = list(range(1000))
    entry = ("train", "loss", column, column, column, column)
    payload = pickle.dumps({"v": 1, "series": [entry] * 10_000}, protocol=4)
    good, problems = batches.scalar_records(payload, "scalars-00000000.pickle")
    assert good == []
    assert problems == [f"scalar frame of {len(payload)} bytes shares one object many times over"]


def test_a_frame_of_plain_records_is_not_taken_for_sharing():
    rows = [("train", f"loss_{i}", [1, 2], [0, 0], [1.0, 2.0], [0.5, 0.25]) for i in range(50)]
    good, problems = batches.scalar_records(batches.encode_scalar_batch(rows)[12:-4], "s")
    assert (len(good), problems) == (50, [])
