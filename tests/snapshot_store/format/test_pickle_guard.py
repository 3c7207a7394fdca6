"""The memo check that keeps a hostile pickle from making the C unpickler allocate gigabytes."""

from __future__ import annotations

import pickle
import pickletools
import random

import pytest

from snapshot_store.format import batches
from snapshot_store.format import frames as fmt
from snapshot_store.format.pickle_guard import (
    MAX_DEPTH,
    MAX_TEXT,
    _names_no_index,
    _walk,
    memo_problem,
    value_problem,
)

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
    assert not _names_no_index(payload)


def _seeds() -> list[bytes]:
    """Small pickles of every protocol: strings holding ``r`` and ``p``, runs, long strings."""
    docs = [
        {"state": "running", "replace": "p1\nr", "series": {"train/loss": {"last": 0.5}}},
        [[1.5] * 3, [2.5] * 8, [3.5] * 9, [7] * 20, list(range(300, 340))],
        ["x" * 300, b"y" * 300, 2**70, "\n", None, True, (1, 2, 3)],
    ]
    payloads = [
        pickle.dumps(d, protocol=p) for d in docs for p in range(pickle.HIGHEST_PROTOCOL + 1)
    ]
    return payloads + HOSTILE


def _mutated(rng: random.Random, payload: bytes) -> bytes:
    """``payload`` with a memo index put where an opcode starts, a byte changed, or cut."""
    try:
        starts = [pos for _, _, pos in pickletools.genops(payload)]
    except ValueError:  # a hostile seed
        starts = [0]
    choice = rng.randrange(4)
    if choice == 0:  # a PUT or LONG_BINPUT where an opcode starts, small or huge index
        at = rng.choice(starts)
        index = rng.choice([0, 1, 5, 30, 2**31 - 1, rng.randrange(2**32)])
        op = b"r" + index.to_bytes(4, "little") if rng.random() < 0.7 else b"p%d\n" % index
        return payload[:at] + op + payload[at:]
    at = rng.randrange(len(payload))
    if choice == 1:
        return payload[:at] + bytes([rng.randrange(256)]) + payload[at + 1 :]
    if choice == 2:
        return payload[:at] + rng.choice([b"r", b"p", b"G", b"\x8c"]) + payload[at:]
    return payload[:at]


def test_the_fast_pass_says_no_index_only_where_the_walk_finds_no_problem():
    rng = random.Random(3)
    seeds, refused = _seeds(), 0
    for _ in range(3000):
        payload = _mutated(rng, rng.choice(seeds))
        problem = _walk(payload)
        refused += problem is not None
        assert memo_problem(payload) == problem
        if _names_no_index(payload):
            assert problem is None, payload
    assert refused > 300  # the mutations reach the check, not only the unpickler's errors


def test_the_stores_documents_take_the_fast_pass():
    # not a timing: a store document walked in Python cost six times its unpickling
    meta = {"name": "run", "options": {"lr": [0.1, 0.01], "argv": ["train.py"] * 3}}
    status = {"state": "running", "series": {f"s{i}": {"last": 0.5, "step": 9} for i in range(300)}}
    for doc in (meta, status, _documents()[0]):
        assert _names_no_index(fmt.dumps(doc))


def test_loads_refuses_it_before_the_unpickler_runs():
    # 2**24: without the check the unpickler would take 256 MB and succeed, and
    # this test fail, without endangering the machine that runs it.
    with pytest.raises(fmt.UnsafePickleError, match="huge memo"):
        fmt.loads(b"\x80\x04]r\x00\x00\x00\x01.", "scalars-00000000.pickle")


@pytest.mark.parametrize(
    "payload",
    [
        *(b"", b"]r\xff", b"(lp12", b"\xff\xfe", b"\x80\x04\x95\x00", b"cos\nsystem\n)R."),
        b"\x8d" + b"\xff" * 8 + b"r\xff\xff\xff\x7f.",  # a length past any payload
    ],
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


# --- the budget of what a payload unpickles to -----------------------------------------------


def _dag(levels: int) -> list:
    node: list = []
    for _ in range(levels):
        node = [node, node]
    return node


def _holds_itself() -> dict:
    loop: dict = {"a": 1}
    loop["self"] = loop
    return loop


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ({"lr": 10**5000}, "integer of 16,610 bits"),
        ({"updated": 10**400}, "past what a float holds"),
        ({"updated": -(10**400)}, "past what a float holds"),
        ({(10**400,): 1}, "past what a float holds"),  # a key is walked too
        (_holds_itself(), "holds itself"),
        ({"x": _dag(40)}, "shared one counted each time"),
        ({"x": [[0.5] * 100_000] * 200}, "shared one counted each time"),  # in a small level
        ({"x": "y" * (MAX_TEXT + 1)}, "a str of"),
        ({"x": [b"y" * (MAX_TEXT + 1)]}, "a bytes of"),
    ],
    ids=["huge-int", "int-past-float", "negative", "key", "cycle", "dag", "wide", "str", "bytes"],
)
def test_a_value_over_the_budget_is_named(value, why):
    assert why in value_problem(value)


def test_lists_nested_200000_deep_are_refused_without_recursion():
    payload = b"(" * 200_000 + b"l" * 200_000 + b"."
    with pytest.raises(fmt.OverBudgetError, match=r"nested more than 128 deep"):
        fmt.decode_document(fmt.encode_frame(payload), "status.pickle")


def test_a_bomb_document_is_refused_by_decode_document_naming_the_file():
    frame = fmt.encode_document({"options": {"x": _dag(40)}})
    assert len(frame) < 2_000  # a kilobyte that a walk would reach 2**40 times
    with pytest.raises(fmt.OverBudgetError, match=r"^r/status\.pickle: more than 1,000,000"):
        fmt.decode_document(frame, "r/status.pickle")


def test_what_a_writer_writes_is_within_the_budget():
    deep: object = 0.5
    for _ in range(MAX_DEPTH - 1):
        deep = {"k": deep}
    inside = [
        *_documents(),
        {"n": float("nan"), "i": float("inf"), 1: None, (1, 2): frozenset({3}), "s": {4}},
        {"big": 2**1000, "neg": -(2**1000), "bool": True, "shared": [_dag(10)] * 10},
        deep,
        {f"k{i}": i for i in range(100_000)},
    ]
    for value in inside:
        assert value_problem(value) is None
