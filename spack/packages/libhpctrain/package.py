# libhpctrain's Spack recipe, kept in the library's own tree (spack/, a Spack package
# repository with the namespace "hpctrain"). README, "Installing with Spack", says how a site
# adds it, where the release tarball comes from and how to load the result.
#
# Written for Spack v0.2x (AutotoolsPackage and CudaPackage from spack.package, stand-alone
# tests as test_* methods). The variants map onto the options of configure.ac and m4/:
#   +cuda cuda_arch=A,B  --with-cuda=PREFIX --with-cuda-arch="A;B"
#   +nccl                --with-nccl=PREFIX (needs +cuda)
#   +fortran             --enable-fortran with the MPI's Fortran wrapper (else --disable-fortran)
#   +slurm               --with-slurm (else --without-slurm)
# t/test_spack_recipe.sh checks that every option named here is one configure knows.

import os

from spack.package import *


class Libhpctrain(AutotoolsPackage, CudaPackage):
    """Static C library (libhpctrain.a) for synchronous data-parallel training on
    HPC batch clusters: MPI between nodes, PMIx topology, sharded HDF5 data,
    CBLAS or CUDA compute, NCCL inside a node, HDF5 checkpoints with Slurm
    requeue; the hpctrain program and an optional Fortran module."""

    homepage = "https://libhpctrain.invalid"
    # There is no public download site: a site serves the release tarball ("make dist")
    # from a Spack mirror under libhpctrain/libhpctrain-<version>.tar.gz.
    url = "https://libhpctrain.invalid/releases/libhpctrain-0.2.0.tar.gz"

    # No checksum: the tarball holds this file, so it cannot also name its own sha256.
    # Installs from the mirror need "spack install --no-checksum" (README).
    version("0.2.0")

    variant("fortran", default=False,
            description="Build the Fortran module hpctrain (needs an MPI with mpi_f08)")
    variant("slurm", default=False,
            description="Ask libslurm for the job's end time (walltime checkpoints)")
    variant("nccl", default=False,
            description="Average gradients inside a node with NCCL (needs +cuda)")

    depends_on("pkgconfig", type="build")
    depends_on("mpi")
    depends_on("pmix")
    # configure asks for serial HDF5 first (m4/hpct_check_libs.m4) and the library calls
    # only the serial API, one file per rank, from one thread at a time.
    depends_on("hdf5@1.10:~mpi")
    # configure links -lopenblas and includes its cblas.h (--with-blas=DIR).
    depends_on("blas")
    requires("^openblas", msg="libhpctrain links OpenBLAS's -lopenblas and cblas.h")
    depends_on("zlib-api")
    depends_on("slurm", when="+slurm")
    depends_on("nccl", when="+nccl")
    for _arch in CudaPackage.cuda_arch_values:
        depends_on(f"nccl cuda_arch={_arch}", when=f"+nccl cuda_arch={_arch}")

    conflicts("+nccl", when="~cuda", msg="NCCL averages device buffers: +nccl needs +cuda")
    conflicts("cuda_arch=none", when="+cuda",
              msg="name the GPUs' compute capabilities, e.g. cuda_arch=80,90")

    # The stand-alone tests build these against the installed library (spack test run).
    test_sources = ["examples/mlp_xor.c", "examples/fortran/byog.f90"]

    @property
    def libs(self):
        return find_libraries("libhpctrain", self.prefix.lib, shared=False)

    def _prefix_arg(self, dep, option):
        """--with-OPTION=PREFIX for a dependency installed in a prefix of its own. A system
        one (Debian's under /usr) keeps its headers in multiarch folders that only its
        pkg-config file names, so configure's pkg-config default finds it instead."""
        prefix = self.spec[dep].prefix
        if self.spec[dep].external and prefix in ("/usr", "/usr/local", "/"):
            return []
        return [f"--with-{option}={prefix}"]

    def configure_args(self):
        spec = self.spec
        # The MPI's own wrapper tells configure its flags (--showme:compile/link).
        args = [f"MPICC={spec['mpi'].mpicc}"]
        args += self._prefix_arg("pmix", "pmix")
        args += self._prefix_arg("hdf5", "hdf5")
        args += self._prefix_arg("openblas", "blas")

        if spec.satisfies("+cuda"):
            args.append(f"--with-cuda={spec['cuda'].prefix}")
            archs = spec.variants["cuda_arch"].value
            args.append("--with-cuda-arch=" + ";".join(archs))
        else:
            args.append("--without-cuda")
        if spec.satisfies("+nccl"):
            args.append(f"--with-nccl={spec['nccl'].prefix}")
        else:
            args.append("--without-nccl")

        if spec.satisfies("+fortran"):
            # The module is compiled with the MPI's Fortran wrapper ("use mpi_f08").
            mpifc = spec["mpi"].mpifc
            args += ["--enable-fortran", f"MPIFC={mpifc}", f"FC={mpifc}"]
        else:
            args.append("--disable-fortran")

        args += self.with_or_without("slurm")
        return args

    def setup_run_environment(self, env):
        # The same variable as the modulefiles the library installs (slurm/).
        env.set("HPCTRAIN_ROOT", self.prefix)

    @run_after("install")
    def cache_test_sources(self):
        cache_extra_test_sources(self, self.test_sources)

    def _pkg_config_flags(self):
        """pkg-config --static flags of the installed hpctrain.pc."""
        pkg_config = Executable(join_path(self.spec["pkgconfig"].prefix.bin, "pkg-config"))
        pkg_config.add_default_env("PKG_CONFIG_PATH", self.prefix.lib.pkgconfig)
        out = pkg_config("--static", "--cflags", "--libs", "hpctrain", output=str)
        return out.split()

    def _test_source(self, path):
        """An example source cached at install time (a missing one fails the test)."""
        src = join_path(install_test_root(self), path)
        assert os.path.isfile(src), f"{src}: not cached at install time"
        return src

    def test_c_example(self):
        """build examples/mlp_xor.c with pkg-config and run it as one process"""
        src = self._test_source("examples/mlp_xor.c")
        cc = Executable(self.compiler.cc)
        cc("-o", "mlp_xor", src, *self._pkg_config_flags())
        out = Executable("./mlp_xor")(output=str, error=str)
        print(out.strip())
        check_outputs(["xor: loss [0-9.]+ accuracy 1.00"], out)

    def test_fortran_example(self):
        """build examples/fortran/byog.f90 with the MPI Fortran wrapper and run it"""
        if not self.spec.satisfies("+fortran"):
            raise SkipTest("built without the Fortran module (~fortran)")
        src = self._test_source("examples/fortran/byog.f90")
        mpifc = Executable(self.spec["mpi"].mpifc)
        mpifc("-o", "byog", src, *self._pkg_config_flags())
        out = Executable("./byog")(output=str, error=str)
        print(out.strip())
        check_outputs(["byog: 1 rank", "max error"], out)

    def test_hpctrain_version(self):
        """the installed hpctrain program names this version"""
        hpctrain = Executable(self.prefix.bin.hpctrain)
        out = hpctrain("--version", output=str)
        check_outputs([f"hpctrain {self.spec.version}"], out)
