# SPDX-License-Identifier: MIT
"""Which headers the sampler's layers see: the record that flows between stages (sample.h) is all
the writers, the capture and `top` include -- never the gdb client (gdb.h, rsp.h, conn.h) -- and
the plan, the pure half of sampling, sends nothing either. Read from the compiler's own list of
each file's includes (cc -MM), so an include added anywhere along the way fails here."""
import os
import shutil
import subprocess

import conftest
import pytest

SAMPLER = os.path.join(conftest.ROOT, "sampler")
CLIENT = {"gdb.h", "rsp.h", "conn.h", "sampler.h", "session.h"}  # the protocol and what wraps it
RECORD_USERS = ["sample.h", "writer.h", "capture.h", "topview.h", "fold.c", "report.c", "capture.c",
                "writer_ext.c", "topview.c", "topscreen.c", "plan.h", "plan.c"]


def includes(name):
    """The headers name includes, directly or not (their base names)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler")
    path = os.path.join(SAMPLER, name)
    lang = ["-x", "c"] if name.endswith(".h") else []
    out = subprocess.run([cc, "-std=c11", "-D_GNU_SOURCE", "-MM"] + lang + [path], capture_output=True,
                         text=True, check=True).stdout
    deps = out.replace("\\\n", " ").split(":", 1)[1].split()
    return {os.path.basename(d) for d in deps if os.path.abspath(d) != os.path.abspath(path)}


@pytest.mark.parametrize("name", RECORD_USERS)
def test_the_record_and_its_users_include_no_gdb_client(name):
    seen = includes(name) & CLIENT
    assert not seen, f"{name} includes {sorted(seen)}"


def test_sample_h_is_the_record_alone():
    # the record names its task (task.h, guestos.h for the name's length) and nothing else
    assert includes("sample.h") <= {"task.h", "guestos.h"}
