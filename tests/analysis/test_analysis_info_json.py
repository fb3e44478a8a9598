# SPDX-License-Identifier: MIT
"""`info --json`: one object in the schema docs/json.md describes -- every key it writes is
documented there and every documented key is written, for each capture version; the numbers are
the text info's; absent facts are null; a damaged capture still gives JSON, exit 3."""
import json
import os
import re

import pytest

import analyze
import capgen

DOC = os.path.join(analyze.ROOT, "docs", "json.md")
CAPTURES = ["sample.cap", "sample_v2.cap", "sample_v3.cap", "sf_small.cap"]


def info_json(*args):
    r = analyze.call("info", "--json", *args)
    return r, json.loads(r.stdout)


def documented_keys():
    """The keys of the `info` section's table in docs/json.md (a row may name several)."""
    with open(DOC) as f:
        text = f.read()
    section = text.split("## `info`", 1)[1].split("\n## ", 1)[0]
    keys = set()
    for row in re.findall(r"^\| (`[^|]+) \|", section, re.M):
        keys |= set(re.findall(r"`([a-z_]+)`", row))
    return keys


@pytest.mark.parametrize("cap", CAPTURES)
def test_every_key_is_documented_and_every_documented_key_is_written(cap):
    r, doc = info_json(cap)
    assert r.returncode == 0, r.stderr
    written = set(doc) - {"schema", "schema_version"}
    assert written == documented_keys()
    assert (doc["schema"], doc["schema_version"]) == ("gdbsample-analyze info", 3)


def test_numbers_are_the_text_infos():
    r, doc = info_json("sample_v3.cap")
    text = analyze.call("info", "sample_v3.cap").stdout
    m = re.search(r"samples +(\d+) in the file: (\d+) not idle, (\d+) idle", text)
    assert (doc["samples"]["total"], doc["samples"]["not_idle"], doc["samples"]["idle"]) == tuple(map(int, m.groups()))
    for cpu in doc["cpus"]:
        line = re.search(r"cpu%d +(\d+) samples: (\d+) idle, (\d+) interrupts off, (\d+) user, (\d+) partial"
                         % cpu["cpu"], text)
        assert (cpu["samples"], cpu["idle"], cpu["irqoff"], cpu["user"], cpu["partial"]) == tuple(map(int, line.groups()))
    assert "%d tasks" % len(doc["tasks"]["list"]) in text
    assert doc["tasks"]["os"] == "linux" and doc["summary"]["dropped"] == 2
    assert doc["kaslr"]["offset"] == "0x0" and doc["stext"] == "0xffffffff80100000"


def test_facts_a_version_1_capture_lacks_are_null():
    r, doc = info_json("sample.cap")
    assert doc["capture"]["version"] == 1
    for key in ("kaslr", "stext", "methods", "tasks", "modules", "phases"):
        assert doc[key] is None, key
    assert doc["samples"]["exact"] is None


def test_addresses_are_hex_strings_that_keep_64_bits():
    r, doc = info_json("sample_v3.cap")
    assert doc["kernel"]["hi"] == "0xffffffffffffffff" and doc["kernel"]["lo"] == "0xffff800000000000"


def test_a_damaged_capture_still_gives_json_with_exit_3(tmp_path):
    with open(os.path.join(analyze.DATA, "sample.cap"), "rb") as f:
        data = f.read()
    cut = tmp_path / "cut.cap"
    cut.write_bytes(data[:-30])
    r, doc = info_json(str(cut))
    assert r.returncode == 3
    assert doc["integrity"]["intact"] is False and "truncated" in doc["integrity"]["problem"]
    assert doc["summary"] is None


def test_an_infinite_summary_number_is_text_not_invalid_json(tmp_path):
    """A summary value no float holds (1e400) is not a JSON number: written as its text."""
    path = tmp_path / "inf.cap"
    capgen.write(str(path), [(1000, 0, 0, [0xffffffff80100010])], summary={"weird_ratio": "1e400",
                                                                          "duration_ns": 5})
    r = analyze.call("info", "--json", str(path))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)                     # strict parse: no Infinity token
    assert doc["summary"]["weird_ratio"] == "inf" and doc["summary"]["duration_ns"] == 5
    assert "Infinity" not in r.stdout
