# lib/train: the step loop that ties data, model, averaging and checkpoints together, and the
# in-situ session for codes that own their time loop (both share loop.c).
lib_libhpctrain_a_SOURCES += lib/train/train.c lib/train/loop.h lib/train/loop.c \
	lib/train/insitu.h lib/train/insitu.c lib/train/settings.h lib/train/settings.c lib/train/open.c lib/train/guard.h lib/train/guard.c lib/train/blocks.h lib/train/blocks.c lib/train/observe.h lib/train/observe.c
