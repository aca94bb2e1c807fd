# lib/train: the step loop that ties data, model, averaging and checkpoints together.
lib_libhpctrain_a_SOURCES += lib/train/train.c
