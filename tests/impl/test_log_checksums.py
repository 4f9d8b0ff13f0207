"""Checksummed logs and checkpoints (impl/disk/segment_format.py, impl/disk/checkpoint_format.py, impl/disk/log.py).

The audit's two findings are the properties tested exhaustively here on a small log: no damaged
byte is ever read as data (every single-bit flip, at every byte and every bit of the segment and
both checkpoints, is refused with an error naming the file and the byte offset, and nothing on disk
is changed; for the segment, one bit of every byte goes through a data directory and all eight
through the segment reader), and recovery cuts only a torn tail (the segment cut at every length keeps exactly the
records that are complete; a checkpoint cut anywhere is refused). ``POSITIONS`` counts the
(byte, bit) positions tested.
"""
from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from isrcheck.impl.core.messages import Persist, Record
from isrcheck.impl.disk import checkpoint_format, segment_format
from isrcheck.impl.disk.errors import CorruptFile, DiskError, UnsupportedFormat
from isrcheck.impl.disk.log import CHECKPOINT_FILE, EPOCH_FILE, SEGMENT_FILE, FileDisk
from isrcheck.impl.process.exit_reason import exit_error

N = 10
RECORDS = [Record(i + 1, i // 4, f"value-{i + 1}") for i in range(N)]  # epochs 0, 0, 0, 0, 1, ... 2
EPOCHS = ((0, 0), (1, 4), (2, 8))
ROOT = Path(__file__).resolve().parents[2]


def write_disk(d: Path) -> tuple[bytes, list[int]]:
    """A data directory with a 10-record segment, both checkpoints; the segment's bytes and record starts."""
    disk = FileDisk(d)
    disk.apply(Persist("create", 0))
    disk.apply(Persist("append", 0, tuple(RECORDS[:3])))
    for r in RECORDS[3:]:
        disk.apply(Persist("append", 0, (r,)))
    disk.apply(Persist("flush", 0))
    disk.apply(Persist("checkpoint", 0, 7))
    disk.apply(Persist("epochs", 0, EPOCHS))
    starts = list(disk._offsets[0])
    disk.close()
    return (d / "0" / SEGMENT_FILE).read_bytes(), starts


def snapshot(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def flips(data: bytes):
    for i in range(len(data)):
        for bit in range(8):
            yield i, bit, data[:i] + bytes([data[i] ^ (1 << bit)]) + data[i + 1:]


def test_the_round_trip_and_the_layout(tmp_path):
    data, starts = write_disk(tmp_path)
    assert data[:8] == b"IKLG\x00\x02\x00\x00" and starts[0] == 8 and len(starts) == N
    img = FileDisk(tmp_path).image()
    assert img.logs == {0: RECORDS} and img.checkpoints == {0: 7} and img.epochs == {0: list(EPOCHS)}
    assert snapshot(tmp_path)[f"0/{SEGMENT_FILE}"] == data  # nothing to repair: nothing rewritten
    odd = Record(11, 3, "h\u00e9 \ud800 \n")  # any str a producer can send, a lone surrogate included
    disk = FileDisk(tmp_path)
    disk.image()
    disk.apply(Persist("append", 0, (odd,)))
    disk.close()
    assert FileDisk(tmp_path).image().logs[0][-1] == odd


def test_every_bit_flip_in_the_segment_is_refused_naming_the_file_and_the_record(tmp_path):
    data, starts = write_disk(tmp_path)
    path = tmp_path / "0" / SEGMENT_FILE
    ends = [*starts[1:], len(data)]
    tested = through_files = 0
    for i, bit, changed in flips(data):
        with pytest.raises((CorruptFile, UnsupportedFormat)) as info:
            segment_format.scan(path, changed)
        if bit == i % 8:  # one bit of every byte also through the broker's disk, from the file
            path.write_bytes(changed)
            with pytest.raises((CorruptFile, UnsupportedFormat)) as from_file:
                FileDisk(tmp_path).image()
            assert str(from_file.value) == str(info.value)
            assert path.read_bytes() == changed  # refused: nothing on disk was changed
            through_files += 1
        msg = str(info.value)
        assert str(path) in msg and len(msg.splitlines()) == 1
        if i < 8:  # the file header: magic, version, flags
            assert any(f"byte {b}" in msg for b in range(8)), msg
        else:
            r = next(k for k in range(N) if starts[k] <= i < ends[k])
            assert isinstance(info.value, CorruptFile) and info.value.offset == starts[r], (i, bit, msg)
            assert f"at byte {starts[r]}: record {r}" in msg
        tested += 1
    assert tested == len(data) * 8 and through_files == len(data)
    print(f"segment: {tested} (byte, bit) positions over {len(data)} bytes ({through_files} through FileDisk), "
          "all refused")


def test_a_changed_id_that_keeps_the_json_valid_is_refused(tmp_path):
    # the audit's example: record 3 of 10 (offset 2) says id 7 instead of 3, its JSON still valid
    data, starts = write_disk(tmp_path)
    path = tmp_path / "0" / SEGMENT_FILE
    at = data.index(b'"id":3', starts[2])
    changed = data[:at] + b'"id":7' + data[at + 6:]
    path.write_bytes(changed)
    with pytest.raises(CorruptFile, match=f"at byte {starts[2]}: record 2: checksum mismatch"):
        FileDisk(tmp_path).image()
    assert path.read_bytes() == changed


def test_a_whole_record_in_the_wrong_place_is_refused(tmp_path):
    data, starts = write_disk(tmp_path)
    path = tmp_path / "0" / SEGMENT_FILE
    path.write_bytes(data[:starts[3]] + data[starts[4]:starts[5]] + data[starts[4]:])  # record 4 twice
    with pytest.raises(CorruptFile, match=f"at byte {starts[3]}: record 3 says it is at offset 4"):
        FileDisk(tmp_path).image()


def test_every_truncation_of_the_segment_keeps_exactly_the_complete_records(tmp_path, caplog):
    data, starts = write_disk(tmp_path)
    path = tmp_path / "0" / SEGMENT_FILE
    ends = [*starts[1:], len(data)]
    caplog.set_level(logging.WARNING, logger="isrcheck.impl")
    for length in range(len(data) + 1):
        path.write_bytes(data[:length])
        disk = FileDisk(tmp_path)
        img = disk.image()
        complete = sum(1 for e in ends if e <= length)
        assert img.logs[0] == RECORDS[:complete], length
        kept = ends[complete - 1] if complete else 8
        assert path.read_bytes() == data[:kept], length  # exactly the torn part is cut, or a header written
        disk.apply(Persist("append", 0, (Record(99, 5, "after"),)))  # and the log goes on from there
        disk.close()
        assert FileDisk(tmp_path).image().logs[0] == [*RECORDS[:complete], Record(99, 5, "after")], length
    assert any("cut a torn last record" in r.getMessage() for r in caplog.records)
    print(f"segment: {len(data) + 1} lengths, each keeping exactly its complete records")


@pytest.mark.parametrize("name, entries", [(CHECKPOINT_FILE, [(0, 7)]), (f"0/{EPOCH_FILE}", list(EPOCHS))])
def test_every_bit_flip_and_every_truncation_of_a_checkpoint_is_refused(tmp_path, name, entries):
    write_disk(tmp_path)
    path = tmp_path / name
    data = path.read_bytes()
    assert data == checkpoint_format.encode(entries) and data.endswith(b"\n") and b"\ncrc32c " in data
    tested = 0
    for _, _, changed in flips(data):
        path.write_bytes(changed)
        with pytest.raises(CorruptFile) as info:
            FileDisk(tmp_path).image()
        assert str(path) in str(info.value) and 0 <= info.value.offset <= len(data)
        assert path.read_bytes() == changed
        tested += 1
    for length in range(len(data)):  # written atomically: a short checkpoint is damage, never a torn write
        path.write_bytes(data[:length])
        with pytest.raises(CorruptFile, match=str(path)):
            FileDisk(tmp_path).image()
        tested += 1
    path.write_bytes(data)
    img = FileDisk(tmp_path).image()
    if name == CHECKPOINT_FILE:
        assert img.checkpoints == dict(entries)
    else:
        assert img.epochs[0] == entries
    print(f"{name}: {len(data) * 8} (byte, bit) flips and {len(data)} truncations, all refused")


def test_files_in_the_earlier_unchecksummed_formats_are_refused_clearly(tmp_path):
    seg = tmp_path / "0" / SEGMENT_FILE
    seg.parent.mkdir(parents=True)
    seg.write_text('{"id": 1, "epoch": 0, "value": "a"}\n{"id": 2, "epoch": 0, "value": "b"}\n')
    with pytest.raises(UnsupportedFormat, match=r"format 1 \(JSON lines without checksums"):
        FileDisk(tmp_path).image()
    seg.write_bytes(segment_format.file_header())
    for name, text in ((CHECKPOINT_FILE, "0\n1\n0 5\n"), (f"0/{EPOCH_FILE}", "0\n1\n0 0\n")):
        (tmp_path / name).write_text(text)
        with pytest.raises(UnsupportedFormat, match=r"format 0 \(Kafka's text format without a checksum"):
            FileDisk(tmp_path).image()
        (tmp_path / name).unlink()
    # a header whose version field changed is damage, not a format (no build writes version 3): issue 30
    seg.write_bytes(b"IKLG\x00\x03\x00\x00")
    with pytest.raises(CorruptFile, match="at byte 4: damaged file header: the version field holds 3"):
        FileDisk(tmp_path).image()


def test_a_refusal_changes_nothing_even_where_a_torn_tail_would_be_cut(tmp_path):
    d0 = FileDisk(tmp_path)
    for p in (0, 1):
        d0.apply(Persist("create", p))
        d0.apply(Persist("append", p, tuple(RECORDS[:3])))
    d0.close()
    torn, _ = segment_format.encode_records(3, [RECORDS[3]])
    with open(tmp_path / "0" / SEGMENT_FILE, "ab") as f:
        f.write(torn[:-1])
    seg1 = tmp_path / "1" / SEGMENT_FILE
    seg1.write_bytes(seg1.read_bytes()[:-1] + b"!")  # the last complete record of partition 1 is damaged
    before = snapshot(tmp_path)
    with pytest.raises(CorruptFile, match="record 2: checksum mismatch"):
        FileDisk(tmp_path).image()
    assert snapshot(tmp_path) == before


def test_a_disk_opened_without_image_checks_the_segment_before_appending(tmp_path):
    write_disk(tmp_path)
    disk = FileDisk(tmp_path)
    disk.apply(Persist("append", 0, (Record(11, 2, "x"),)))
    disk.close()
    assert FileDisk(tmp_path).image().logs[0] == [*RECORDS, Record(11, 2, "x")]
    with pytest.raises(DiskError, match="non-negative"):
        FileDisk(tmp_path).apply(Persist("epochs", 0, ((-1, 0),)))


def test_a_broker_with_a_damaged_disk_exits_2_with_one_error_line(tmp_path):
    data, starts = write_disk(tmp_path)
    path = tmp_path / "0" / SEGMENT_FILE
    path.write_bytes(data[:starts[5] + 20] + bytes([data[starts[5] + 20] ^ 4]) + data[starts[5] + 21:])
    # the store is never reached: the disk is read first
    proc = subprocess.run([sys.executable, "-m", "isrcheck.impl.process.node", "--id", "1", "--data", str(tmp_path),
                           "--store", "embedded:127.0.0.1:9", "--config-json", json.dumps({"generation": "kip-320"})],
                          capture_output=True, text=True, timeout=60, cwd=ROOT, check=False)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert len(errors) == 1 and f"corrupt log segment {path} at byte {starts[5]}: record 5" in errors[0]
    log = tmp_path / "broker-1.log"
    log.write_text("ready broker 1 port 9091\n" + proc.stderr)
    assert exit_error(log) == errors[0]  # what `cluster status` shows beside the stopped broker
    log.write_text("ready broker 1 port 9091\n")
    assert exit_error(log) is None and exit_error(tmp_path / "missing.log") is None


@pytest.mark.cluster
def test_a_broker_refusing_a_damaged_disk_shows_in_restart_and_in_cluster_status(tmp_path):
    from click.testing import CliRunner

    from isrcheck.commands.cluster import cluster

    d = str(tmp_path / "c")
    runner = CliRunner()

    def run(*args: str):
        return runner.invoke(cluster, [*args, "--dir", d], catch_exceptions=False)

    try:
        assert run("up", "--brokers", "1", "--controllers", "1").exit_code == 0
        assert run("create-topic", "--partitions", "1", "--replication-factor", "1").exit_code == 0
        assert run("produce", "--partition", "0", "one", "two", "three").exit_code == 0
        assert run("kill", "--broker", "1").exit_code == 0
        seg = tmp_path / "c" / "data-1" / "0" / SEGMENT_FILE
        data = seg.read_bytes()
        starts = segment_format.scan(seg, data).positions
        assert len(starts) == 3
        seg.write_bytes(data[:starts[1] + 15] + bytes([data[starts[1] + 15] ^ 1]) + data[starts[1] + 16:])
        r = run("restart", "--broker", "1")
        assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
        assert r.output.startswith(f"error: broker-1 exited during start-up: error: corrupt log segment {seg} "
                                   f"at byte {starts[1]}: record 1: checksum mismatch"), r.output
        r = run("status")
        assert f"broker-1 is down: error: corrupt log segment {seg} at byte {starts[1]}" in r.output, r.output
        st = json.loads(run("status", "--json").output)
        assert st["processes"]["broker-1"]["alive"] is False
        assert st["processes"]["broker-1"]["error"].startswith("error: corrupt log segment")
        assert st["processes"]["controller-1"]["error"] is None
    finally:
        run("down")
