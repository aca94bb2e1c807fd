# train_data.sh: the synthetic training set of the end-to-end tests and their settings
# (sourced; POSIX sh).
# train_csv FILE: 2048 samples x 16 features in [-1, 1) and a label in the last column: 4
# classes given by the signs of the sums of the first and the last 8 features (learnable by a
# small MLP). Deterministic (fixed awk seed).
train_csv() {
    awk 'BEGIN { srand(7); for (i = 0; i < 2048; i++) { a = 0; b = 0; line = "";
        for (j = 0; j < 16; j++) { x = 2 * rand() - 1; line = line sprintf("%.4f,", x);
            if (j < 8) a += x; else b += x }
        print line (2 * (a > 0) + (b > 0)) } }' >"$1"
}

# train_conf FILE MANIFEST: write the tests' settings (84 steps, no time-based checkpoints) to FILE.
train_conf() {
    cat >"$1" <<CONF
train_manifest = $2
hidden = 32
activation = tanh
outputs = 4
lr = 0.1
momentum = 0.9
schedule = cosine
global_batch = 48
epochs = 2
log_interval = 1
checkpoint_every_seconds = 0
walltime_margin = 0
collective_timeout = 60
CONF
}
