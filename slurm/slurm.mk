# Automake fragment included by Makefile.am: Slurm templates, modulefiles, the loopback test cluster.
# Append with +=: lib_libhpctrain_a_SOURCES, C_TESTS/check_PROGRAMS/TESTS, EXTRA_DIST, ...

# ---- sbatch template and site notes: $(pkgdatadir)/slurm --------------------
hpctslurmdir = $(pkgdatadir)/slurm
dist_hpctslurm_DATA = slurm/hpctrain.sbatch slurm/README.site

# ---- man pages ---------------------------------------------------------------
dist_man_MANS += doc/hpctrain.3

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

# ---- tests: a private two-node Slurm cluster on loopback, and the installed modulefiles ----
# t/pmix_probe prints the PMIx rank, node id, local rank and local size of each task.
check_PROGRAMS += t/pmix_probe
t_pmix_probe_LDADD = $(PMIX_LIBS)
SLURM_TESTS = t/test_slurm_pmix.sh t/test_slurm_requeue.sh t/test_slurm_sbatch.sh t/test_module.sh \
	t/test_slurm_train.sh
TESTS += $(SLURM_TESTS)
EXTRA_DIST += $(SLURM_TESTS) t/slurm/cluster.sh t/slurm/setup.sh t/slurm/tap.sh
