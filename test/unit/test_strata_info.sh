#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# strata-info end to end: runs anywhere (no GPU, no UCX, no MPI needed) and
# checks the JSON against its schema, the exit codes and that --selftest
# leaves nothing in /dev/shm. STRATA_INFO overrides the binary.
set -u
BIN=${STRATA_INFO:-./strata-info}
[ -x "$BIN" ] || { echo "SKIP: $BIN not built"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not found"; exit 77; }
fail=0
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
uid=$(id -u)
before=$(ls /dev/shm 2>/dev/null | grep -c "^strata-$uid-")

"$BIN" --help >/dev/null || { echo "FAIL: --help"; fail=1; }
"$BIN" --bogus >/dev/null 2>&1; [ $? -eq 2 ] || { echo "FAIL: bad argument must exit 2"; fail=1; }
"$BIN" --ranks-per-node 0 >/dev/null 2>&1; [ $? -eq 2 ] || { echo "FAIL: --ranks-per-node 0 must exit 2"; fail=1; }
"$BIN" > "$tmp/table" || { echo "FAIL: table run exit $?"; fail=1; }
for s in Build "CPU and memory" GPUs NICs UCX "Shared memory"; do
    grep -q "^$s" "$tmp/table" || { echo "FAIL: table lacks section '$s'"; fail=1; }
done
"$BIN" --json --selftest --ranks-per-node 3 > "$tmp/json"
rc=$?
[ $rc -le 1 ] || { echo "FAIL: --selftest exit $rc"; fail=1; }

python3 - "$tmp/json" "$rc" "$tmp/table" <<'PY' || fail=1
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
n = len(doc["gpus"])
for m in ("peer_access", "nvlinks"):
    if len(doc[m]) != n or any(len(r) != n for r in doc[m]): errors.append(m + " is not %dx%d" % (n, n))
for e in errors: print("FAIL:", e)
sys.exit(1 if errors else 0)
PY

after=$(ls /dev/shm 2>/dev/null | grep -c "^strata-$uid-")
[ "$before" = "$after" ] || { echo "FAIL: --selftest left segments in /dev/shm"; fail=1; }
[ $fail -eq 0 ] && echo "PASS: strata-info"
exit $fail
