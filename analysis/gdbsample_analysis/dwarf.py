# SPDX-License-Identifier: MIT
"""dwarf.py: DWARF line tables and inlined-subroutine ranges, each read once into a sorted table.

Both tables are built by one pass over the ELF's DWARF (pyelftools) and then answered by bisect
in symbols.Symbolizer, never by walking DWARF per address.
"""
import os


def _file_name(lineprog, index, comp_dir):
    """File `index` of a line program as a path (relative paths kept relative to comp_dir)."""
    hdr = lineprog.header
    entries = hdr["file_entry"]
    i = index if hdr["version"] >= 5 else index - 1
    if i < 0 or i >= len(entries):
        return None
    ent = entries[i]
    name = ent.name.decode("utf-8", "replace") if isinstance(ent.name, bytes) else ent.name
    dirs = hdr["include_directory"]
    d = ent.dir_index if hdr["version"] >= 5 else ent.dir_index - 1
    if not os.path.isabs(name) and 0 <= d < len(dirs) and not (hdr["version"] >= 5 and d == 0):
        dname = dirs[d].decode("utf-8", "replace") if isinstance(dirs[d], bytes) else dirs[d]
        name = os.path.join(dname, name)
    if comp_dir and os.path.isabs(name) and name.startswith(comp_dir.rstrip("/") + "/"):
        name = name[len(comp_dir.rstrip("/")) + 1:]
    return os.path.normpath(name)


def _comp_dir(cu):
    top = cu.get_top_DIE()
    a = top.attributes.get("DW_AT_comp_dir")
    if a is None:
        return None
    v = a.value
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


def line_table(dwarf):
    """-> (addresses, rows): rows[i] is (file, line) from addresses[i] up to the next entry, or
    None in a gap between sequences. Sorted by address."""
    points = []  # (addr, order, row); end markers sort before a row starting at the same address
    if dwarf is not None:
        for cu in dwarf.iter_CUs():
            prog = dwarf.line_program_for_CU(cu)
            if prog is None:
                continue
            comp = _comp_dir(cu)
            names = {}
            for entry in prog.get_entries():
                st = entry.state
                if st is None:
                    continue
                if st.end_sequence:
                    points.append((st.address, 0, None))
                    continue
                if st.file not in names:
                    names[st.file] = _file_name(prog, st.file, comp)
                if names[st.file] is not None and st.line:
                    points.append((st.address, 1, (names[st.file], st.line)))
    points.sort(key=lambda p: (p[0], p[1]))
    addrs, rows = [], []
    for addr, _, row in points:
        if addrs and addrs[-1] == addr:
            if row is not None:
                rows[-1] = row  # several rows at one address: the last one describes it
            continue
        addrs.append(addr)
        rows.append(row)
    return addrs, rows


def _die_name(die, depth=0):
    """Name of a subprogram DIE, following abstract_origin / specification."""
    if "DW_AT_name" in die.attributes:
        v = die.attributes["DW_AT_name"].value
        return v.decode("utf-8", "replace") if isinstance(v, bytes) else v
    if depth < 4:
        for ref in ("DW_AT_abstract_origin", "DW_AT_specification"):
            if ref in die.attributes:
                return _die_name(die.get_DIE_from_attribute(ref), depth + 1)
    return None


def _ranges(dwarf, cu, die):
    """[(lo, hi)] covered by a DIE (low_pc/high_pc or DW_AT_ranges)."""
    at = die.attributes
    if "DW_AT_low_pc" in at and "DW_AT_high_pc" in at:
        lo = at["DW_AT_low_pc"].value
        hi = at["DW_AT_high_pc"]
        hi = hi.value if hi.form == "DW_FORM_addr" else lo + hi.value
        return [(lo, hi)]
    if "DW_AT_ranges" in at:
        rl = dwarf.range_lists()
        if rl is None:
            return []
        try:
            entries = rl.get_range_list_for_DIE(die)
        except AttributeError:
            entries = rl.get_range_list_at_offset(at["DW_AT_ranges"].value, cu=cu)
        base = cu.get_top_DIE().attributes.get("DW_AT_low_pc")
        base = base.value if base is not None else 0
        out = []
        for e in entries:
            if hasattr(e, "begin_offset"):
                if getattr(e, "is_absolute", False):
                    out.append((e.begin_offset, e.end_offset))
                else:
                    out.append((base + e.begin_offset, base + e.end_offset))
            elif hasattr(e, "base_address"):
                base = e.base_address
        return [(lo, hi) for lo, hi in out if hi > lo]
    return []


def inline_table(dwarf):
    """-> (boundaries, chains): chains[i] is a tuple of (name, call_file, call_line), outermost
    first, of the subroutines inlined in [boundaries[i], boundaries[i+1])."""
    spans = []  # (lo, hi, depth, order, (name, call_file, call_line))
    if dwarf is not None:
        for cu in dwarf.iter_CUs():
            prog = dwarf.line_program_for_CU(cu)
            comp = _comp_dir(cu)
            stack = [(cu.get_top_DIE(), 0)]
            while stack:
                die, depth = stack.pop()
                if die.tag == "DW_TAG_inlined_subroutine":
                    name = _die_name(die) or "?"
                    cf = die.attributes.get("DW_AT_call_file")
                    cl = die.attributes.get("DW_AT_call_line")
                    fname = _file_name(prog, cf.value, comp) if (cf is not None and prog) else None
                    for lo, hi in _ranges(dwarf, cu, die):
                        spans.append((lo, hi, depth, len(spans), (name, fname, cl.value if cl else None)))
                    depth += 1
                for child in die.iter_children():
                    stack.append((child, depth))
    points = sorted({p for s in spans for p in (s[0], s[1])})
    starts = sorted(spans, key=lambda s: s[0])
    bounds, chains, active, k = [], [], {}, 0
    for p in points:
        for key in [key for key, s in active.items() if s[1] <= p]:
            del active[key]
        while k < len(starts) and starts[k][0] <= p:
            if starts[k][1] > p:
                active[starts[k][3]] = starts[k]
            k += 1
        chain = tuple(s[4] for s in sorted(active.values(), key=lambda s: (s[2], s[3])))
        if chains and chains[-1] == chain:
            continue
        bounds.append(p)
        chains.append(chain)
    return bounds, chains
