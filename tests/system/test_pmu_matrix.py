# SPDX-License-Identifier: MIT
"""The PMU-detection matrix: every TCG configuration and CPUID persona decides as the table says."""
import os
import re
import subprocess
import sys

import conftest
import pytest

MATRIX = os.path.join(conftest.ROOT, "tools", "pmu_matrix.py")
TABLE = os.path.join(conftest.ROOT, "vm-configs", "configs.toml")
import vmconfig

pytestmark = pytest.mark.qemu  # every configuration of the matrix boots


def matrix(*args):
    return subprocess.run([sys.executable, MATRIX, "--kernel", conftest.KERNEL, "--kernel-a64", conftest.KERNEL_A64,
                           "--kernel-rv64", os.path.join(conftest.BUILD, "riscv64", "kernel.elf"), *args],
                          capture_output=True, text=True, timeout=600)


def rows(out):
    """{(config, persona): result} from the table printed by pmu_matrix.py."""
    return {(m[1], m[2]): m[3] for m in re.finditer(r"^(\S+)\s+(\S+)\s+.*\s(PASS|FAIL|SKIP)$", out, re.M)}


# One run of the whole TCG matrix serves both tests below (each row boots a guest: ~50 s for all):
# it runs on a copy of the table with one expected outcome corrupted, so every other row must
# pass and exactly that one fail; the corrupted row's true expectation is checked by running that
# row alone on the real table.
CORRUPT_ROW = ("tcg-qemu64", "intel-v4")
TRUE_DECISION = 'decision = "tick only: counter did not count*"'


@pytest.fixture(scope="module")
def corrupted_run(tmp_path_factory):
    text = open(TABLE).read()
    block = text.index('name = "intel-v4"')
    i = text.index(TRUE_DECISION, block)
    bad = text[:i] + 'decision = "pmu/nmi intel fixed-ctr1"' + text[i + len(TRUE_DECISION):]
    copy = tmp_path_factory.mktemp("matrix") / "configs.toml"
    copy.write_text(bad)
    return matrix("--tcg-only", "--table", str(copy))


def test_matrix_passes_for_every_tcg_row_and_persona(corrupted_run):
    r = corrupted_run
    got = rows(r.stdout)
    table = vmconfig.load()
    for name, cfg in table["config"].items():
        assert got[(name, "-")] == ("SKIP" if cfg["accel"] == "kvm" else "PASS"), r.stdout
    for name, p in table["persona"].items():
        want = "FAIL" if (p["base"], name) == CORRUPT_ROW else "PASS"
        assert got[(p["base"], name)] == want, r.stdout
    # aarch64 (TCG emulates PMUv3): at least two rows sample from the PMU, each after the counting
    # proof ("counted N cycles" in its decision), and pmu=off falls back to the tick
    pmu_rows = re.findall(r"^(tcg-a64-\S+)\s+-\s+.*counted \d+ cycles.*pmu/pnmi armv8 cycle-counter\s.*PASS$", r.stdout, re.M)
    assert len(pmu_rows) >= 2, r.stdout
    assert re.search(r"^tcg-a64-max-pmuoff\s+-\s+.*tick only: no PMU claimed.*tick 100 Hz.*PASS$", r.stdout, re.M), r.stdout
    # KVM rows are listed with the reason they were skipped
    assert re.search(r"^SKIP kvm-\S+ / -: .+", r.stdout, re.M)
    # each persona that claims a counter was caught by the probe, which spins its whole bound
    # (~10 us of guest TSC) before deciding; how much longer is up to the host (no upper bound)
    for probe in re.findall(r"counter did not count \(probe ([\d.]+) us\)", r.stdout):
        assert float(probe) >= 9.5, r.stdout


def test_corrupting_one_expected_outcome_fails_exactly_that_row(corrupted_run):
    r = corrupted_run
    assert r.returncode == 1, r.stdout
    got = rows(r.stdout)
    assert [k for k, v in got.items() if v == "FAIL"] == [CORRUPT_ROW], r.stdout
    assert "FAIL tcg-qemu64 / intel-v4: decision 'tick only: counter did not count" in r.stdout
    # ...and on the real table that row passes: the failure was the corruption's
    alone = matrix("--tcg-only", "--only", CORRUPT_ROW[1])
    assert alone.returncode == 0, alone.stdout + alone.stderr
    assert rows(alone.stdout)[CORRUPT_ROW] == "PASS", alone.stdout


def test_kvm_rows_where_kvm_works():
    ok, why = vmconfig.kvm_usable()
    if not ok:
        pytest.skip(f"KVM rows need a usable /dev/kvm: {why}")
    kvm = [n for n, c in vmconfig.load()["config"].items() if c["accel"] == "kvm"]
    r = matrix(*sum((["--only", n] for n in kvm), []))
    assert r.returncode == 0, r.stdout + r.stderr
    got = rows(r.stdout)
    assert all(got[(n, "-")] in ("PASS", "SKIP") for n in kvm), r.stdout
    assert any(got[(n, "-")] == "PASS" for n in kvm), r.stdout  # at least pmu=off runs anywhere KVM does
