# examples: programs a user copies from (built, not installed), and the main job.
noinst_PROGRAMS += examples/mlp_xor examples/byog examples/burgers_insitu examples/heat_cnn_insitu
examples_mlp_xor_LDADD = $(HPCT_LIBS)
examples_byog_LDADD = $(HPCT_LIBS)
examples_burgers_insitu_LDADD = $(HPCT_LIBS)
examples_heat_cnn_insitu_LDADD = $(HPCT_LIBS)
EXTRA_DIST += examples/fashion-mnist.sh examples/fashion-mnist.conf examples/fashion-mnist-cnn.conf \
	examples/burgers_insitu.conf examples/heat_cnn_insitu.conf

# After "make install": an outside program compiles and links with pkg-config --static.
installcheck-local:
	PKG_CONFIG_PATH=$(DESTDIR)$(pkgconfigdir) ; export PKG_CONFIG_PATH ; \
	$(CC) -o installcheck-mlp $(srcdir)/examples/mlp_xor.c \
		`pkg-config --define-prefix --static --cflags --libs hpctrain` && ./installcheck-mlp && \
	rm -f installcheck-mlp

# Fortran examples (the module is built: configure found an MPI Fortran compiler with mpi_f08).
EXTRA_DIST += examples/fortran/heat_insitu.sbatch examples/fortran/heat_insitu.conf
if HPCT_FORTRAN
noinst_PROGRAMS += examples/fortran/mlp_shards examples/fortran/byog examples/fortran/heat_insitu
examples_fortran_mlp_shards_SOURCES = examples/fortran/mlp_shards.f90
examples_fortran_mlp_shards_LDADD = $(HPCT_LIBS)
examples_fortran_byog_SOURCES = examples/fortran/byog.f90
examples_fortran_byog_LDADD = $(HPCT_LIBS)
examples_fortran_heat_insitu_SOURCES = examples/fortran/heat_insitu.f90
examples_fortran_heat_insitu_LDADD = $(HPCT_LIBS)
examples/fortran/mlp_shards.$(OBJEXT) examples/fortran/byog.$(OBJEXT) \
	examples/fortran/heat_insitu.$(OBJEXT): $(HPCT_FMOD)
endif
