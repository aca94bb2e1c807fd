# doc: man pages and the file formats.
dist_man_MANS += doc/hpctrain.1 doc/hpctrain.3 doc/hpctrain.conf.5
EXTRA_DIST += doc/data-formats.md doc/distributed.md doc/checkpoint-format.md doc/hacking.md \
	doc/insitu.md doc/fortran.md doc/gpu.md doc/metrics.md doc/reliability.md doc/layers.md
