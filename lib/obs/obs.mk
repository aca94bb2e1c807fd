# lib/obs: the metrics file (JSON lines) and per-rank step statistics; directly on lib/core.
lib_libhpctrain_a_SOURCES += lib/obs/obs.h lib/obs/jline.c lib/obs/metrics.c lib/obs/stats.c lib/obs/timeline.c
