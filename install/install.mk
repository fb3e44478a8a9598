# SPDX-License-Identifier: MIT
# install/install.mk: make install / uninstall (PREFIX, DESTDIR), the man pages, and make deb;
# included by the top Makefile. Installs the tools only: never the test kernel.
#
#   PREFIX/bin/gdbsample, PREFIX/bin/gdbsample-analyze
#   PREFIX/share/gdbsample/     VERSION, gdbsample_analysis/ (found by gdbsample-analyze from its
#                               own location; with protoc's profile_pb2.py for pprof), gdbscripts/,
#                               vm-configs/ (configs.toml, run, libvirt/)
#   PREFIX/share/man/man1/      gdbsample.1, gdbsample-analyze.1
#   PREFIX/share/bash-completion/completions/   gdbsample, gdbsample-analyze (a link to it)

# Plain assignments, not ?=: an environment's PREFIX (conda, termux) must not move the install;
# `make install PREFIX=/usr DESTDIR=/tmp/root` sets them.
PREFIX  = /usr/local
DESTDIR =
INSTALL = install
BINDIR  = $(PREFIX)/bin
DATADIR = $(PREFIX)/share/gdbsample
MAN1DIR = $(PREFIX)/share/man/man1
COMPDIR = $(PREFIX)/share/bash-completion/completions

# Files installed under DATADIR with their path in the source tree; the analysis package goes to
# DATADIR/gdbsample_analysis. Uninstall removes exactly these names.
SHARE_DATA := VERSION vm-configs/configs.toml vm-configs/vmconfig.py \
	      $(sort $(wildcard gdbscripts/*.py vm-configs/libvirt/*.xml))
SHARE_PROGS := vm-configs/run
# DATADIR's directories, deepest first (the order uninstall removes them in).
SHARE_DIRS := gdbsample_analysis gdbscripts vm-configs/libvirt vm-configs
ANALYSIS_PY := $(sort $(notdir $(wildcard analysis/gdbsample_analysis/*.py)))
MANPAGES := gdbsample.1 gdbsample-analyze.1

.PHONY: install-files man install uninstall deb

# What make install installs, built (debian/rules builds only this).
install-files: $(BUILD)/gdbsample man $(PPROF_PB2)

# The man pages with the version and the installed data directory filled in. A stamp holding
# DATADIR rebuilds them when PREFIX changes.
man: $(MANPAGES:%=$(BUILD)/man/%)
$(BUILD)/man/datadir.stamp: FORCE
	@mkdir -p $(dir $@)
	@echo '$(DATADIR)' | cmp -s - $@ || echo '$(DATADIR)' > $@
$(BUILD)/man/%.1: install/%.1 VERSION $(BUILD)/man/datadir.stamp
	sed -e 's|@VERSION@|$(GDBSAMPLE_VERSION)|g' -e 's|@DATADIR@|$(DATADIR)|g' $< > $@

install: install-files
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MAN1DIR) $(DESTDIR)$(COMPDIR) \
	  $(addprefix $(DESTDIR)$(DATADIR)/,$(SHARE_DIRS))
	$(INSTALL) -m 755 $(BUILD)/gdbsample analysis/gdbsample-analyze $(DESTDIR)$(BINDIR)/
	$(INSTALL) -m 644 $(ANALYSIS_PY:%=analysis/gdbsample_analysis/%) $(PPROF_PB2) $(DESTDIR)$(DATADIR)/gdbsample_analysis/
	for f in $(SHARE_DATA); do $(INSTALL) -m 644 $$f $(DESTDIR)$(DATADIR)/$$f || exit 1; done
	for f in $(SHARE_PROGS); do $(INSTALL) -m 755 $$f $(DESTDIR)$(DATADIR)/$$f || exit 1; done
	$(INSTALL) -m 644 $(MANPAGES:%=$(BUILD)/man/%) $(DESTDIR)$(MAN1DIR)/
	$(INSTALL) -m 644 install/gdbsample.bash $(DESTDIR)$(COMPDIR)/gdbsample
	ln -sf gdbsample $(DESTDIR)$(COMPDIR)/gdbsample-analyze

# Removes the files install put there, then DATADIR's directories (ours alone); the shared
# directories (bin, man1, completions) stay. A file someone added under DATADIR keeps its
# directory, and rmdir says which.
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/gdbsample $(DESTDIR)$(BINDIR)/gdbsample-analyze \
	  $(MANPAGES:%=$(DESTDIR)$(MAN1DIR)/%) $(DESTDIR)$(COMPDIR)/gdbsample $(DESTDIR)$(COMPDIR)/gdbsample-analyze \
	  $(ANALYSIS_PY:%=$(DESTDIR)$(DATADIR)/gdbsample_analysis/%) $(DESTDIR)$(DATADIR)/gdbsample_analysis/$(notdir $(PPROF_PB2)) \
	  $(addprefix $(DESTDIR)$(DATADIR)/,$(SHARE_DATA) $(SHARE_PROGS))
	for d in $(addprefix $(DESTDIR)$(DATADIR)/,$(SHARE_DIRS)) $(DESTDIR)$(DATADIR); do \
	  [ ! -d "$$d" ] || rmdir "$$d" || exit 1; done

# The Debian package, built from a copy of the tree in $(BUILD)/deb/ so that nothing lands in the
# repository's parent directory (where dpkg-buildpackage writes) and the checkout's build/ is left
# alone; the .deb (and its -dbgsym .deb, .buildinfo, .changes) end up in $(BUILD)/deb/, checked by lintian
# (errors fail the build, warnings are printed).
DEB_DIR := $(BUILD)/deb
DEB_SRC := $(DEB_DIR)/src/gdbsample-$(GDBSAMPLE_VERSION)
deb:
	@v=$$(dpkg-parsechangelog -l debian/changelog -S Version) && [ "$$v" = "$(GDBSAMPLE_VERSION)" ] || { \
	  echo "deb: debian/changelog is at $$v but VERSION says $(GDBSAMPLE_VERSION): add a changelog entry" \
	    "(dch -v $(GDBSAMPLE_VERSION))" >&2; exit 1; }
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_SRC)
	tar -c --exclude-vcs --exclude=./build --exclude='./build-*' --exclude=./$(BUILD) --exclude=./demo \
	  --exclude=__pycache__ . \
	  | tar -x -C $(DEB_SRC)
	cd $(DEB_SRC) && dpkg-buildpackage -b -us -uc
	mv $(DEB_DIR)/src/*.deb $(DEB_DIR)/src/*.buildinfo $(DEB_DIR)/src/*.changes $(DEB_DIR)/
	rm -rf $(DEB_DIR)/src
	lintian --fail-on error $(DEB_DIR)/*.changes
	@echo "deb: $$(ls $(DEB_DIR)/gdbsample_*.deb)"
