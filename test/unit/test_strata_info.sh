#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# strata-info end to end: runs anywhere (no GPU, no UCX, no MPI job needed) and
# checks the JSON against its schema, the exit codes and that --selftest
# leaves nothing in /dev/shm. STRATA_INFO overrides the binary, STRATA_COMPONENT_DIR
# the folder of the built mca_coll_strata.so (default: .libs of the build tree).
#
# Exit codes: 0 the component loads, 1 a self-test check failed, 2 bad arguments,
# 3 the component would not load (one line on stderr says why). The report runs with
# the build's component on Open MPI's component path (it loads: exit 0), then without
# it, with a file Open MPI cannot open, and with no Open MPI: exit 3 and the reason.
set -u
BIN=${STRATA_INFO:-./strata-info}
[ -x "$BIN" ] || { echo "SKIP: $BIN not built"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not found"; exit 77; }
fail=0
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
uid=$(id -u)
before=$(ls /dev/shm 2>/dev/null | grep -c "^strata-$uid-")

# Open MPI's own component folder, then the build's component (folders that exist
# only: Open MPI 4.1 stops its search at a missing one).
have_ompi=0
if command -v ompi_info >/dev/null 2>&1; then
    pkglib=$(ompi_info --path pkglibdir --parsable 2>/dev/null | sed -n 's/^.*pkglibdir://p' | head -n 1)
    [ -n "$pkglib" ] || pkglib=$(ompi_info --path pkglibdir 2>/dev/null | sed -n 's/^.*Pkglibdir: *//p' | head -n 1)
    ompi_version=$(ompi_info --parsable 2>/dev/null | sed -n 's/^ompi:version:full://p' | head -n 1)
    compdir=$(cd "${STRATA_COMPONENT_DIR:-.libs}" 2>/dev/null && pwd)
    if [ -n "$pkglib" ] && [ -n "$compdir" ] && [ -f "$compdir/mca_coll_strata.so" ]; then
        have_ompi=1
        export OMPI_MCA_mca_base_component_path="$pkglib:$compdir"
    else
        echo "note: no built component (${STRATA_COMPONENT_DIR:-.libs}/mca_coll_strata.so) or no pkglibdir: the load checks are skipped"
    fi
else
    echo "note: no ompi_info on PATH: the load checks are skipped"
fi
# The exit status the report must have: 0 where the component loads, else 3.
want_rc=3; [ $have_ompi = 1 ] && want_rc=0

"$BIN" --help >/dev/null || { echo "FAIL: --help"; fail=1; }
ver=$("$BIN" --version 2>&1); rc=$?
echo "$ver" | grep -qE '^strata-info \(strata\) [0-9]+\.[0-9]+\.[0-9]+, commit [^ ]' && [ $rc -eq 0 ] ||
    { echo "FAIL: --version (exit $rc) says '$ver', not 'strata-info (strata) X.Y.Z, commit C'"; fail=1; }
"$BIN" --bogus >/dev/null 2>&1; [ $? -eq 2 ] || { echo "FAIL: bad argument must exit 2"; fail=1; }
"$BIN" --ranks-per-node 0 >/dev/null 2>&1; [ $? -eq 2 ] || { echo "FAIL: --ranks-per-node 0 must exit 2"; fail=1; }
"$BIN" > "$tmp/table" 2>"$tmp/table.err"; rc=$?
[ $rc -eq $want_rc ] || { echo "FAIL: table run exit $rc, want $want_rc: $(cat "$tmp/table.err")"; fail=1; }
grep -qE '^  loads +(yes|NO: )' "$tmp/table" || { echo "FAIL: the table has no 'loads' line"; fail=1; }
for s in Build "CPU and memory" GPUs NICs UCX "Shared memory"; do
    grep -q "^$s" "$tmp/table" || { echo "FAIL: table lacks section '$s'"; fail=1; }
done
"$BIN" --json --selftest --ranks-per-node 3 > "$tmp/json" 2>"$tmp/json.err"
rc=$?
[ $rc -le 1 ] || [ $rc -eq $want_rc ] || { echo "FAIL: --selftest exit $rc"; fail=1; }

python3 - "$tmp/json" "$rc" "$tmp/table" "$have_ompi" <<'PY' || fail=1
import json, sys
doc = json.load(open(sys.argv[1]))
rc = int(sys.argv[2])
S, I, B, N, L, D = str, int, bool, type(None), list, dict
schema = {
    "schema": S,
    "build": {"strata_version": S, "cuda": B, "cuda_version": (S, N), "cuda_ptx_isa": (S, N),
              "hwloc_compile": S, "hwloc_runtime": S, "ucx_compile": (S, N), "ucx_runtime": (S, N),
              "compiler": S},
    "ompi_series": D,
    "open_mpi": {"found": B, "version": (S, N), "cuda_aware": (B, N), "note": S},
    "cpu": {"found": B, "note": S, "packages": I, "numa_nodes": I, "cores": I, "pus": I, "numa": L},
    "cuda": {"driver_found": B, "driver_needed": (S, N), "driver_version": (S, N), "note": S,
             "mps": {"running": B, "pipe_dir": S}, "nvml": {"found": B, "note": S}, "pci_gpus": L},
    "gpus": L, "peer_access": L, "nvlinks": L, "nics": L,
    "rails": {"ranks_per_node": I, "map": L},
    "ucx": {"found": B, "version": (S, N), "method": S, "transports": L, "cuda_memory": B, "note": S},
    "gpudirect_rdma": {"loaded": B, "module": (S, N)},
    "shm": {"path": S, "ok": B, "total_bytes": I, "free_bytes": I, "note": S},
    "selftest": L,
}
items = {
    "gpus": {"index": I, "name": S, "memory_bytes": I, "compute_capability": S, "pci_bus_id": S,
             "numa_node": I, "nearest_nic": (S, N), "nic_distance": I, "nvswitch_links": I},
    "nics": {"name": S, "kind": S, "pci_bus_id": (S, N), "numa_node": I, "aliases": L},
    "selftest": {"name": S, "status": S, "ms": (float, int), "reason": S},
}
errors = []
def check(obj, sch, path):
    if isinstance(sch, dict):
        if not isinstance(obj, dict):
            errors.append(path + ": not an object"); return
        for k, t in sch.items():
            if k not in obj: errors.append(path + "." + k + ": missing")
            else: check(obj[k], t, path + "." + k)
        for k in obj:
            if k not in sch: errors.append(path + "." + k + ": not in schema")
    else:
        ok = isinstance(obj, sch) and not (sch is I and isinstance(obj, bool))
        if not ok: errors.append("%s: %r is not %s" % (path, obj, sch))
check(doc, schema, "$")
for key, sch in items.items():
    for i, it in enumerate(doc.get(key, [])): check(it, sch, "$.%s[%d]" % (key, i))
if doc.get("schema") != "strata-info/1": errors.append("$.schema: unexpected " + str(doc.get("schema")))
# The driver the kernels need follows from their PTX's ISA (the build lowers a newer
# one to 8.0, CUDA 12.0's): 8.0 -> 12.0, 7.x (a CUDA 11 toolkit) -> 11.x.
build, cuda = doc["build"], doc["cuda"]
if build["cuda"]:
    isa, need = build["cuda_ptx_isa"], cuda["driver_needed"]
    want = {"8.0": "12.0"}.get(isa, "11." + isa[2:] if isa and isa.startswith("7.") else None)
    if want is None or need != want:
        errors.append("PTX ISA %r wants driver %r, strata-info says %r" % (isa, want, need))
    said = "kernels need a CUDA driver >= %s, r" % need
    if said not in open(sys.argv[3]).read(): errors.append("the table does not say '%s...'" % said)
elif build["cuda_ptx_isa"] is not None or cuda["driver_needed"] is not None:
    errors.append("a build without CUDA states a PTX ISA or a driver")
rails = doc["rails"]
if rails["ranks_per_node"] != 3 or len(rails["map"]) != 3: errors.append("$.rails: want 3 entries")
names = [t["name"] for t in doc["selftest"]]
for want in ["shm.create", "shm.open_map", "shm.read", "shm.unlink", "shm.write_back"]:
    if want not in names: errors.append("selftest lacks " + want)
bad = [t for t in doc["selftest"] if t["status"] not in ("OK", "FAIL", "SKIP")]
if bad: errors.append("bad status: %r" % bad)
failed = [t for t in doc["selftest"] if t["status"] == "FAIL"]
if failed: errors.append("self-test failures: %r" % failed)
if (rc == 1) != bool(failed): errors.append("exit %d does not match failures" % rc)
series = doc["ompi_series"]
loads = series.get("component_loads")
if not isinstance(loads, bool): errors.append("$.ompi_series.component_loads: %r is not a bool" % loads)
elif sys.argv[4] == "1" and not loads:
    errors.append("the built component is on the path but component_loads is false: %r" % series.get("component_problem"))
elif not failed and (rc == 3) != (not loads): errors.append("exit %d does not match component_loads %r" % (rc, loads))
if loads is False and not series.get("component_problem"): errors.append("component_loads is false without a reason")
if loads is True and series.get("component_problem") is not None: errors.append("component_loads with a problem")
n = len(doc["gpus"])
for m in ("peer_access", "nvlinks"):
    if len(doc[m]) != n or any(len(r) != n for r in doc[m]): errors.append(m + " is not %dx%d" % (n, n))
for e in errors: print("FAIL:", e)
sys.exit(1 if errors else 0)
PY

# The component would not load: exit 3, the reason on stderr (one line) and in the report.
# want_load_failure NAME PATTERN [ARGS...]: runs strata-info with ARGS.
want_load_failure() {
    local name=$1 pattern=$2; shift 2
    "$BIN" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"; local rc=$?
    local why; why=$(cat "$tmp/$name.err")
    if [ $rc -ne 3 ]; then
        echo "FAIL: $name: exit $rc, want 3 (the component would not load); stderr: $why"; fail=1
    elif [ "$(wc -l <"$tmp/$name.err")" -ne 1 ] || ! grep -q '^strata-info: the component would not load: ' "$tmp/$name.err"; then
        echo "FAIL: $name: stderr is not one 'strata-info: the component would not load: ...' line: $why"; fail=1
    elif ! grep -q -- "$pattern" "$tmp/$name.err"; then
        echo "FAIL: $name: the reason does not say '$pattern': $why"; fail=1
    elif ! grep -q -- "$pattern" "$tmp/$name.out"; then
        echo "FAIL: $name: the report does not say '$pattern'"; fail=1
    else
        echo "ok: $name: exit 3, $(cut -c1-150 "$tmp/$name.err")"
    fi
}
if [ $have_ompi = 1 ]; then
    mkdir -p "$tmp/empty" "$tmp/broken"
    OMPI_MCA_mca_base_component_path="$pkglib:$tmp/empty" \
        want_load_failure not-installed "no mca_coll_strata.so in Open MPI's component path"
    # a file named like the component that Open MPI cannot open (as a build for another
    # Open MPI, or one whose library is missing): the dlopen error is the reason
    echo "not a shared object" >"$tmp/broken/mca_coll_strata.so"
    OMPI_MCA_mca_base_component_path="$pkglib:$tmp/broken" \
        want_load_failure cannot-open "Open MPI could not open it: unable to open mca_coll_strata"
    case $ompi_version in
    4.*) OMPI_MCA_mca_base_component_path="$pkglib:$tmp/no-such-folder:$compdir" \
            want_load_failure missing-folder "$tmp/no-such-folder, which does not exist" ;;
    esac
    OMPI_MCA_mca_base_component_path="$pkglib:$tmp/empty" "$BIN" --json >"$tmp/json-bad" 2>/dev/null
    python3 - "$tmp/json-bad" <<'PY' || fail=1
import json, sys
s = json.load(open(sys.argv[1])).get("ompi_series", {})
if s.get("component_loads") is not False or "no mca_coll_strata.so" not in (s.get("component_problem") or ""):
    print("FAIL: --json without the component: component_loads %r, component_problem %r"
          % (s.get("component_loads"), s.get("component_problem"))); sys.exit(1)
PY
fi
want_load_failure no-open-mpi "no Open MPI answered" --ompi-info "$tmp/no-ompi_info"

after=$(ls /dev/shm 2>/dev/null | grep -c "^strata-$uid-")
[ "$before" = "$after" ] || { echo "FAIL: --selftest left segments in /dev/shm"; fail=1; }
[ $fail -eq 0 ] && echo "PASS: strata-info"
exit $fail
