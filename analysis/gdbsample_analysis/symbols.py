"""symbols.py: address -> function name from an ELF .symtab or an nm-style map, plus DWARF lines.

The symbol table is built once, sorted, and bisected per address (the same rules as gdbsample's
sampler/symbols.c, so both name frames alike): function and untyped symbols in executable
sections, one per address (sized before unsized, then by name), a sized symbol covers
[start, start + size), an unsized one runs to the next symbol. DWARF line tables and inlined
subroutines are read once, on first use, into sorted tables too; nothing scans DWARF per address.
"""
import bisect
import os

MAP_TYPES = "tTwW"          # nm types kept from a map: text and weak symbols
MAP_LAST_REACH = 0x100000   # an unsized last symbol of a map covers at most this many bytes


class SymbolError(Exception):
    """The symbol file cannot be read (one-line message)."""


def parse_map(text):
    """nm / System.map text ("ADDR TYPE NAME" or "ADDR SIZE TYPE NAME") -> [(addr, size, name)]."""
    out, good = [], 0
    for line in text.splitlines():
        f = line.split()
        if not f:
            continue
        try:
            if len(f) >= 4 and len(f[2]) == 1:
                addr, size, kind, name = int(f[0], 16), int(f[1], 16), f[2], f[3]
            elif len(f) >= 3 and len(f[1]) == 1:
                addr, size, kind, name = int(f[0], 16), 0, f[1], f[2]
            else:
                raise ValueError
        except ValueError:
            raise SymbolError("not an ELF or nm-style symbol map (line: %.40s)" % line) from None
        good += 1
        if kind in MAP_TYPES:
            out.append((addr, size, name))
    if not good:
        raise SymbolError("empty symbol map")
    return out


def elf_symbols(elf):
    """pyelftools ELFFile -> [(addr, size, name)] of functions in executable sections."""
    from elftools.elf.sections import SymbolTableSection
    SHF_EXECINSTR = 0x4
    out = []
    for sec in elf.iter_sections():
        if not isinstance(sec, SymbolTableSection) or sec["sh_type"] != "SHT_SYMTAB":
            continue
        for s in sec.iter_symbols():
            kind, shndx = s["st_info"]["type"], s["st_shndx"]
            if kind not in ("STT_FUNC", "STT_NOTYPE") or not isinstance(shndx, int) or shndx == 0:
                continue
            if shndx >= elf.num_sections() or not elf.get_section(shndx)["sh_flags"] & SHF_EXECINSTR:
                continue
            if not s.name or (kind == "STT_NOTYPE" and s.name.startswith(".")):
                continue
            out.append((s["st_value"], s["st_size"], s.name))
    return out


class Symbolizer:
    """A sorted symbol table with bisect lookups; DWARF tables built lazily from the same ELF."""

    def __init__(self, entries, is_elf=False, path=None):
        entries = sorted(entries, key=lambda e: (e[0], e[1] == 0, e[2]))
        self.starts, self.sizes, self.names = [], [], []   # parallel, sorted by start
        for addr, size, name in entries:
            if self.starts and self.starts[-1] == addr:
                continue  # one symbol per address: aliases print alike
            self.starts.append(addr)
            self.sizes.append(size)
            self.names.append(name)
        self.is_elf = is_elf     # True if loaded from an ELF (unsized symbols run to the next)
        self.path = path         # the ELF, for DWARF tables
        self._lines = None       # (addresses, rows) once built
        self._inline = None      # (boundaries, chains) once built

    @classmethod
    def load(cls, path):
        """ELF or nm-style map (detected by content) -> Symbolizer; SymbolError on failure."""
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise SymbolError("%s: %s" % (path, e.strerror or e)) from None
        if data[:4] == b"\x7fELF":
            from elftools.common.exceptions import ELFError
            import io
            try:
                from elftools.elf.elffile import ELFFile
                entries = elf_symbols(ELFFile(io.BytesIO(data)))
            except (ELFError, ValueError, KeyError, IndexError) as e:
                raise SymbolError("%s: bad ELF: %s" % (path, e)) from None
            if not entries:
                raise SymbolError("%s: no function symbols (stripped?)" % path)
            return cls(entries, is_elf=True, path=path)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise SymbolError("%s: not an ELF or nm-style symbol map" % path) from None
        try:
            return cls(parse_map(text), path=None)
        except SymbolError as e:
            raise SymbolError("%s: %s" % (path, e)) from None

    def __len__(self):
        return len(self.starts)

    def lookup(self, addr):
        """(name, start) of the symbol covering addr, or None."""
        i = bisect.bisect_right(self.starts, addr) - 1
        if i < 0:
            return None
        start, size = self.starts[i], self.sizes[i]
        if size and addr - start >= size:
            return None
        if not size and not self.is_elf and i + 1 == len(self.starts) and addr - start > MAP_LAST_REACH:
            return None
        return self.names[i], start

    def leaf_name(self, pc):
        """Function holding pc, or 0x... when unknown."""
        s = self.lookup(pc)
        return s[0] if s else "0x%x" % pc

    def caller_name(self, ret):
        """Function that made the call returning to ret (looked up at ret - 1), or 0x... of ret."""
        s = self.lookup(ret - 1)
        return s[0] if s else "0x%x" % ret

    # -- DWARF --------------------------------------------------------------------------------
    def _dwarf(self):
        if not self.path:
            return None
        from elftools.elf.elffile import ELFFile
        with open(self.path, "rb") as f:
            import io
            elf = ELFFile(io.BytesIO(f.read()))
        return elf.get_dwarf_info() if elf.has_dwarf_info() else None

    def line(self, addr):
        """(file, line) of the instruction at addr from the DWARF line table, or None."""
        if self._lines is None:
            from . import dwarf
            self._lines = dwarf.line_table(self._dwarf())
        addrs, rows = self._lines
        i = bisect.bisect_right(addrs, addr) - 1
        return rows[i] if i >= 0 else None

    def inline_chain(self, addr):
        """[(name, call_file, call_line)] of the subroutines inlined at addr, outermost first."""
        if self._inline is None:
            from . import dwarf
            self._inline = dwarf.inline_table(self._dwarf())
        bounds, chains = self._inline
        i = bisect.bisect_right(bounds, addr) - 1
        return list(chains[i]) if i >= 0 else []

    def inlined(self, addr):
        """Names of the functions inlined at addr, outermost to innermost (may be empty)."""
        return [name for name, _, _ in self.inline_chain(addr)]


def short_path(path):
    """A DWARF file path as printed: normalised, kept relative when it was."""
    return os.path.normpath(path) if path else "?"
