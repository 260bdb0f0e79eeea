"""The output file and cutting results to a character limit."""
from __future__ import annotations

import os
import re

import pytest

from raider_sync.shell.output import Clip, OutputFile, clip_region, iter_lines


def write(output: OutputFile, data: bytes) -> None:
    os.write(output.fd, data)


@pytest.fixture
def output():
    out = OutputFile()
    yield out
    out.close()


def expected_clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head, tail = limit - limit // 2, limit // 2
    removed = len(text) - head - tail
    return f"{text[:head]}\n\n... [{removed} characters truncated] ...\n\n{text[len(text) - tail:]}"


def test_output_file_is_unlinked_at_once(output):
    target = os.readlink(f"/proc/self/fd/{output.fd}")
    assert target.endswith("(deleted)")


def test_close_is_idempotent_and_reads_nothing_after(output):
    write(output, b"abc")
    output.close()
    output.close()
    assert output.closed
    assert output.size() == 0
    assert output.clip(0, 3, 10) == ""


@pytest.mark.parametrize("size", [0, 5, 10, 11, 39, 40, 41, 200, 10_000])
def test_clip_region_keeps_first_and_last_halves(output, size):
    text = "".join(chr(ord("a") + i % 26) for i in range(size))
    write(output, text.encode())
    assert clip_region(output.fd, 0, size, 10) == expected_clip(text, 10)


def test_clip_region_counts_multibyte_characters(output):
    text = "é€😀x" * 5000  # 2-, 3- and 4-byte characters
    write(output, text.encode())
    assert clip_region(output.fd, 0, output.size(), 100) == expected_clip(text, 100)


def test_clip_region_of_a_middle_region(output):
    write(output, b"0123456789" * 10)
    assert clip_region(output.fd, 10, 30, 100) == "01234567890123456789"


def test_clip_region_replaces_undecodable_bytes(output):
    write(output, b"ok \xff\xfe end")
    assert clip_region(output.fd, 0, output.size(), 100) == "ok \ufffd\ufffd end"


def test_clip_of_a_large_region_reads_head_and_tail(output):
    chunk = b"x" * (1 << 20)
    write(output, b"HEAD" + chunk * 3 + b"TAIL")
    text = output.clip(0, output.size(), 1000)
    assert text.startswith("HEAD")
    assert text.endswith("TAIL")
    assert f"... [{4 + 3 * (1 << 20) + 4 - 1000} characters truncated] ..." in text


def test_clip_accumulator_matches_clip_region():
    text = "line\n" * 1000
    clip = Clip(50)
    for piece in re.findall(r".{1,7}", text, re.S):
        clip.add(piece)
    assert clip.text() == expected_clip(text, 50)
    assert clip.total == len(text)


def test_clip_accumulator_under_the_limit_keeps_everything():
    clip = Clip(100)
    for word in ["alpha ", "beta ", "gamma"]:
        clip.add(word)
    assert clip.text() == "alpha beta gamma"


def test_filtered_keeps_matching_lines(output):
    write(output, b"ok 1\nFAIL a\nok 2\nFAIL b\n")
    assert output.filtered(0, output.size(), re.compile("FAIL"), 1000) == "FAIL a\nFAIL b\n"


def test_iter_lines_cuts_very_long_lines(output):
    write(output, b"a" * 25 + b"\nshort")
    assert list(iter_lines(output.fd, 0, output.size(), max_line=10)) == [
        "a" * 25, "short"]
    write(output, b"b" * 25)
    pieces = list(iter_lines(output.fd, 31, output.size(), max_line=10))
    assert "".join(pieces) == "b" * 25 and all(len(p) <= 10 for p in pieces)


def test_last_newline(output):
    write(output, b"one\ntwo\nthr")
    assert output.last_newline(0, output.size()) == 8
    assert output.last_newline(8, output.size()) == 8
