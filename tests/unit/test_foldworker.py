"""clone-store's fold worker: its frames, and a worker that meets bad input ends without folding or printing."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from continuity.sync.foldworker import FRAME_LIMIT, HEADER, read_frame, serve, write_frame


def test_a_frame_read_back_is_what_was_written() -> None:
    stream = io.BytesIO()
    value = {"rebuild": False, "held": {"20261202": {"a.json": b"\x00\xff{}"}}}
    write_frame(stream, value)
    write_frame(stream, {"folded": 3, "warnings": []})
    stream.seek(0)
    assert read_frame(stream) == value
    assert read_frame(stream) == {"folded": 3, "warnings": []}
    assert read_frame(stream) is None  # the end of the input


def test_a_frame_past_the_limit_is_refused_before_anything_is_written(monkeypatch: pytest.MonkeyPatch) -> None:
    import continuity.sync.foldworker as foldworker

    monkeypatch.setattr(foldworker, "FRAME_LIMIT", 100)
    stream = io.BytesIO()
    with pytest.raises(ValueError, match="past the limit"):
        write_frame(stream, {"held": {"20261202": {"a.json": b"x" * 200}}})
    assert stream.getvalue() == b""


@pytest.mark.parametrize("raw", [
    b"",  # nothing
    b"\x00\x00\x00",  # a header cut short
    (10).to_bytes(HEADER, "big") + b"short",  # a body cut short
    (FRAME_LIMIT + 1).to_bytes(HEADER, "big"),  # a length past the limit: not read, whatever follows
    (2**64 - 1).to_bytes(HEADER, "big") + b"x" * 64,
    (3).to_bytes(HEADER, "big") + b"\xc1\xc1\xc1",  # not msgpack
])
def test_a_bad_frame_reads_as_the_end(raw: bytes) -> None:
    assert read_frame(io.BytesIO(raw)) is None


@pytest.mark.parametrize("asked", [[1, 2], "fold", 7, None])
def test_the_worker_ends_without_folding_on_a_request_that_is_no_mapping(tmp_path: Path, asked: object) -> None:
    source = io.BytesIO()
    write_frame(source, asked)
    source.seek(0)
    answers = io.BytesIO()
    before = sorted(tmp_path.rglob("*"))
    serve(str(tmp_path), source, answers)
    assert answers.getvalue() == b""
    assert sorted(tmp_path.rglob("*")) == before


def test_the_worker_process_answers_a_failed_fold_and_prints_nothing(tmp_path: Path) -> None:
    """A real worker process asked to fold a batch into a folder with no store answers `failed` (the
    parent then rebuilds from the files), writes nothing there and nothing on stderr."""
    frame = msgspec.msgpack.encode({"rebuild": True, "held": {}})
    before = sorted(tmp_path.rglob("*"))
    process = subprocess.run([sys.executable, "-m", "continuity.sync.foldworker", str(tmp_path)],
                             input=len(frame).to_bytes(HEADER, "big") + frame, capture_output=True, timeout=60)
    answer = read_frame(io.BytesIO(process.stdout))
    assert answer == {"failed": f"FileNotFoundError: no store at {tmp_path}/.agent/runtime-continuity"}
    assert process.stderr == b"" and process.returncode == 0 and sorted(tmp_path.rglob("*")) == before


def test_the_worker_wants_one_argument() -> None:
    process = subprocess.run([sys.executable, "-m", "continuity.sync.foldworker"], capture_output=True, timeout=60)
    assert process.returncode == 2 and process.stdout == b"" and process.stderr == b""
