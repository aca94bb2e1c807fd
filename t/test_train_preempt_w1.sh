#!/bin/sh
# Preempt and resume at W = 1: see t/lib/train_preempt.sh.
W=1
. "${top_srcdir:-.}/t/lib/train_preempt.sh"
