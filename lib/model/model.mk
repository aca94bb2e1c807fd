# lib/model: parameter sets, dense layers and losses, optimizers and LR schedules.
lib_libhpctrain_a_SOURCES += lib/model/model.h lib/model/params.h lib/model/params.c \
	lib/model/model.c lib/model/layer.h lib/model/layers.c lib/model/spec.h lib/model/spec.c lib/model/spec_parse.c \
	lib/model/optim.c lib/model/fused.c
