# SPDX-License-Identifier: BSD-3-Clause
"""mpi4py_check - collectives from Python, the way mpi4py programs make them.

    mpirun -np N python3 test/mpi/mpi4py_check.py [THREAD_LEVEL] [ROUNDS]

THREAD_LEVEL is mpi4py's rc.thread_level (single, funneled, serialized, multiple;
default multiple, mpi4py's own default). On COMM_WORLD and on communicators made by
Dup, Split, Split_type, Create_group, Idup and an intercommunicator's Merge, it runs
the pickle-based and the buffer-based (numpy) collectives strata serves, blocking and
nonblocking, and checks every value. Prints "mpi4py_check: PASS ..." on rank 0 and
exits 0, or prints MISMATCH lines and exits 1. STRATA_TEST_CORRUPT=1 corrupts one
result on purpose (the check must then fail).
"""
import os
import sys

import mpi4py

mpi4py.rc.thread_level = sys.argv[1] if len(sys.argv) > 1 else "multiple"
from mpi4py import MPI  # noqa: E402  (rc must be set before MPI is imported)
import numpy as np  # noqa: E402

ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 2
CORRUPT = os.environ.get("STRATA_TEST_CORRUPT") == "1"
errors = 0


def expect(what, got, want):
    global errors
    if not np.array_equal(np.asarray(got), np.asarray(want)):
        errors += 1
        print(f"MISMATCH rank {MPI.COMM_WORLD.rank} {what}: got {np.asarray(got).ravel()[:4]}..., "
              f"want {np.asarray(want).ravel()[:4]}...", flush=True)


def check(comm, name, n=4096):
    r, s = comm.rank, comm.size
    # pickle-based (small objects)
    expect(f"{name} allreduce(obj)", comm.allreduce(r + 1, op=MPI.SUM), s * (s + 1) // 2)
    expect(f"{name} allgather(obj)", comm.allgather(r), list(range(s)))
    expect(f"{name} bcast(obj)", comm.bcast("x" * (r + 1) if r == 0 else None, root=0), "x")
    expect(f"{name} alltoall(obj)", comm.alltoall([r * 100 + d for d in range(s)]),
           [q * 100 + r for q in range(s)])
    # buffer-based (numpy): what strata serves with its own algorithms
    base = np.arange(n, dtype=np.int64) % 1000 + 1
    out = np.empty(n, dtype=np.int64)
    comm.Allreduce(base * (r + 1), out, op=MPI.SUM)
    if CORRUPT and name == "dup":
        out[n // 2] += 1
    expect(f"{name} Allreduce", out, base * (s * (s + 1) // 2))
    mine = base * (r + 1)  # a name keeps it alive until Wait
    req = comm.Iallreduce(mine, out, op=MPI.SUM)
    req.Wait()
    expect(f"{name} Iallreduce", out, base * (s * (s + 1) // 2))
    gathered = np.empty(n * s, dtype=np.int64)
    comm.Allgather(base + r, gathered)
    expect(f"{name} Allgather", gathered, np.concatenate([base + q for q in range(s)]))
    buf = base * 7 if r == 0 else np.zeros(n, dtype=np.int64)
    comm.Bcast(buf, root=0)
    expect(f"{name} Bcast", buf, base * 7)
    send = np.concatenate([base + r * 10 + d for d in range(s)])
    recv = np.empty(n * s, dtype=np.int64)
    comm.Alltoall(send, recv)
    expect(f"{name} Alltoall", recv, np.concatenate([base + q * 10 + r for q in range(s)]))
    part = np.empty(n, dtype=np.int64)
    comm.Reduce_scatter_block(np.tile(base, s) * (r + 1), part, op=MPI.SUM)
    expect(f"{name} Reduce_scatter_block", part, base * (s * (s + 1) // 2))
    total = np.empty(n, dtype=np.int64) if r == 0 else None
    comm.Reduce(base * (r + 1), total, op=MPI.SUM, root=0)
    if r == 0:
        expect(f"{name} Reduce", total, base * (s * (s + 1) // 2))


world = MPI.COMM_WORLD
check(world, "world")
for _ in range(ROUNDS):
    dup = world.Dup()
    check(dup, "dup")
    split = dup.Split(world.rank % 2, world.size - world.rank)
    check(split, "split")
    shared = world.Split_type(MPI.COMM_TYPE_SHARED)
    check(shared, "split_type")
    group = world.Get_group().Incl(list(range(0, world.size, 2)))
    if world.rank % 2 == 0:
        grouped = world.Create_group(group)
        check(grouped, "create_group")
        grouped.Free()
    group.Free()
    req = dup.Idup() if hasattr(dup, "Idup") else None
    if req is not None:
        idup, req = req if isinstance(req, tuple) else (req, None)
        if req is not None:
            req.Wait()
        check(idup, "idup")
        idup.Free()
    if world.size > 1:
        low = world.rank < (world.size + 1) // 2
        half = world.Split(int(low), world.rank)
        inter = half.Create_intercomm(0, world, (world.size + 1) // 2 if low else 0, 11)
        merged = inter.Merge(high=not low)
        check(merged, "intercomm_merge")
        merged.Free()
        inter.Free()
        half.Free()
    shared.Free()
    split.Free()
    dup.Free()

total = world.allreduce(errors, op=MPI.SUM)
if world.rank == 0:
    print(f"mpi4py_check: {'FAIL' if total else 'PASS'} (np {world.size}, thread level "
          f"{mpi4py.rc.thread_level}, provided {MPI.Query_thread()}, {ROUNDS} rounds)", flush=True)
sys.exit(1 if total else 0)
