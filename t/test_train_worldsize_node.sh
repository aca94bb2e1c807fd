#!/bin/sh
# t/test_train_worldsize.sh with the samples in the node store (HPCT_DATA_STORE=node): saved at
# W = 1 and resumed at W = 2 and back, the loss curve follows the uninterrupted W = 1 run.
HPCT_DATA_STORE=node
export HPCT_DATA_STORE
exec sh "${top_srcdir:-.}/t/test_train_worldsize.sh"
