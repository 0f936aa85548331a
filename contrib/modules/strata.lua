-- SPDX-License-Identifier: BSD-3-Clause
-- strata.lua - Lmod module file for a strata prefix install (coll/strata, an Open MPI
-- collective component). A template: contrib/modules/strata-modulefile fills in the
-- four @...@ values below from an installed prefix and writes MODULEDIR/strata/VERSION.lua.
--
-- `module load strata` then
--   * puts PREFIX/bin (strata-info, the benchmark) on PATH and PREFIX/share/man on MANPATH,
--     each only if it exists;
--   * points Open MPI at the component through OMPI_MCA_mca_base_component_path: Open MPI's
--     own component folder first, strata's second, and only folders that exist (Open MPI
--     4.1 stops its search at the first missing folder and then loads nothing after it,
--     silently). Folders the variable held already stay, after these two.
-- It refuses to load when strata's component is not where the file says, so a stale
-- module file fails at `module load`, not as a job that quietly runs without strata.
-- `module unload strata` takes every change back.

local prefix         = "@STRATA_PREFIX@"
local component_dir  = "@STRATA_COMPONENT_DIR@"
local ompi_dir       = "@OMPI_COMPONENT_DIR@"
local version        = "@STRATA_VERSION@"
local path_var       = "OMPI_MCA_mca_base_component_path"

whatis("Name: strata")
whatis("Version: " .. version)
whatis("Description: hierarchical MPI collectives for Open MPI (coll/strata component)")
help([[
strata ]] .. version .. [[: an Open MPI collective component (coll/strata).
Loading this module makes Open MPI find it in
  ]] .. component_dir .. [[

(through ]] .. path_var .. [[, after Open MPI's own
  ]] .. ompi_dir .. [[
) and puts strata-info on PATH. Jobs then use strata with no other change;
`mpirun --mca coll_strata_verbose 1 ...` shows what it does.
Run a job without it: mpirun --mca coll_strata_enable 0 ...
]])

-- Checked on load only, so an unload always works, even once the folders are gone.
if mode() == "load" then
    if not isFile(pathJoin(component_dir, "mca_coll_strata.so")) then
        LmodError("strata: no mca_coll_strata.so in " .. component_dir ..
                  "; this module file does not match the installation (regenerate it with strata-modulefile)")
    end
    if not isDir(ompi_dir) then
        LmodError("strata: Open MPI's component folder " .. ompi_dir .. " does not exist; strata " ..
                  version .. " was built for the Open MPI that has it (load that Open MPI, or rebuild strata)")
    end
end

-- present(dir): a folder to add. Only existing ones go in on load; on unload every
-- folder is taken out, so an unload after the install was removed leaves nothing.
local function present(dir)
    return mode() ~= "load" or isDir(dir)
end

setenv("STRATA_ROOT", prefix)
if present(pathJoin(prefix, "bin")) then
    prepend_path("PATH", pathJoin(prefix, "bin"))
end
if present(pathJoin(prefix, "share/man")) then
    prepend_path("MANPATH", pathJoin(prefix, "share/man"))
end

-- Component path: nothing to add when strata sits in Open MPI's own folder. Otherwise
-- Open MPI's folder first and strata's second, in front of whatever the variable held
-- (prepended in reverse order; Lmod counts references, so unloading removes only what
-- this module added).
if component_dir ~= ompi_dir then
    for _, dir in ipairs({component_dir, ompi_dir}) do
        if present(dir) then
            prepend_path(path_var, dir)
        end
    end
end
