// SPDX-License-Identifier: BSD-3-Clause
// perf/strata_probe.cc - measures the rates perf/strata-model needs, on this machine.
//
// Every rank works at once, as in a collective, so each number is what one rank
// gets while its peers do the same (shared memory bandwidth, shared cores):
//
//   copy    the host memory domain's copy (src/mem) of each size, time per call
//   reduce  the host domain's float-sum reduction of 2 operands (the rails' fold) and
//           of `-L` operands (a node's reduction), time per call
//           each three times: "hot", the same buffers again and again (they stay in
//           cache); "l3", pieces of that size walking through 4 MiB arenas; "stream",
//           pieces walking through 64 MiB arenas (memory)
//   p2p     MPI ping-pong between rank r and r + size/2, all pairs at once: half the
//           round trip for each size
//   step    the progress engine's own cost per step (src/engine.h): a chain of
//           signals, and a chain of 64-byte copies, run on the host domain
//   flag    a shared-memory flag passed back and forth between the same pairs (an
//           MPI shared window), spinning with sched_yield as the engine does: half
//           the round trip
//
// Rank 0 prints one JSON object; `perf/strata-model measure` runs this under mpirun
// and turns it into a machine file. Times are the median of the repetitions, taken
// as the maximum over ranks of each repetition.
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "engine.h"
#include "mem/domain.h"

namespace {

using strata::MemDomain;
using strata::Ticket;

// Median over reps of the slowest rank's time for one call of fn.
template <class F>
double timed(int reps, F fn) {
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        fn();
        double dt = MPI_Wtime() - t0, worst = 0;
        MPI_Allreduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        t.push_back(worst);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

// Repetitions: enough to see past a descheduled rank, few for big sizes.
int reps_for(size_t bytes) { return bytes <= (64u << 10) ? 41 : bytes <= (1u << 20) ? 15 : 7; }

// Inner loop count, so that one timed sample of a small size is not just timer noise.
int inner_for(size_t bytes) { return bytes <= 4096 ? 64 : bytes <= (64u << 10) ? 8 : 1; }

}  // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int node_ops = 2;
    size_t max_bytes = size_t(16) << 20;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "-L") && i + 1 < argc) node_ops = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-e") && i + 1 < argc) max_bytes = strtoull(argv[++i], nullptr, 10);
    }
    if (node_ops < 2) node_ops = 2;
    std::vector<size_t> sizes;
    for (size_t b = 1024; b <= max_bytes; b *= 4) sizes.push_back(b);

    MemDomain &dom = strata::host_domain();
    // Arenas: the hot measurements use their first bytes only.
    const size_t arena = std::max(max_bytes, size_t(64) << 20);
    std::vector<char> a(arena, 1), b(arena, 2);
    std::vector<std::vector<char>> ops(size_t(node_ops), std::vector<char>(arena, 1));

    if (rank == 0) printf("{\"ranks\":%d,\"node_ops\":%d,\n", size, node_ops);

    // copy and reduce: time of one call of each size, all ranks at once.
    // walk = 0: the same buffers; else pieces walking through the first `walk` bytes.
    auto rate_table = [&](const char *name, int nsrc, size_t walk) {
        if (rank == 0) printf("\"%s\":[", name);
        const bool stream = walk != 0;
        for (size_t i = 0; i < sizes.size(); ++i) {
            const size_t n = sizes[i];
            const size_t span = std::max(walk, n);
            // Walking: as many pieces as fill the span (at least 8 calls), one per call.
            const int inner = stream ? int(std::max<size_t>(8, span / n)) : inner_for(n);
            size_t at = 0;
            const double t = timed(stream ? 5 : reps_for(n), [&] {
                for (int k = 0; k < inner; ++k) {
                    if (stream && (at += n) + n > span) at = 0;
                    const size_t off = stream ? at : 0;
                    std::vector<const void *> srcs;
                    for (int s = 0; s < nsrc; ++s) srcs.push_back(ops[size_t(s)].data() + off);
                    Ticket tk;
                    if (nsrc == 0) dom.copy(b.data() + off, a.data() + off, n, &tk);
                    else dom.reduce(b.data() + off, srcs.data(), nsrc, n / 4, STRATA_FLOAT, STRATA_OP_SUM, &tk);
                }
            }) / inner;
            if (rank == 0) printf("%s[%zu,%.4g]", i ? "," : "", n, t * 1e6);
        }
        if (rank == 0) printf("],\n");
    };
    const size_t l3 = size_t(4) << 20;
    rate_table("copy_hot_us", 0, 0);
    rate_table("copy_l3_us", 0, l3);
    rate_table("copy_stream_us", 0, arena);
    rate_table("reduce2_hot_us", 2, 0);
    rate_table("reduce2_l3_us", 2, l3);
    rate_table("reduce2_stream_us", 2, arena);
    rate_table("reduceL_hot_us", node_ops, 0);
    rate_table("reduceL_l3_us", node_ops, l3);
    rate_table("reduceL_stream_us", node_ops, arena);

    // step: chains of 4096 signals and of 4096 tiny copies through the engine.
    {
        const int chain = 4096;
        uint64_t flag = 0;
        char tiny_a[64] = {1}, tiny_b[64] = {0};
        strata_transport_t tp{};
        strata::TransportChannel none(tp);  // no transfers in these chains
        strata::Schedule sched;
        auto run_chain = [&](bool copies) {
            sched.clear();
            strata::StepId last = strata::kNoStep;
            for (int k = 0; k < chain; ++k)
                last = copies ? sched.copy(dom, tiny_b, tiny_a, sizeof tiny_a, {last})
                              : sched.signal(&flag, uint64_t(k + 1), {last});
            sched.run(none);
        };
        const double ts = timed(15, [&] { run_chain(false); }) / chain;
        const double tc = timed(15, [&] { run_chain(true); }) / chain;
        if (rank == 0) printf("\"signal_step_us\":%.4g,\"copy_step_us\":%.4g,\n", ts * 1e6, tc * 1e6);
    }

    // p2p: rank r and r + size/2 (with node_size = size/2 they are on different
    // virtual nodes); an odd last rank sits out.
    const int half = size / 2;
    const int peer = size < 2 ? -1 : rank < half ? rank + half : rank - half < half ? rank - half : -1;
    const bool first = rank < half;
    if (rank == 0) printf("\"p2p_us\":[");
    std::vector<size_t> psizes{0, 8, 64, 512};
    for (size_t s : sizes) psizes.push_back(s);
    for (size_t i = 0; i < psizes.size(); ++i) {
        const size_t n = psizes[i];
        const int inner = inner_for(n);
        const double t = timed(reps_for(n), [&] {
            if (peer < 0) return;
            for (int k = 0; k < inner; ++k) {
                if (first) {
                    MPI_Send(a.data(), int(n), MPI_BYTE, peer, 7, MPI_COMM_WORLD);
                    MPI_Recv(b.data(), int(n), MPI_BYTE, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(b.data(), int(n), MPI_BYTE, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(a.data(), int(n), MPI_BYTE, peer, 7, MPI_COMM_WORLD);
                }
            }
        }) / inner / 2;
        if (rank == 0) printf("%s[%zu,%.4g]", i ? "," : "", n, t * 1e6);
    }
    if (rank == 0) printf("],\n");

    // flag: a counter in a shared window; the pair takes turns raising it.
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Win win;
    volatile long *mine = nullptr;
    MPI_Win_allocate_shared(sizeof(long), sizeof(long), MPI_INFO_NULL, node, (void *)&mine, &win);
    *mine = 0;
    volatile long *theirs = nullptr;
    int node_rank = 0;
    MPI_Comm_rank(node, &node_rank);
    int peer_node_rank = -1;
    if (peer >= 0) {
        // The peer's rank in the node communicator (the same host here: -1 otherwise).
        MPI_Group w, g;
        MPI_Comm_group(MPI_COMM_WORLD, &w);
        MPI_Comm_group(node, &g);
        MPI_Group_translate_ranks(w, 1, &peer, g, &peer_node_rank);
        MPI_Group_free(&w);
        MPI_Group_free(&g);
        if (peer_node_rank != MPI_UNDEFINED) {
            MPI_Aint sz;
            int du;
            MPI_Win_shared_query(win, peer_node_rank, &sz, &du, (void *)&theirs);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    long round = 0;
    const int flag_inner = 200;
    const double tf = timed(21, [&] {
        if (theirs == nullptr) return;
        for (int k = 0; k < flag_inner; ++k) {
            ++round;
            if (first) {
                __atomic_store_n(mine, round, __ATOMIC_RELEASE);
                int spins = 0;
                while (__atomic_load_n(theirs, __ATOMIC_ACQUIRE) < round)
                    if (++spins > 8) sched_yield();
            } else {
                int spins = 0;
                while (__atomic_load_n(theirs, __ATOMIC_ACQUIRE) < round)
                    if (++spins > 8) sched_yield();
                __atomic_store_n(mine, round, __ATOMIC_RELEASE);
            }
        }
    }) / flag_inner / 2;
    if (rank == 0) printf("\"flag_us\":%.4g}\n", tf * 1e6);
    MPI_Win_free(&win);
    MPI_Comm_free(&node);
    MPI_Finalize();
    return 0;
}
