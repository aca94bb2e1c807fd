#!/bin/sh
# test_fortran_install.sh: after "make install" into a temporary prefix, an outside Fortran
# program (examples/fortran/byog.f90, "use hpctrain") builds and runs three ways:
#  1. mpif90 $(pkg-config --static --cflags --libs hpctrain);
#  2. CMake find_package(hpctrain COMPONENTS Fortran) with the imported targets
#     hpctrain::fortran and hpctrain::hpctrain (t/lib/fortran_consumer; plain gfortran and gcc);
#  3. after "module load hpctrain" (Lmod) in a fresh shell: pkg-config and CMake find the
#     package through PKG_CONFIG_PATH and CMAKE_PREFIX_PATH alone.
. "${top_srcdir:-.}/t/lib/fortran_lib.sh"
need_fortran
need_mpi
command -v pkg-config >/dev/null || skip_all "no pkg-config"
[ -f "$builddir/config.h" ] || skip_all "no configured build tree in '$builddir'"
version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$builddir/config.h")
major=${version%%.*}
minor=${version#*.}
minor=${minor%%.*}
want=$major.$minor
# A version find_package must refuse: at 0.x the minor before (the minor must match), else the
# next minor (newer than the one installed).
other=$major.$((minor + 1))
[ "$major" = 0 ] && [ "$minor" -gt 0 ] && other=0.$((minor - 1))
MPIFC=${MPIFC:-mpif90}
command -v "$MPIFC" >/dev/null || MPIFC=mpifort
lmod_init=/usr/share/lmod/lmod/init/bash
prefix="$work/prefix"
plan 11

# The test's own make, without the jobserver of the "make check" that runs it; one "make
# install" at a time in this build tree (t/test_module.sh takes the same lock): install
# remakes the modulefiles and CMake files in place with the prefix given.
lock=
command -v flock >/dev/null && lock="flock $builddir/.hpct-install.lock"
(cd "$builddir" && $lock env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL ${MAKE:-make} install prefix="$prefix") \
    >"$work/install.log" 2>&1
ok $? "make install prefix=<temporary folder>" || show "$work/install.log"

missing=
for f in lib/hpctrain/fortran/hpctrain.mod lib/cmake/hpctrain/hpctrainConfig.cmake \
    lib/cmake/hpctrain/hpctrainConfigVersion.cmake lib/libhpctrain.a lib/pkgconfig/hpctrain.pc; do
    [ -f "$prefix/$f" ] || missing="$missing $f"
done
is "${missing# }" "" "installed: hpctrain.mod in lib/hpctrain/fortran, the CMake package, library, .pc"

# 1. mpif90 + pkg-config --static
flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --define-prefix --static --cflags --libs hpctrain)
case " $flags " in *" -I$prefix/lib/hpctrain/fortran "*) r=0 ;; *) r=1 ;; esac
ok $r "pkg-config --cflags gives -I for the module directory" || diag "flags: $flags"
run "$work/pc.build" "$MPIFC" -o "$work/byog-pc" "$srcdir/examples/fortran/byog.f90" $flags
[ "$rc" = 0 ] && run "$work/pc.run" mpi 2 "$work/byog-pc"
[ "$rc" = 0 ] && grep -q '^byog: 2 rank(s): a =  2.0000' "$work/pc.run"
ok $? "$MPIFC byog.f90 \$(pkg-config --static --cflags --libs hpctrain): builds and runs on 2 ranks" ||
    { show "$work/pc.build"; show "$work/pc.run" 2>/dev/null; }

# 2. CMake find_package with plain compilers
if command -v cmake >/dev/null && command -v gfortran >/dev/null; then
    run "$work/cmake.log" cmake -S "$srcdir/t/lib/fortran_consumer" -B "$work/cmake" \
        -DCMAKE_C_COMPILER=gcc -DCMAKE_Fortran_COMPILER=gfortran -DCMAKE_PREFIX_PATH="$prefix" \
        -DHPCT_EXAMPLES="$srcdir/examples" -DHPCT_FIND_VERSION="$want"
    [ "$rc" = 0 ] && grep -q "hpctrain $version: $prefix/lib/libhpctrain.a, module $prefix/lib/hpctrain/fortran" \
        "$work/cmake.log"
    ok $? "cmake: find_package(hpctrain $want REQUIRED COMPONENTS Fortran) finds the installed $version" ||
        show "$work/cmake.log"
    run "$work/cmake.build" cmake --build "$work/cmake"
    [ "$rc" = 0 ] && run "$work/cmake.run" mpi 2 "$work/cmake/byog"
    [ "$rc" = 0 ] && grep -q '^byog: 2 rank(s): a =  2.0000' "$work/cmake.run"
    ok $? "gfortran + hpctrain::fortran: byog builds and runs on 2 ranks" ||
        { show "$work/cmake.build"; show "$work/cmake.run" 2>/dev/null; }
    run "$work/xor.run" "$work/cmake/mlp_xor"
    [ "$rc" = 0 ] && grep -q '^xor: .* accuracy 1.00$' "$work/xor.run"
    ok $? "gcc + hpctrain::hpctrain: mlp_xor builds and runs" || show "$work/xor.run"
    mkdir -p "$work/nofortran"
    cat >"$work/nofortran/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.13)
project(v C)
find_package(hpctrain $other)
message(STATUS "found=\${hpctrain_FOUND}")
CMAKE
    run "$work/v.log" cmake -S "$work/nofortran" -B "$work/nofortran/b" -DCMAKE_PREFIX_PATH="$prefix"
    grep -q 'found=0' "$work/v.log"
    ok $? "find_package(hpctrain $other) refuses $version" ||
        show "$work/v.log"
else
    skip 4 "no cmake or gfortran (Debian packages cmake gfortran)"
fi

# 3. module load hpctrain (Lmod), then both routes with nothing but the module's variables
if [ -f "$lmod_init" ] && command -v bash >/dev/null; then
    mkdir -p "$work/home"
    env -i HOME="$work/home" PATH=/usr/local/bin:/usr/bin:/bin TERM=dumb OMPI_ALLOW_RUN_AS_ROOT=1 \
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1 bash --noprofile --norc -c '
        . "$1" || exit 2
        module use "$2/share/modulefiles" || exit 3
        module load hpctrain || exit 4
        echo "CMAKE_PREFIX_PATH=$CMAKE_PREFIX_PATH"
        "$5" -o "$3/byog-mod" "$4/examples/fortran/byog.f90" \
            $(pkg-config --define-prefix --static --cflags --libs hpctrain) || exit 5
        mpirun --oversubscribe -np 2 "$3/byog-mod" || exit 6
        command -v cmake >/dev/null || { echo "no cmake"; exit 0; }
        cmake -S "$4/t/lib/fortran_consumer" -B "$3/cmake-mod" -DCMAKE_Fortran_COMPILER=gfortran \
            -DCMAKE_C_COMPILER=gcc -DHPCT_EXAMPLES="$4/examples" -DHPCT_FIND_VERSION="$6" || exit 7
        cmake --build "$3/cmake-mod" || exit 8
        mpirun --oversubscribe -np 2 "$3/cmake-mod/byog" || exit 9
        ' sh "$lmod_init" "$prefix" "$work" "$srcdir" "$MPIFC" "$want" >"$work/module.log" 2>&1
    rc=$?
    grep -q "^CMAKE_PREFIX_PATH=$prefix\(:\|\$\)" "$work/module.log"
    ok $? "module load hpctrain puts the prefix first on CMAKE_PREFIX_PATH" || show "$work/module.log"
    [ "$rc" = 0 ] && [ "$(grep -c '^byog: 2 rank(s): a =  2.0000' "$work/module.log")" -ge 1 ]
    ok $? "after module load: $MPIFC + pkg-config builds byog, and it runs (exit $rc)" || show "$work/module.log"
    if grep -q '^no cmake$' "$work/module.log"; then
        skip 1 "no cmake (Debian package cmake)"
    else
        [ "$rc" = 0 ] && [ "$(grep -c '^byog: 2 rank(s): a =  2.0000' "$work/module.log")" = 2 ]
        ok $? "after module load: cmake finds hpctrain through CMAKE_PREFIX_PATH alone; byog runs" ||
            show "$work/module.log"
    fi
else
    skip 3 "Lmod is not installed (Debian package lmod)"
fi
done_testing
