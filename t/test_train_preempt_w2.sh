#!/bin/sh
# Preempt and resume at W = 2: see t/train_preempt.sh.
W=2
. "${top_srcdir:-.}/t/train_preempt.sh"
