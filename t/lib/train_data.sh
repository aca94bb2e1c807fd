# train_data.sh: the synthetic training set of the end-to-end tests (sourced; POSIX sh).
# train_csv FILE: 2048 samples x 16 features in [-1, 1) and a label in the last column: 4
# classes given by the signs of the sums of the first and the last 8 features (learnable by a
# small MLP). Deterministic (fixed awk seed).
train_csv() {
    awk 'BEGIN { srand(7); for (i = 0; i < 2048; i++) { a = 0; b = 0; line = "";
        for (j = 0; j < 16; j++) { x = 2 * rand() - 1; line = line sprintf("%.4f,", x);
            if (j < 8) a += x; else b += x }
        print line (2 * (a > 0) + (b > 0)) } }' >"$1"
}
