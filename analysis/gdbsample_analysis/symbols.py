# SPDX-License-Identifier: MIT
"""symbols.py: address -> function name from an ELF .symtab or an nm-style map, plus DWARF lines.

The symbol table is built once, sorted, and bisected per address (the same rules as gdbsample's
sampler/symbols.c, so both name frames alike): function and untyped symbols in executable
sections, one per address (sized before unsized, then by name), a sized symbol covers
[start, start + size), an unsized one runs to the next symbol. DWARF line tables and inlined
subroutines are read once, on first use, into sorted tables too; nothing scans DWARF per address.

Frames are runtime addresses; a symbol file holds link addresses (an ELF, its System.map) or
runtime ones (/proc/kallsyms of the same boot). A Symbolizer's `offset` bridges the two: lookups
subtract it, and the starts they return are runtime addresses. choose_offset picks it for one
capture; rebased(offset) gives a view with it, sharing the tables.

One naming rule for frames (sampler/symbols.c's syms_frame): the leaf (frame 0) and exact frames
(interrupted pcs) are named by their own address, every other frame -- a return address -- by
address - 1, since the call may be the last instruction of its function. is_return(i, exact) says
which, Symbolizer.frame / frame_name apply it.
"""
import bisect
import copy
import os
import re

from . import demangle, inputs
from .folded import safe_name

MAP_TYPES = "tTwW"          # nm types kept from a map: text and weak symbols
MAP_LAST_REACH = 0x100000   # an unsized last symbol of a map covers at most this many bytes
STEXT = "_stext"            # the kernel text's first symbol: where a map says it is (any type)
ETEXT = "_etext"            # the end of the kernel's main text: bounds the unsized symbols below it


def is_return(i, exact=()):
    """True if frame i of a sample is a return address (named by address - 1): neither the leaf
    (i == 0) nor an exact frame (an interrupted pc; exact holds their indexes, Sample.exact)."""
    return i > 0 and i not in exact


def choose_offset(syms, kaslr_offset, stext, forced=None):
    """The offset (runtime - link address) to name one capture's frames with syms.

    forced (--kaslr-offset) wins; an ELF takes the capture's KASLR offset; a map with _stext,
    when the capture knows the runtime _stext, takes stext - map's _stext (right for a link-time
    System.map and for a /proc/kallsyms dump of the same boot alike); else the capture's KASLR
    offset if known (kaslr_offset None = unknown), else 0."""
    if forced is not None:
        return forced
    if not syms.is_elf and syms.stext is not None and stext:
        return stext - syms.stext
    return kaslr_offset if kaslr_offset is not None else 0


class SymbolError(Exception):
    """The symbol file cannot be read (one-line message)."""


_MAP_SPACE = re.compile(r"[ \t\v\f\r]+")   # field separators: ASCII white space, as sampler/symbols.c
_HEX64 = re.compile(r"[0-9A-Fa-f]+")         # ADDR and SIZE: hex digits only (no 0x, sign or "_")


def map_hex(text):
    """A map's ADDR or SIZE field -> int, or None unless it is hex digits that fit 64 bits."""
    if not _HEX64.fullmatch(text):
        return None
    value = int(text, 16)
    return value if value < 1 << 64 else None


def _quote(text):
    """The first 40 characters of text for a message, control and non-ASCII characters as '?'."""
    return "".join(c if " " <= c < "\x7f" else "?" for c in text[:40])


def parse_map(text, marks=None):
    """nm / System.map / kallsyms text ("ADDR TYPE NAME [module]" or "ADDR SIZE TYPE NAME") ->
    [(addr, size, name)] of text symbols; marks, if given, gets the first address of _stext (any
    type). The grammar is sampler/symbols.c's syms_parse_map: lines end at "\\n" (trailing "\\r"
    dropped; nm's undefined "U NAME" lines skipped), fields are separated by ASCII white space,
    ADDR and SIZE are hex digits fitting 64 bits; any other line is refused with its line number
    (SymbolError), never read in part."""
    out, good = [], 0
    for n, line in enumerate(text.split("\n"), 1):
        line = line.rstrip("\r")
        f = [x for x in _MAP_SPACE.split(line) if x][:4]
        if not f:
            continue
        if "\0" in line:
            raise SymbolError("line %d: a NUL byte (not an nm-style symbol map)" % n)
        if len(f) == 2 and f[0] in ("U", "w", "v"):
            continue                        # nm's undefined symbols: no address
        size = map_hex(f[1]) if len(f) == 4 and len(f[2]) == 1 else None
        if size is not None:
            kind, name = f[2], f[3]
        elif len(f) >= 3 and len(f[1]) == 1:
            size, kind, name = 0, f[1], f[2]
        else:
            raise SymbolError("line %d: not an ELF or nm-style symbol map (expected ADDR [SIZE] TYPE "
                              "NAME, got '%s')" % (n, _quote(line)))
        addr = map_hex(f[0])
        if addr is None:
            raise SymbolError("line %d: address '%s' is not a 64-bit hex number" % (n, _quote(f[0])))
        good += 1
        if marks is not None and name in (STEXT, ETEXT):
            marks.setdefault(name, addr)
        if kind in MAP_TYPES:
            out.append((addr, size, name))
    if not good:
        raise SymbolError("empty symbol map")
    return out


def elf_symbols(elf, marks=None):
    """pyelftools ELFFile -> [(addr, size, name)] of functions in executable sections; marks, if
    given, gets the first address of _stext (any type, defined)."""
    from elftools.elf.sections import SymbolTableSection
    SHF_EXECINSTR = 0x4
    out = []
    for sec in elf.iter_sections():
        if not isinstance(sec, SymbolTableSection) or sec["sh_type"] != "SHT_SYMTAB":
            continue
        for s in sec.iter_symbols():
            kind, shndx = s["st_info"]["type"], s["st_shndx"]
            if marks is not None and s.name in (STEXT, ETEXT) and shndx not in (0, "SHN_UNDEF"):
                marks.setdefault(s.name, s["st_value"])
            if kind not in ("STT_FUNC", "STT_NOTYPE") or not isinstance(shndx, int) or shndx == 0:
                continue
            if shndx >= elf.num_sections() or not elf.get_section(shndx)["sh_flags"] & SHF_EXECINSTR:
                continue
            # local labels; aarch64's mapping symbols ($x code, $d data), as sampler/symbols.c
            if not s.name or (kind == "STT_NOTYPE" and s.name[0] in ".$"):
                continue
            sec = elf.get_section(shndx)    # an unsized symbol ends with its section at the latest
            out.append((s["st_value"], s["st_size"], s.name, sec["sh_addr"] + sec["sh_size"]))
    return out


class Symbolizer:
    """A sorted symbol table with bisect lookups; DWARF tables built lazily from the same ELF."""

    def __init__(self, entries, is_elf=False, path=None, stext=None, etext=None):
        """entries: (addr, size, name) or (addr, size, name, limit): limit, where an unsized
        symbol ends at the latest (its ELF section's end)."""
        entries = sorted(entries, key=lambda e: (e[0], e[1] == 0, e[2]))
        try:                     # names as gdbsample shows them: demangled, then made safe
            readable, self.undemangled = demangle.demangle_all(e[2] for e in entries)
        except demangle.DemangleError as err:
            raise SymbolError(str(err)) from None
        self.demangled = len(readable)
        self.starts, self.sizes, self.names, self.limits = [], [], [], []   # parallel, by start
        for e in entries:
            addr, size, name = e[:3]
            if self.starts and self.starts[-1] == addr:
                continue  # one symbol per address: aliases print alike
            self.starts.append(addr)
            self.sizes.append(size)
            self.names.append(safe_name(readable.get(name, name)))   # as every output writes it
            self.limits.append(e[3] if len(e) > 3 else 0)
        self.is_elf = is_elf     # True if loaded from an ELF (unsized symbols run to the next)
        self.path = path         # the ELF, for DWARF tables
        self.stext = stext       # address of _stext in the file, None if it has none
        self.etext = etext       # address of _etext in the file, None if it has none
        self.offset = 0          # runtime - file address: subtracted before every lookup
        self._dwarf_tables = {}  # "lines": (addresses, rows), "inline": (boundaries, chains),
                                 # built once and shared by rebased views

    @classmethod
    def load(cls, path):
        """ELF or nm-style map (detected by content; "-" is stdin) -> Symbolizer; SymbolError on
        failure."""
        shown, path = inputs.name(path), path
        try:
            with inputs.open_input(path) as f:
                data = f.read()
        except OSError as e:
            raise SymbolError("%s: %s" % (shown, e.strerror or e)) from None
        if data[:4] == b"\x7fELF":
            import io
            marks = {}
            try:
                from elftools.elf.elffile import ELFFile
                entries = elf_symbols(ELFFile(io.BytesIO(data)), marks)
            except Exception as e:   # pyelftools on a damaged file: ELFError, but also any other kind
                raise SymbolError("%s: bad ELF: %s" % (shown, one_line(e))) from None
            if not entries:
                raise SymbolError("%s: no function symbols (stripped?)" % shown)
            return cls(entries, is_elf=True, path=path, stext=marks.get(STEXT), etext=marks.get(ETEXT))
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise SymbolError("%s: not an ELF or nm-style symbol map" % shown) from None
        marks = {}
        try:
            entries = parse_map(text, marks)
        except SymbolError as e:
            raise SymbolError("%s: %s" % (shown, e)) from None
        return cls(entries, path=None, stext=marks.get(STEXT), etext=marks.get(ETEXT))

    def rebased(self, offset):
        """This table with another offset (runtime - file address); shares every table."""
        view = copy.copy(self)
        view.offset = offset
        return view

    def __len__(self):
        return len(self.starts)

    def lookup(self, addr):
        """(name, start) of the symbol covering runtime address addr, or None; start is a
        runtime address too. Never past a symbol's size, its ELF section's end, the kernel's
        _etext (for a symbol below it) or, in a map, MAP_LAST_REACH past the last symbol: an
        address there is unknown (shown as the address), as in sampler/symbols.c."""
        addr -= self.offset
        i = bisect.bisect_right(self.starts, addr) - 1
        if i < 0:
            return None
        start, size, limit = self.starts[i], self.sizes[i], self.limits[i]
        if size:
            known = addr - start < size
        elif limit:
            known = addr < limit
        elif self.etext is not None and start < self.etext <= addr:
            known = False
        else:
            known = self.is_elf or i + 1 < len(self.starts) or addr - start <= MAP_LAST_REACH
        return (self.names[i], start + self.offset) if known else None

    @staticmethod
    def frame_addr(addr, is_return):
        """The address that names a frame: a return address's call is at addr - 1."""
        return addr - 1 if is_return else addr

    def frame(self, addr, is_return):
        """(name, start) of the function a frame is in (is_return: see is_return), or None."""
        return self.lookup(self.frame_addr(addr, is_return))

    def frame_name(self, addr, is_return):
        """The function a frame is in, or 0x... of the frame's own address when unknown."""
        s = self.lookup(self.frame_addr(addr, is_return))
        return s[0] if s else "0x%x" % addr

    # -- DWARF --------------------------------------------------------------------------------
    def _dwarf(self):
        if not self.path:
            return None
        from elftools.elf.elffile import ELFFile
        with inputs.open_input(self.path) as f:
            import io
            elf = ELFFile(io.BytesIO(f.read()))
        return elf.get_dwarf_info() if elf.has_dwarf_info() else None

    def _table(self, kind):
        """The DWARF table kind ("lines" or "inline"), built on first use; SymbolError if the
        ELF cannot be read again or its DWARF is damaged."""
        tables = self._dwarf_tables
        if kind not in tables:
            from . import dwarf
            build = dwarf.line_table if kind == "lines" else dwarf.inline_table
            try:
                tables[kind] = build(self._dwarf())
            except OSError as e:
                raise SymbolError("%s: %s" % (inputs.name(self.path), e.strerror or e)) from None
            except Exception as e:   # pyelftools on damaged DWARF: any kind of exception
                raise SymbolError("%s: bad DWARF: %s" % (inputs.name(self.path), one_line(e))) from None
        return tables[kind]

    def line(self, addr):
        """(file, line) of the instruction at runtime address addr from the DWARF line table, or None."""
        addrs, rows = self._table("lines")
        i = bisect.bisect_right(addrs, addr - self.offset) - 1
        return rows[i] if i >= 0 else None

    def inline_chain(self, addr):
        """[(name, call_file, call_line)] of the subroutines inlined at runtime address addr,
        outermost first."""
        bounds, chains = self._table("inline")
        i = bisect.bisect_right(bounds, addr - self.offset) - 1
        return list(chains[i]) if i >= 0 else []

    def inlined(self, addr):
        """Names of the functions inlined at addr, outermost to innermost (may be empty)."""
        return [name for name, _, _ in self.inline_chain(addr)]


class ModuleSymbols:
    """A kernel Symbolizer (or None) with the guest's modules from a capture (v4) in front of it:
    an address in a module's text is named by the module's own symbols, as perf does,
    "func [module]"; module_of(addr) gives the module (perf-script's DSO, pprof's mapping).
    Modules hold runtime addresses: the kernel table's offset never applies to them."""

    def __init__(self, base, modules):
        self.base = base
        self.modules = list(modules)
        self._ranges = sorted((lo, hi, i) for i, m in enumerate(self.modules) for lo, hi in m.ranges)
        self._los = [r[0] for r in self._ranges]
        self._tables = [Symbolizer(m.syms, is_elf=True) for m in self.modules]

    _NO_BASE = {"is_elf": False, "path": None, "stext": None, "offset": 0}

    def __getattr__(self, name):   # DWARF lines, is_elf, path ...: the kernel's
        if name.startswith("__") or name in ("base", "modules", "_ranges", "_los", "_tables"):
            raise AttributeError(name)
        if self.base is None:
            if name in self._NO_BASE:
                return self._NO_BASE[name]
            raise AttributeError(name)
        return getattr(self.base, name)

    def rebased(self, offset):
        return ModuleSymbols(self.base.rebased(offset) if self.base is not None else None, self.modules)

    def module_of(self, addr):
        """The Module whose text holds runtime address addr, or None."""
        i = bisect.bisect_right(self._los, addr) - 1
        if i < 0 or addr >= self._ranges[i][1]:
            return None
        return self.modules[self._ranges[i][2]]

    def lookup(self, addr):
        i = bisect.bisect_right(self._los, addr) - 1
        if i >= 0 and addr < self._ranges[i][1]:
            k = self._ranges[i][2]
            s = self._tables[k].lookup(addr)
            return ("%s [%s]" % (s[0], self.modules[k].name), s[1]) if s else None
        return self.base.lookup(addr) if self.base is not None else None

    frame_addr = staticmethod(Symbolizer.frame_addr)

    def frame(self, addr, is_return):
        return self.lookup(self.frame_addr(addr, is_return))

    def frame_name(self, addr, is_return):
        s = self.lookup(self.frame_addr(addr, is_return))
        return s[0] if s else "0x%x" % addr


def one_line(e):
    """A library's exception as one short line: its message, and its type unless pyelftools'
    own (a KeyError's message alone, "9", would say nothing)."""
    from elftools.common.exceptions import ELFError
    text = " ".join(str(e).split())[:160]
    return text if isinstance(e, ELFError) and text else "%s: %s" % (type(e).__name__, text)


def short_path(path):
    """A DWARF file path as printed: normalised, kept relative when it was."""
    return os.path.normpath(path) if path else "?"
