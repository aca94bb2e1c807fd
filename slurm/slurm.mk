# slurm: the sbatch template, site notes and modulefiles (their tests are in t/t.mk).

# ---- sbatch template and site notes: $(pkgdatadir)/slurm --------------------
hpctslurmdir = $(pkgdatadir)/slurm
dist_hpctslurm_DATA = slurm/hpctrain.sbatch slurm/requeue.sh slurm/README.site

# ---- modulefiles: $(datadir)/modulefiles/hpctrain/VERSION (Tcl) and VERSION.lua (Lmod) ----
# Made from the templates with make's fully expanded directory variables, and remade by every
# "make" and "make install" (phony), so that "make install prefix=DIR" writes DIR into them.
# (configure would substitute ${prefix}-relative, unexpanded dirs, and the configure-time
# prefix only.)
modulefiledir = $(datadir)/modulefiles/hpctrain
hpct_modulefiles = slurm/modulefiles/hpctrain/$(VERSION) slurm/modulefiles/hpctrain/$(VERSION).lua
modulefile_DATA = $(hpct_modulefiles)
CLEANFILES += $(hpct_modulefiles)
EXTRA_DIST += slurm/modulefiles/hpctrain.lua.in slurm/modulefiles/hpctrain.tcl.in
.PHONY: $(hpct_modulefiles)

hpct_modulefile_subst = sed -e 's|@VERSION[@]|$(VERSION)|g' -e 's|@prefix[@]|$(prefix)|g' \
	-e 's|@bindir[@]|$(bindir)|g' -e 's|@mandir[@]|$(mandir)|g' -e 's|@libdir[@]|$(libdir)|g'

slurm/modulefiles/hpctrain/$(VERSION).lua: $(srcdir)/slurm/modulefiles/hpctrain.lua.in
	$(AM_V_GEN)$(MKDIR_P) slurm/modulefiles/hpctrain && \
	$(hpct_modulefile_subst) $(srcdir)/slurm/modulefiles/hpctrain.lua.in > $@.tmp && mv $@.tmp $@

slurm/modulefiles/hpctrain/$(VERSION): $(srcdir)/slurm/modulefiles/hpctrain.tcl.in
	$(AM_V_GEN)$(MKDIR_P) slurm/modulefiles/hpctrain && \
	$(hpct_modulefile_subst) $(srcdir)/slurm/modulefiles/hpctrain.tcl.in > $@.tmp && mv $@.tmp $@
