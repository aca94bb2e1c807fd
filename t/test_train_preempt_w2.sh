#!/bin/sh
# Preempt and resume at W = 2: see t/lib/train_preempt.sh.
W=2
. "${top_srcdir:-.}/t/lib/train_preempt.sh"
