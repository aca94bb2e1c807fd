#!/bin/sh
# gpu_bundle.sh: on the Debian build machine, make one folder that validates the GPU path on a
# GPU machine which has the CUDA toolkit, NCCL and a driver but none of Debian's MPI, HDF5,
# OpenBLAS or PMIx, and no network:
#
#     bench/gpu_bundle.sh [BUNDLE]          (default BUNDLE: .gpu-bundle, ignored by git)
#
# then, on the GPU machine, from the folder that holds BUNDLE:
#
#     BUNDLE/run.sh OUTDIR
#
# which runs bench/gpu_validate.sh on the bundled tree with a hard cap of 8 minutes and writes
# OUTDIR/summary.txt (ending in the coverage table) and OUTDIR/logs.tar.gz.
#
# BUNDLE holds: tree/ (the committed tree built --with-cuda --with-nccl for HPCT_CUDA_ARCH,
# default "80;90", warnings as errors, objects and the programs validation does not run
# removed); libs.tar.gz, unpacked by run.sh into R/usr/... (Debian's Open MPI and PMIx trees,
# relocated through OPAL_PREFIX) and lib/ (every shared library those programs need but
# glibc's, the compiler runtime's and CUDA's, which the GPU machine has); env.sh (the
# environment that points at them); run.sh.
# Built at /tmp/hpct-gpu-tree, the path the tree's Makefile and scripts name: run.sh links that
# path to the bundled tree when it is missing on the GPU machine.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
bundle=${1:-$top/.gpu-bundle}
cuda=${CUDA_HOME:-/usr/local/cuda}
arch=${HPCT_CUDA_ARCH:-80;90}
build=/tmp/hpct-gpu-tree
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
say() { echo "gpu_bundle: $*"; }

# ---- the tree: committed sources, built with warnings as errors ------------------------------
rm -rf "$build" "$bundle"
mkdir -p "$build" "$bundle/lib"
git -C "$top" archive --format=tar HEAD | tar -xf - -C "$build"
git -C "$top" rev-parse --short HEAD >"$build/.hpct-commit"
say "building $(git -C "$top" rev-parse --short HEAD) for '$arch' in $build (log: $bundle/build.log)"
strict_c="-g -O2 -Werror -Wno-error=deprecated-declarations"
strict_nv="-O3 -std=c++17 -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror"
if ! (cd "$build" && ./autogen.sh && ./configure --with-cuda="$cuda" --with-nccl \
    --with-cuda-arch="$arch" --disable-fortran &&
    make -j"$(nproc)" CFLAGS="$strict_c" NVCCFLAGS="$strict_nv" &&
    make -j"$(nproc)" CFLAGS="$strict_c" NVCCFLAGS="$strict_nv" check TESTS=) \
    >"$bundle/build.log" 2>&1; then
    tail -n 30 "$bundle/build.log"
    say "the build failed; see $bundle/build.log"
    exit 1
fi

# Programs gpu_validate.sh runs; every other executable and every object goes.
keep="t/test_cuda t/test_cuda_graph t/test_nccl t/test_gpu_logic t/lib/insitu_prog"
keep="$keep tools/hpctrain bench/bench_gpu"
(cd "$build" && find . -name '*.o' -o -name '*.a' -o -name '*.lo' -o -name '.deps' -prune |
    xargs rm -rf)
for f in $(cd "$build" && find . -type f -perm -u+x | sed 's|^\./||'); do
    [ "$(head -c 4 "$build/$f" | tail -c 3)" = ELF ] || continue
    case " $keep " in *" $f "*) ;; *) rm -f "$build/$f" ;; esac
done
for f in $keep; do strip --strip-debug "$build/$f"; done
cp -a "$build" "$bundle/tree"

# ---- Open MPI and PMIx, relocated ------------------------------------------------------------
R=$bundle/R/usr
mkdir -p "$R/bin" "$R/lib/$multiarch" "$R/share"
cp -a "/usr/lib/$multiarch/openmpi" "/usr/lib/$multiarch/pmix2" "$R/lib/$multiarch/"
rm -rf "$R/lib/$multiarch/openmpi/include" "$R/lib/$multiarch/pmix2/include"
cp -a /usr/share/openmpi "$R/share/"
[ -d /usr/share/pmix ] && cp -a /usr/share/pmix "$R/share/"
cp "$(readlink -f "$(command -v orterun)")" "$R/bin/orterun"
cp "$(readlink -f "$(command -v orted)")" "$R/bin/orted"
ln -s orterun "$R/bin/mpirun"

# ---- shared libraries: what ldd finds for every program and component ------------------------
# Left to the GPU machine: glibc, the compiler runtime, CUDA's libraries and the driver's.
skip_lib='^(ld-linux|libc|libm|libdl|librt|libpthread|libresolv|libutil|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libnccl|libnvidia)[.-]'
objs=$( (for f in $keep; do echo "$bundle/tree/$f"; done
    echo "$R/bin/orterun"; echo "$R/bin/orted"
    find "$R/lib" -name '*.so*' -type f) )
for o in $objs; do
    ldd "$o" 2>/dev/null | awk '/=> \// { print $1, $3 }'
done | sort -u | while read -r name path; do
    echo "$name" | grep -Eq "$skip_lib" && continue
    [ -e "$bundle/lib/$name" ] || cp -L "$path" "$bundle/lib/$name"
done

# The libraries and MPI trees packed (about 30 MB instead of 90): run.sh unpacks them once.
tar -C "$bundle" -czf "$bundle/libs.tar.gz" lib R && rm -rf "$bundle/lib" "$bundle/R"
rm -rf "$bundle/tree/autom4te.cache"

# ---- env.sh and run.sh -------------------------------------------------------------------------
cat >"$bundle/env.sh" <<EOF
# Sourced by run.sh, or by hand with HPCT_BUNDLE set to the bundle's folder: the bundled Open
# MPI, PMIx and libraries first, then the machine's CUDA.
b=\${HPCT_BUNDLE:?set HPCT_BUNDLE to the bundle folder first}
cuda=\${CUDA_HOME:-/usr/local/cuda}
cudalibs=
for l in libcudart.so.13 libcublas.so.13 libnccl.so.2; do
    p=\$(ldconfig -p 2>/dev/null | awk -v l=\$l '\$1 == l { print \$NF; exit }')
    [ -n "\$p" ] || p=\$(find "\$cuda" /usr/local/lib /usr/lib /opt -name "\$l" 2>/dev/null | head -1)
    [ -n "\$p" ] && cudalibs=\$cudalibs:\$(dirname "\$p")
done
export LD_LIBRARY_PATH=\$b/lib:\$b/R/usr/lib/$multiarch:\$b/R/usr/lib/$multiarch/openmpi/lib\$cudalibs\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export OPAL_PREFIX=\$b/R/usr PMIX_INSTALL_PREFIX=\$b/R/usr/lib/$multiarch/pmix2
export OMPI_MCA_pml=^ucx OMPI_MCA_btl=^uct,openib,ofi OMPI_MCA_mtl=^ofi OMPI_MCA_osc=^ucx,pt2pt
export OMPI_MCA_btl_base_warn_component_unused=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export MPIRUN=\$b/R/usr/bin/mpirun PATH=\$b/R/usr/bin:\$cuda/bin:\$PATH
export HPCT_GPU_BUILD=$build
EOF
cat >"$bundle/run.sh" <<'EOF'
#!/bin/sh
# run.sh OUTDIR: bench/gpu_validate.sh on the bundled tree, at most 8 minutes in all.
out=${1:?usage: run.sh OUTDIR}
b=$(cd "$(dirname "$0")" && pwd)
[ -d "$b/lib" ] || tar -C "$b" -xzf "$b/libs.tar.gz" || exit 2
HPCT_BUNDLE=$b
. "$b/env.sh"
if [ ! -e "$HPCT_GPU_BUILD" ]; then
    mkdir -p "$(dirname "$HPCT_GPU_BUILD")" && ln -s "$b/tree" "$HPCT_GPU_BUILD"
fi
mkdir -p "$out"
timeout -s KILL "${HPCT_GPU_TOTAL_CAP:-480}" "$b/tree/bench/gpu_validate.sh" "$out"
rc=$?
[ $rc -eq 137 ] && echo "FAIL gpu_validate.sh killed at its cap (${HPCT_GPU_TOTAL_CAP:-480} s)" |
    tee -a "$out/summary.txt"
exit $rc
EOF
chmod +x "$bundle/run.sh"
say "$(du -sh "$bundle" | cut -f1) in $bundle; on the GPU machine: $(basename "$bundle")/run.sh OUTDIR"
