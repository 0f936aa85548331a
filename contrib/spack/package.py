# SPDX-License-Identifier: BSD-3-Clause
#
# Spack recipe for strata (coll/strata, an Open MPI collective component). Put it in a
# Spack package repository as strata/package.py in its packages folder (docs/admin.md,
# "Spack"). Run by Spack 0.23.0.dev0 against Debian's Open MPI 4.1.4, hwloc, UCX and a
# CUDA toolkit as externals (contrib/check-spack repeats that run); written for Spack 0.22
# and later, 1.x included, where it has not been run.
#
# strata has no public download site: a centre serves the release tarball
# (strata-VERSION.tar.gz from `make dist`) from a Spack source mirror, where Spack
# looks first (mirror layout: strata/strata-VERSION.tar.gz), or builds a source folder
# with `spack develop`. The .invalid host below is never reached when a mirror holds the
# tarball. A version without a checksum installs with --no-checksum; a centre adds the
# sha256 of its own tarball (sha256sum strata-VERSION.tar.gz).

import os
import re

from spack.package import *

try:  # Spack 1.x: the build systems live in the builtin package repository
    from spack_repo.builtin.build_systems.autotools import AutotoolsPackage
except ImportError:  # Spack 0.2x: spack.package exports them
    pass

# The compilers a package needs are dependencies on languages from Spack 0.23.0 on (1.x:
# virtuals that compiler packages provide). Before, every package gets the compiler and
# a Spack that does not know "c" as a language takes depends_on("c") for a package named
# c, which nothing provides: the concretizer stops ("Package 'c' not found").
try:
    from spack.directives import SUPPORTED_LANGUAGES as _SPACK_LANGUAGES
except ImportError:  # Spack 1.x: c and cxx are virtuals of the compiler packages
    _SPACK_LANGUAGES = ("c", "cxx")


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
    variant("ucx", default=False, description="the UCX point-to-point channel between nodes (coll_strata_p2p_channel=ucx)")

    # A component is built for one Open MPI series (4.1: coll API 2.0.0, 5.0: 2.4.0) and
    # needs Open MPI's internal development headers (ompi/mca/coll/coll.h, opal_config.h).
    depends_on("openmpi@4.1.0:4.1,5.0.0:5.0")
    if "c" in _SPACK_LANGUAGES:
        depends_on("c", type="build")
    if "cxx" in _SPACK_LANGUAGES:
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

    # strata-info is built with hwloc only (its node report is hwloc's).
    @run_after("install", when="+hwloc")
    @on_package_attributes(run_tests=True)
    def check_strata_info(self):
        """strata-info, with the component path a loaded package sets, must find the
        component loadable and built for the Open MPI it runs with (it exits 3 when the
        component would not load)."""
        exe = join_path(self.prefix.bin, "strata-info")
        if not os.path.exists(exe):
            raise InstallError("no strata-info in " + self.prefix.bin)
        path = self._ompi_component_dir() + ":" + self.prefix.lib.openmpi
        out = Executable(exe)(
            output=str, error=str, fail_on_error=False,
            extra_env={"OMPI_MCA_mca_base_component_path": path},
        )
        loads = re.search(r"^\s*loads\s+yes\b", out, re.MULTILINE)
        if not loads or "this build matches the installed Open MPI" not in out:
            raise InstallError("strata-info: the component does not load or does not match its Open MPI:\n" + out)
