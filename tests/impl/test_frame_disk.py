"""The frame format and the two disks."""
from __future__ import annotations

import os

import pytest

from isrcheck.impl.core.messages import FetchResponse, LeaderAndIsr, MessageError, Persist, Record
from isrcheck.impl.disk.log import FileDisk, SimDisk
from isrcheck.impl.disk.segment_format import encode_records
from isrcheck.impl.wire.frame import (
    HEADER, MAGIC, BadMagic, FrameDecoder, Malformed, Oversized, Unauthenticated, UnknownType, UnsupportedVersion,
    decode_message,
    encode_frame, encode_message,
)


def test_messages_round_trip_through_frames():
    msgs = [LeaderAndIsr(3, 0, 2, (1, 2), 5, 7, (1, 2, 3), 2),
            FetchResponse(0, 1, 4, "", (Record(9, 2, "x"),), 3, 5)]
    data = b"".join(encode_message(m) for m in msgs)
    dec = FrameDecoder()
    got = []
    for i in range(0, len(data), 7):  # fed in pieces
        got += dec.feed(data[i:i + 7])
    assert [decode_message(o) for o in got] == msgs


@pytest.mark.parametrize("data, error", [
    (b"XX" + bytes(8), BadMagic),
    (HEADER.pack(MAGIC, 4, 1, 0, 0), UnsupportedVersion),  # 2 is the stateless authenticated frame
    (HEADER.pack(MAGIC, 3, 1, 0, 0), Unauthenticated),  # 3 is a channel's (wire.channel): a secret is needed
    (HEADER.pack(MAGIC, 1, 9, 0, 0), UnknownType),
    (HEADER.pack(MAGIC, 1, 1, 0, 10_000_000), Oversized),
    (HEADER.pack(MAGIC, 1, 1, 0, 3) + b"\xff\xfe!", Malformed),
    (HEADER.pack(MAGIC, 1, 1, 0, 2) + b"[]", Malformed),
])
def test_the_decoder_refuses_bad_frames_with_a_clear_error(data, error):
    dec = FrameDecoder()
    with pytest.raises(error) as info:
        dec.feed(data)
    assert str(info.value)
    with pytest.raises(error):  # the stream stays refused
        dec.feed(encode_frame({"type": "x"}))


def test_unknown_or_malformed_messages_are_refused_one_level_up():
    with pytest.raises(MessageError, match="unknown message type"):
        decode_message({"type": "Nope"})
    with pytest.raises(MessageError, match="missing field"):
        decode_message({"type": "FetchRequest", "partition": 0})
    with pytest.raises(MessageError, match="unexpected value"):
        decode_message({"type": "FetchRequest", "partition": "0", "follower": 1, "offset": 0})
    with pytest.raises(Oversized):
        encode_frame({"blob": "a" * 100}, max_payload=10)


def test_sim_disk_loses_only_unflushed_data_on_power_loss():
    d = SimDisk()
    d.apply(Persist("create", 0))
    d.apply(Persist("append", 0, (Record(1, 0), Record(2, 0))))
    d.apply(Persist("flush", 0))
    d.apply(Persist("append", 0, (Record(3, 0),)))
    d.apply(Persist("checkpoint", 0, 3))
    d.crash()
    assert len(d.image().logs[0]) == 3  # a process crash keeps the page cache
    d.power_loss()
    img = d.image()
    assert [r.id for r in img.logs[0]] == [1, 2] and img.checkpoints[0] == 3 and d.hw_on_disk(0) == 2
    d.power_loss({0: 1})
    assert [r.id for r in d.image().logs[0]] == [1]


def test_file_disk_round_trip_truncation_and_a_torn_record(tmp_path):
    d = FileDisk(tmp_path)
    d.apply(Persist("create", 0))
    d.apply(Persist("append", 0, (Record(1, 0, "a"), Record(2, 0, "b"), Record(3, 1, "c"))))
    d.apply(Persist("truncate", 0, 2))
    d.apply(Persist("append", 0, (Record(4, 2, "d"),)))
    d.apply(Persist("flush", 0))
    d.apply(Persist("checkpoint", 0, 2))
    d.apply(Persist("create", 1))
    d.apply(Persist("delete", 1))
    d.close()
    torn, _ = encode_records(3, [Record(5, 2, "e")])
    with open(tmp_path / "0" / "00000000000000000000.log", "ab") as f:
        f.write(torn[:-3])  # a crash in the middle of a write
    img = FileDisk(tmp_path).image()
    assert [(r.id, r.epoch, r.value) for r in img.logs[0]] == [(1, 0, "a"), (2, 0, "b"), (4, 2, "d")]
    assert img.checkpoints == {0: 2} and 1 not in img.logs
    assert os.path.getsize(tmp_path / "0" / "00000000000000000000.log") > 0
