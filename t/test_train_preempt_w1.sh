#!/bin/sh
# Preempt and resume at W = 1: see t/train_preempt.sh.
W=1
. "${top_srcdir:-.}/t/train_preempt.sh"
