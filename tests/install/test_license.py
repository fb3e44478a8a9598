# SPDX-License-Identifier: MIT
"""The licence: LICENSE is the MIT license of "the gdbsample authors", debian/copyright says the
same (DEP-5's name for it, Expat, with the same text; lintian checks the package in
test_install_deb.py), tools/spdx_headers.py puts the SPDX line where the purpose comment can follow
it, and every tracked source file of ours carries it."""
import os
import re
import subprocess
import sys

import conftest

sys.path.insert(0, os.path.join(conftest.ROOT, "tools"))
import spdx_headers  # noqa: E402


def read(*path):
    with open(os.path.join(conftest.ROOT, *path)) as f:
        return f.read()


def words(text):
    return re.sub(r"\s+", " ", text.replace("\n .\n", "\n\n")).strip()


def test_license_is_mit_of_the_gdbsample_authors():
    text = read("LICENSE")
    assert text.startswith("MIT License\n\nCopyright (c) 2026 the gdbsample authors\n")
    assert "Permission is hereby granted, free of charge" in text and 'PROVIDED "AS IS"' in text


def test_debian_copyright_states_the_same_license():
    text = read("debian", "copyright")
    assert "not-yet-chosen" not in text and "no license" not in text.lower()
    stanzas = text.split("\n\n")
    files = next(s for s in stanzas if s.startswith("Files: *"))
    assert "License: Expat" in files and "2026 the gdbsample authors" in files
    body = next(s for s in stanzas if s.startswith("License: Expat\n"))
    body = "\n".join(line[1:] if line != " ." else "" for line in body.splitlines()[1:])
    permission = read("LICENSE").split("\n\n", 2)[2]      # after the title and the copyright line
    assert words(body) == words(permission)


def test_spdx_line_goes_first_or_after_the_shebang_and_coding_line():
    assert spdx_headers.with_tag("/* x.c: what it is for. */\nint x;\n", "c") == \
        "/* SPDX-License-Identifier: MIT */\n/* x.c: what it is for. */\nint x;\n"
    assert spdx_headers.with_tag('"""m.py: purpose."""\n', "hash") == \
        '# SPDX-License-Identifier: MIT\n"""m.py: purpose."""\n'
    assert spdx_headers.with_tag("#!/usr/bin/python3\n# -*- coding: utf-8 -*-\n\"\"\"t.\"\"\"\n", "hash") == \
        "#!/usr/bin/python3\n# -*- coding: utf-8 -*-\n# SPDX-License-Identifier: MIT\n\"\"\"t.\"\"\"\n"
    assert spdx_headers.with_tag("// SPDX-License-Identifier: MIT\n/* m.c */\n", "c") is None   # has one


def test_spdx_selection_skips_test_data_corpora_and_hidden_dirs():
    style = spdx_headers.comment_style
    assert style("sampler/rsp.c", b"/*") == "c" and style("kernel/arch/x86_64/entry.S", b"") == "c"
    assert style("fuzz/fuzz.mk", b"#") == "hash" and style("Makefile", b"#") == "hash"
    assert style("tools/udpsh", b"#!/usr/bin/python3\n") == "hash"
    assert style("tests/analysis/data/tiny.c", b"") is None       # DWARF lines in committed ELFs
    assert style("fuzz/corpus/rsp/x.c", b"") is None and style(".ci/run", b"#!/bin/bash") is None
    assert style("docs/json.md", b"#") is None


def test_every_source_file_we_wrote_carries_the_spdx_line():
    """tools/spdx_headers.py --check: no tracked source file without it (a new file: run the tool)."""
    r = subprocess.run([sys.executable, os.path.join(conftest.ROOT, "tools", "spdx_headers.py"), "--check"],
                       capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stdout) == (0, ""), "no SPDX line (run tools/spdx_headers.py):\n" + r.stdout
