# blas_kernels.sh: sourced by the benchmark scripts that run both sides (the library and
# PyTorch) through OpenBLAS. Where OpenBLAS would run kernels that leave the CPU's AVX2 or
# AVX-512 unused (it does not know the model: Debian 12's 0.3.21 runs Prescott's on Emerald
# Rapids, 3.5 times slower), fit_blas_kernels sets OPENBLAS_CORETYPE to the kernels that fit
# (SkylakeX or Haswell) for both and says so; a value already set is kept and named (the
# project's build VM exports OPENBLAS_CORETYPE=Haswell on a Zen 4 whose OpenBLAS would pick
# Cooperlake; `env -u OPENBLAS_CORETYPE` lets OpenBLAS choose). The rule is lib/device/cpu.c's
# warning. Needs $python.

# OpenBLAS's kernels, as the library picks them at load ("" where python cannot tell).
blas_core() {
    $python -c 'import ctypes
f = ctypes.CDLL("libopenblas.so.0").openblas_get_corename
f.restype = ctypes.c_char_p
print(f().decode())' 2>/dev/null
}

fit_blas_kernels() {
    if [ -z "${OPENBLAS_CORETYPE:-}" ]; then
        core=$(blas_core)
        fits=
        grep -qw avx2 /proc/cpuinfo 2>/dev/null && fits=Haswell
        grep -qw avx512f /proc/cpuinfo 2>/dev/null && fits=SkylakeX
        old=
        case $(echo "$core" | tr A-Z a-z) in # the lists of lib/device/cpu.c
        prescott | core2 | penryn | dunnington | nehalem | sandybridge | atom | athlon | opteron | \
            opteron_sse3 | barcelona | bobcat | bulldozer | piledriver | steamroller | excavator | \
            nano | generic | unknown) old=1 ;;
        haswell | zen) [ "$fits" = SkylakeX ] && old=1 ;;
        esac
        [ -n "$old" ] && [ -n "$fits" ] && export OPENBLAS_CORETYPE=$fits &&
            echo "OpenBLAS would run its $core kernels on this $fits-class CPU: OPENBLAS_CORETYPE=$fits for both sides"
    fi
    echo "OpenBLAS kernels (both sides): $(blas_core)${OPENBLAS_CORETYPE:+ (OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE)}"
}
