# spack: the Spack package repository holding libhpctrain's recipe (README, "Installing with
# Spack"); distributed, not installed. t/test_spack_recipe.sh checks it against configure.
EXTRA_DIST += spack/repo.yaml spack/packages/libhpctrain/package.py spack/debian12-packages.yaml
