# tools: the installed hpctrain program (shard, train, ckpt subcommands).
bin_PROGRAMS += tools/hpctrain
tools_hpctrain_SOURCES = tools/hpctrain.c tools/tools.h tools/error.c tools/shard.c tools/inputs.c \
	tools/array.c tools/train.c tools/ckpt.c \
	tools/report.h tools/report.c tools/report_json.c tools/svg.c tools/trace.c \
	tools/info.c tools/doctor.h tools/doctor.c tools/doctor_local.c
tools_hpctrain_LDADD = $(HPCT_LIBS) $(ZLIB_LIBS)
