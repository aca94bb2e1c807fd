# examples: programs a user copies from (built, not installed), and the main job.
noinst_PROGRAMS += examples/mlp_xor examples/byog
examples_mlp_xor_LDADD = $(HPCT_LIBS)
examples_byog_LDADD = $(HPCT_LIBS)
EXTRA_DIST += examples/fashion-mnist.sh examples/fashion-mnist.conf

# After "make install": an outside program compiles and links with pkg-config --static.
installcheck-local:
	PKG_CONFIG_PATH=$(DESTDIR)$(pkgconfigdir) ; export PKG_CONFIG_PATH ; \
	$(CC) -o installcheck-mlp $(srcdir)/examples/mlp_xor.c \
		`pkg-config --define-prefix --static --cflags --libs hpctrain` && ./installcheck-mlp && \
	rm -f installcheck-mlp
