# SPDX-License-Identifier: BSD-3-Clause
#
# Spack recipe for strata (coll/strata, an Open MPI collective component). Put it in a
# Spack package repository as strata/package.py in its packages folder (docs/admin.md,
# "Spack"). Written for Spack 0.22 and later (1.x included); not yet run by Spack.
#
# strata has no public download site: a centre serves the release tarball
# (strata-VERSION.tar.gz from `make dist`) from a Spack source mirror, where Spack
# looks first (mirror layout: strata/strata-VERSION.tar.gz), or builds a source folder
# with `spack develop`. The .invalid host below is never reached when a mirror holds the
# tarball. A version without a checksum installs with --no-checksum; a centre adds the
# sha256 of its own tarball (sha256sum strata-VERSION.tar.gz).

import os

from spack.package import *

try:  # Spack 1.x: the build systems live in the builtin package repository
    from spack_repo.builtin.build_systems.autotools import AutotoolsPackage
except ImportError:  # Spack 0.2x: spack.package exports them
    pass


class Strata(AutotoolsPackage):
    """strata: hierarchical MPI collectives for Open MPI, as an out-of-tree collective
    component (coll/strata, mca_coll_strata.so): reductions inside a node through shared
    memory (CUDA IPC on GPU nodes), pipelines across nodes on rails, and every call it
    does not support handed back to the component it replaced. Programs need no change.
    """

    homepage = "https://strata.invalid/"
    url = "https://strata.invalid/releases/strata-0.2.0.tar.gz"

    license("BSD-3-Clause")

    version("0.2.0")

    variant("cuda", default=True, description="GPU buffers: the CUDA memory domain and kernels (the driver is loaded at run time)")
    variant("hwloc", default=True, description="GPU and NIC locality from hwloc")
    variant("ucx", default=False, description="UCX for the inter-node channel")

    # A component is built for one Open MPI series (4.1: coll API 2.0.0, 5.0: 2.4.0) and
    # needs Open MPI's internal development headers (ompi/mca/coll/coll.h, opal_config.h).
    depends_on("openmpi@4.1.0:4.1,5.0.0:5.0")
    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("hwloc@2:", when="+hwloc")
    depends_on("ucx", when="+ucx")
    depends_on("cuda@12:", when="+cuda")

    # autogen.sh runs only for a source folder without configure (a git checkout under
    # `spack develop`); the release tarball has configure. Spack's externals find them.
    depends_on("autoconf", type="build")
    depends_on("automake", type="build")
    depends_on("libtool", type="build")

    sanity_check_is_file = [join_path("lib", "openmpi", "mca_coll_strata.so")]

    def autoreconf(self, spec, prefix):
        if not os.path.exists("configure"):
            Executable("./autogen.sh")()

    def configure_args(self):
        spec = self.spec
        ompi = spec["openmpi"]
        # configure asks Open MPI's own mpicc and ompi_info (also right for an external
        # Open MPI whose headers do not live under its prefix, e.g. Debian's)
        args = [
            "MPICC=" + join_path(ompi.prefix.bin, "mpicc"),
            "MPICXX=" + join_path(ompi.prefix.bin, "mpicxx"),
            "MPIRUN=" + join_path(ompi.prefix.bin, "mpirun"),
            "OMPI_INFO=" + join_path(ompi.prefix.bin, "ompi_info"),
            # strata's own prefix, not Open MPI's (which may be read-only or external)
            "--with-component-dir=" + self.prefix.lib.openmpi,
        ]
        args += self.with_or_without("hwloc", activation_value="prefix")
        args += self.with_or_without("ucx", activation_value="prefix")
        args += self.with_or_without("cuda", activation_value="prefix")
        args.append("--without-gtest")
        return args

    def _ompi_component_dir(self):
        """Open MPI's own component folder (ompi_info --path pkglibdir); Debian's is not
        under its prefix's lib/openmpi."""
        ompi = self.spec["openmpi"]
        try:
            out = Executable(join_path(ompi.prefix.bin, "ompi_info"))(
                "--path", "pkglibdir", "--parsable", output=str, error=str
            )
            for line in out.splitlines():
                if line.startswith("path:pkglibdir:"):
                    return line[len("path:pkglibdir:"):].strip()
        except Exception:
            pass
        return ompi.prefix.lib.openmpi

    def setup_run_environment(self, env):
        # Open MPI 4.1 stops its component search at the first folder that does not
        # exist: Open MPI's own folder first, then strata's, both existing.
        env.prepend_path("OMPI_MCA_mca_base_component_path", self.prefix.lib.openmpi)
        env.prepend_path("OMPI_MCA_mca_base_component_path", self._ompi_component_dir())

    @run_after("install")
    @on_package_attributes(run_tests=True)
    def check_strata_info(self):
        """strata-info reports whether this build matches the Open MPI it runs with."""
        for name in ("strata-info",):
            exe = join_path(self.prefix.bin, name)
            if os.path.exists(exe):
                out = Executable(exe)(output=str, error=str)
                if "this build matches the installed Open MPI" not in out:
                    raise InstallError("strata-info: the build does not match its Open MPI:\n" + out)
                return
        raise InstallError("no strata-info in " + self.prefix.bin)
