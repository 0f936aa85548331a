// SPDX-License-Identifier: BSD-3-Clause
// test/unit/cuda_collectives_test.cc - every collective on device buffers, on device
// teams with several ranks per node (zero copy inside a node included).
//
// On a device team (every rank has a CUDA context current: team.cc agree_device) the
// slots live in GPU memory and are exported to node peers through CUDA IPC;
// calls above cfg.zero_copy_size of allreduce hier_ring, reduce_scatter hier_direct
// (not in place), bcast, single-node allgather, alltoall pairwise (plain, not in
// place), gather and scatter (the root's node) read node peers' buffers in place through the team's IPC cache (README,
// "Zero copy inside a node"). Ranks as threads share one process, and CUDA IPC cannot
// open a process's own handles; the fake driver can when FAKECUDA_IPC_SELF=1 (each open
// gets a mapping of its own, as in another process), so here several ranks of a node
// run the device path in one process. The variable is set only for the life of each
// test: cuda_team_test.cc expects in-process IPC to fail.
//
// Each layout (one node of 2 and of 3, two nodes of 2, nodes of 3 and 2) runs every
// collective on device buffers, in place and not, with uneven blocks (v variants with
// gaps and blocks out of rank order), bcast from every root, reduce at rotating roots,
// gather and scatter at rotating roots (in place and not),
// and counts of 0, 1, a prime and a few thousand elements, on one team per algorithm
// index (team t forces every collective to its algorithm t), with 512-byte segments
// (many per call, stages reused) and a 256-byte threshold, so that one team takes both
// the zero-copy and the stage path; and that with IPC caches of 64, 1 and 0 mappings.
// Between nodes, device memory goes staged through host (the in-process transport is
// not CUDA-aware). Every call gets fresh device buffers, freed when it returns:
// the fake poisons freed memory, so a rank that returned while a peer still read its
// buffer shows as a wrong result, and cached mappings of freed buffers go stale.
// Checked: exact results on every rank (receive buffers start as a sentinel, so a
// stray write shows, and send buffers must come back unchanged); the core's log says
// every team runs in GPU memory, every call ran there, and each zero-copy collective
// read peers' buffers in place at least once (none with a cache of 0); each forced
// algorithm ran; no message left unreceived, nothing left in /dev/shm, and once the
// teams are gone no device allocation or IPC mapping left (fakecuda_stats).
// Needs the fake driver (test/fakecuda); skips elsewhere.
#include <dlfcn.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "coll_fixture.h"
#include "harness.h"
#include "mem/classify.h"
#include "mem/cuda_domain.h"
#include "mem/domain.h"
#include "strata.h"
#include "test/fakecuda/fakecuda.h"

namespace {

using strata_test::Layout;
using strata_test::ThreadJob;
using strata_test::blocks;

constexpr size_t kSegment = 512, kSmall = 256;
// Elements per call: none, one, a prime (at or below the threshold for int32, above
// it in most collectives' totals), and a prime spanning many segments.
const size_t kCounts[] = {0, 1, 61, 2003};
// The algorithm settings of a rank's teams: team t forces every collective to its
// algorithm t (its last where it has fewer), and there are teams until every algorithm
// of every collective has one.
using Setting = std::array<int, STRATA_COLL_COUNT>;
std::vector<Setting> team_settings() {
    std::vector<Setting> teams;
    for (bool more = true; more;) {
        const int t = int(teams.size());
        Setting algs{};
        more = false;
        for (int c = 0; c < STRATA_COLL_COUNT; ++c) {
            const int n = strata_algorithm_count(strata_coll_t(c));
            algs[size_t(c)] = std::min(t, n - 1);
            more = more || t + 1 < n;
        }
        teams.push_back(algs);
    }
    return teams;
}

// ---- the fake driver ---------------------------------------------------------------

// FAKECUDA_IPC_SELF=1 while it lives (the fake reads it at each cuIpcOpenMemHandle).
struct IpcSelf {
    IpcSelf() { setenv("FAKECUDA_IPC_SELF", "1", 1); }
    ~IpcSelf() { unsetenv("FAKECUDA_IPC_SELF"); }
    IpcSelf(const IpcSelf &) = delete;
    IpcSelf &operator=(const IpcSelf &) = delete;
};

// The loaded driver's fakecuda_stats, or nullptr on a real driver. strata dlopens
// libcuda.so.1 with RTLD_LOCAL, so the symbol is looked up in that library itself.
using StatsFn = int (*)(struct fakecuda_stats *);
StatsFn fake_stats() {
    void *f = dlsym(RTLD_DEFAULT, "fakecuda_stats");
    if (f == nullptr) {
        if (void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD)) {
            f = dlsym(h, "fakecuda_stats");
            dlclose(h);  // strata keeps its own reference
        }
    }
    return reinterpret_cast<StatsFn>(f);
}

// ---- what the core logs --------------------------------------------------------------

// Per collective: the calls logged, those that said "in GPU memory" and those that read
// local peers' buffers in place; the teams' "team ready" lines; and anything else
// (warnings, buffers that could not be shared, regions left allocated...).
struct LogTally {
    int calls[STRATA_COLL_COUNT] = {}, on_gpu[STRATA_COLL_COUNT] = {}, in_place[STRATA_COLL_COUNT] = {};
    std::vector<std::string> ready, other;
    int remapped = 0;        // lines of the IPC cache mapping over a stale mapping
    int copied_instead = 0;  // buffers copied because a stale mapping stayed in use
    int unshared = 0;        // the calls' notes about them
    int segments = 0;        // host segments made, and the largest one's bytes
    size_t largest_segment = 0;
};
std::mutex g_log_mu;
LogTally g_log;

void tally(int level, const char *msg) {
    if (level <= 0) fprintf(stderr, "strata: %s\n", msg);  // at once: a hang that follows shows why
    const std::string m(msg);
    std::lock_guard<std::mutex> g(g_log_mu);
    if (m.rfind("team ready", 0) == 0) {
        g_log.ready.push_back(m);
        return;
    }
    if (m.rfind("IPC cache of local peers' buffers", 0) == 0) return;  // the cache's report at release
    if (m.rfind("node flags ", 0) == 0) return;  // rank 0's line at setup: who writes them (stream_flags)
    // Ranks free and allocate buffers between calls, so a peer's new buffer may overlap
    // an old one still mapped here (the fake says ALREADY_MAPPED, as a GPU does); the
    // cache closes the stale mapping and maps again, saying so at level 2.
    if (level == 2 && (m.rfind("IPC cache: ", 0) == 0 ||
                       m.find("cuIpcOpenMemHandle failed: error 208") != std::string::npos)) {
        ++g_log.remapped;
        return;
    }
    // Here every rank is a thread of one process, so a stale mapping may be held by
    // another rank's communicator still inside a call, which is never closed under it:
    // then that buffer is copied instead (a real job meets this only with several
    // communicators). Allowed, counted, and bounded below.
    if (m.rfind("IPC cache: a node peer's buffer cannot be mapped", 0) == 0) {
        ++g_log.copied_instead;
        return;
    }
    if (g_log.copied_instead * 8 > g_log.unshared &&
        m.rfind("a buffer of this call cannot be shared through CUDA IPC", 0) == 0) {
        ++g_log.unshared;  // each rank of the node notes such a call (at most 8 here)
        return;
    }
    size_t bytes = 0;
    if (level == 2 && sscanf(m.c_str(), "node segment of %zu bytes", &bytes) == 1) {  // how setup made it
        ++g_log.segments;
        g_log.largest_segment = std::max(g_log.largest_segment, bytes);
        return;
    }
    for (int c = 0; c < STRATA_COLL_COUNT; ++c) {
        const std::string head = std::string(strata_coll_name(strata_coll_t(c))) + ": ";
        if (level != 2 || m.rfind(head, 0) != 0 || m.find(" bytes, ") == std::string::npos) continue;
        ++g_log.calls[c];
        g_log.on_gpu[c] += m.find(" in GPU memory") != std::string::npos;
        g_log.in_place[c] += m.find("local peers' buffers read in place (IPC)") != std::string::npos;
        return;
    }
    g_log.other.push_back("level " + std::to_string(level) + ": " + m);
}

// Captures the log for the life of the guard.
struct LogCapture {
    LogCapture() {
        std::lock_guard<std::mutex> g(g_log_mu);
        g_log = LogTally{};
        strata_set_logger(&tally);
    }
    ~LogCapture() { strata_set_logger(nullptr); }
    LogTally result() {
        std::lock_guard<std::mutex> g(g_log_mu);
        return g_log;
    }
};

// ---- device memory -------------------------------------------------------------------

// The device buffers of one call of one rank, all freed when it goes: every call gets
// new allocations, so node peers' cached mappings of the last ones go stale.
class CallMemory {
public:
    explicit CallMemory(strata::MemDomain &gpu) : gpu_(gpu) {}
    ~CallMemory() {
        for (void *p : owned_) gpu_.release(p);
    }
    CallMemory(const CallMemory &) = delete;
    CallMemory &operator=(const CallMemory &) = delete;

    // A new device buffer holding v (never empty: strata wants a buffer even for no
    // data); nullptr when allocating or copying failed.
    template <class T>
    void *upload(const std::vector<T> &v) {
        void *p = nullptr;
        if (gpu_.alloc(std::max<size_t>(v.size() * sizeof(T), 8), &p) != STRATA_OK) return nullptr;
        owned_.push_back(p);
        return transfer(p, v.data(), v.size() * sizeof(T)) ? p : nullptr;
    }
    template <class T>
    bool download(const void *p, std::vector<T> *v) {
        return transfer(v->data(), p, v->size() * sizeof(T));
    }

private:
    bool transfer(void *dst, const void *src, size_t bytes) {
        strata::Ticket t;
        if (bytes == 0) return true;
        return gpu_.copy(dst, src, bytes, &t) == STRATA_OK && strata::wait_ticket(gpu_, &t) == STRATA_OK;
    }
    strata::MemDomain &gpu_;
    std::vector<void *> owned_;
};

// ---- inputs and references -----------------------------------------------------------

// Data-movement elements: unique per (a, b, i), so a misplaced block never matches.
int32_t tag(int a, int b, size_t i) { return int32_t((a * 32 + b) * 65536 + int32_t(i)); }
constexpr int32_t kSentinel = -1;  // never a tag
constexpr double kSentinelD = -999.0;  // never a sum or max of value()

template <class T, class F>
std::vector<T> generate(size_t n, F f) {
    std::vector<T> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = f(i);
    return v;
}

// One rank's side of one call: the send buffer (none in place), the receive buffer's
// contents before (the input too, in place) and what its first want.size() elements
// must be after.
template <class T>
struct Call {
    bool in_place = false;
    std::vector<T> send, recv, want;
};

// Block placement of the v collectives: elems[r] elements at displs[r] in a buffer of
// total elements; the gaps between blocks keep what they had.
struct Placement {
    std::vector<size_t> elems, displs;
    size_t total = 0;
    std::vector<size_t> bytes(size_t es, const std::vector<size_t> &v) const {
        std::vector<size_t> b(v);
        for (size_t &x : b) x *= es;
        return b;
    }
};
// Blocks in reverse rank order, one element apart.
Placement reversed_with_gaps(const std::vector<size_t> &elems) {
    Placement p{elems, std::vector<size_t>(elems.size()), 0};
    for (size_t r = elems.size(); r-- > 0;) {
        p.displs[r] = p.total;
        p.total += elems[r] + 1;
    }
    return p;
}
// Blocks in rank order, packed.
Placement packed(const std::vector<size_t> &elems) {
    Placement p{elems, std::vector<size_t>(elems.size()), 0};
    for (size_t r = 0; r < elems.size(); ++r) {
        p.displs[r] = p.total;
        p.total += elems[r];
    }
    return p;
}

// ---- one rank's calls ----------------------------------------------------------------

struct Rank {
    strata_team_t *team;
    int me, size;
    strata::MemDomain &gpu;
    std::string first_error;

    size_t nr() const { return size_t(size); }
    // Runs fn(send, recv) on device copies of c, checks the result and that the send
    // buffer came back unchanged; the first failure is kept. Every rank makes every call
    // whatever happened before, so that its peers never wait for it.
    template <class T, class Fn>
    void run(const std::string &what, const Call<T> &c, Fn fn) {
        const std::string e = run_one(what, c, fn);
        if (!e.empty() && first_error.empty()) first_error = what + ": " + e;
    }
    template <class T, class Fn>
    std::string run_one(const std::string &what, const Call<T> &c, Fn fn) {
        CallMemory mem(gpu);
        void *s = c.in_place ? const_cast<void *>(STRATA_IN_PLACE) : mem.upload(c.send);
        void *r = mem.upload(c.recv);
        if (s == nullptr || r == nullptr) return "device buffers";
        const strata_status_t st = fn(s, r);
        if (st != STRATA_OK) {  // its peers may now wait for ever: say it at once
            fprintf(stderr, "rank %d: %s returned status %d\n", me, what.c_str(), int(st));
            return "status " + std::to_string(int(st));
        }
        std::vector<T> got(c.recv.size()), sent(c.send.size());
        if (!mem.download(r, &got) || (!c.in_place && !mem.download(s, &sent))) return "reading back";
        for (size_t i = 0; i < c.want.size(); ++i)
            if (memcmp(&got[i], &c.want[i], sizeof(T)) != 0)
                return "element " + std::to_string(i) + " of " + std::to_string(c.want.size()) + " is " +
                       std::to_string(got[i]) + ", not " + std::to_string(c.want[i]);
        if (!c.in_place && sent != c.send) return "the send buffer changed";
        return "";
    }

    template <class T>
    std::vector<T> mine(size_t n, strata_op_t op) const {
        return generate<T>(n, [&](size_t i) { return strata_test::value<T>(me, i, op); });
    }
    template <class T>
    std::vector<T> reduced(size_t n, strata_op_t op, size_t first = 0) const {
        return generate<T>(n, [&](size_t i) { return strata_test::expected<T>(size, first + i, op); });
    }

    void allreduce(size_t n) {
        Call<int32_t> sum;
        sum.send = mine<int32_t>(n, STRATA_OP_SUM);
        sum.recv.assign(n, kSentinel);
        sum.want = reduced<int32_t>(n, STRATA_OP_SUM);
        run("allreduce int32 sum", sum, [&](void *s, void *r) {
            return strata_allreduce(team, s, r, n, STRATA_INT32, STRATA_OP_SUM);
        });
        Call<double> max;
        max.in_place = true;
        max.recv = mine<double>(n, STRATA_OP_MAX);
        max.want = reduced<double>(n, STRATA_OP_MAX);
        run("allreduce double max in place", max, [&](void *s, void *r) {
            return strata_allreduce(team, s, r, n, STRATA_DOUBLE, STRATA_OP_MAX);
        });
    }

    // A vector of about n elements, split unevenly: rank r gets n / size + r % 3 (none
    // at all for some ranks with small n).
    void reduce_scatter(size_t n) {
        std::vector<size_t> counts(nr());
        for (size_t r = 0; r < counts.size(); ++r) counts[r] = n / nr() + r % 3;
        const Placement p = packed(counts);
        const size_t my = counts[size_t(me)], at = p.displs[size_t(me)];
        Call<int32_t> sum;
        sum.send = mine<int32_t>(p.total, STRATA_OP_SUM);
        sum.recv.assign(my, kSentinel);
        sum.want = reduced<int32_t>(my, STRATA_OP_SUM, at);
        run("reduce_scatter int32 sum", sum, [&](void *s, void *r) {
            return strata_reduce_scatter(team, s, r, counts.data(), STRATA_INT32, STRATA_OP_SUM);
        });
        Call<int32_t> min;  // in place: the whole input in recv, the result at its start
        min.in_place = true;
        min.recv = mine<int32_t>(p.total, STRATA_OP_MIN);
        min.want = reduced<int32_t>(my, STRATA_OP_MIN, at);
        run("reduce_scatter int32 min in place", min, [&](void *s, void *r) {
            return strata_reduce_scatter(team, s, r, counts.data(), STRATA_INT32, STRATA_OP_MIN);
        });
    }

    void bcast(size_t n) {
        for (int root = 0; root < size; ++root) {
            Call<int32_t> c;
            c.in_place = true;
            c.recv = generate<int32_t>(n, [&](size_t i) { return tag(me, me == root ? 0 : 1, i); });
            c.want = generate<int32_t>(n, [&](size_t i) { return tag(root, 0, i); });
            run("bcast root " + std::to_string(root), c, [&](void *, void *r) {
                return strata_bcast(team, r, n * sizeof(int32_t), root);
            });
        }
    }

    // Rank r's block is tag(r, 0, i) in every allgather.
    void gather_into(const Placement &p, bool in_place, Call<int32_t> *c) const {
        c->in_place = in_place;
        const size_t my = p.elems[size_t(me)];
        c->send = generate<int32_t>(in_place ? 0 : my, [&](size_t i) { return tag(me, 0, i); });
        c->recv.assign(p.total, kSentinel);
        c->want = c->recv;
        for (int r = 0; r < size; ++r)
            for (size_t i = 0; i < p.elems[size_t(r)]; ++i) {
                c->want[p.displs[size_t(r)] + i] = tag(r, 0, i);
                if (in_place && r == me) c->recv[p.displs[size_t(r)] + i] = tag(r, 0, i);
            }
    }
    void allgather(size_t n) {
        const Placement p = packed(std::vector<size_t>(size_t(size), n));
        for (bool in_place : {false, true}) {
            Call<int32_t> c;
            gather_into(p, in_place, &c);
            run(in_place ? "allgather in place" : "allgather", c, [&](void *s, void *r) {
                return strata_allgather(team, s, r, n * sizeof(int32_t));
            });
        }
    }
    void allgatherv(size_t n) {
        std::vector<size_t> elems(nr());
        for (size_t r = 0; r < elems.size(); ++r) elems[r] = n + (elems.size() - r) % 3;
        const Placement p = reversed_with_gaps(elems);
        const size_t es = sizeof(int32_t);
        const std::vector<size_t> bytes = p.bytes(es, p.elems), displs = p.bytes(es, p.displs);
        for (bool in_place : {false, true}) {
            Call<int32_t> c;
            gather_into(p, in_place, &c);
            run(in_place ? "allgatherv in place" : "allgatherv", c, [&](void *s, void *r) {
                return strata_allgatherv(team, s, r, bytes.data(), displs.data());
            });
        }
    }

    // Rank s's elements for rank d are tag(s, d, i).
    void alltoall(size_t n) {
        for (bool in_place : {false, true}) {
            Call<int32_t> c;
            c.in_place = in_place;
            const auto out =
                generate<int32_t>(n * nr(), [&](size_t j) { return tag(me, int(j / n), j % n); });
            c.want = generate<int32_t>(n * nr(), [&](size_t j) { return tag(int(j / n), me, j % n); });
            if (in_place) {
                c.recv = out;
            } else {
                c.send = out;
                c.recv.assign(out.size(), kSentinel);
            }
            run(in_place ? "alltoall in place" : "alltoall", c, [&](void *s, void *r) {
                return strata_alltoall(team, s, r, n * sizeof(int32_t));
            });
        }
    }
    // elems(s, d): what rank s sends rank d. Receives land in reverse order with gaps;
    // sends are packed in rank order. In place, both follow the receive placement, so
    // elems must be symmetric there.
    void alltoallv(size_t n, bool in_place) {
        const auto elems = [&](int s, int d) { return n + size_t(in_place ? s + d : s + 2 * d) % 3; };
        std::vector<size_t> to(nr()), from(nr());
        for (int r = 0; r < size; ++r) {
            to[size_t(r)] = elems(me, r);
            from[size_t(r)] = elems(r, me);
        }
        const Placement out = in_place ? reversed_with_gaps(to) : packed(to), in = reversed_with_gaps(from);
        Call<int32_t> c;
        c.in_place = in_place;
        c.recv.assign(in.total, kSentinel);
        c.want = c.recv;
        std::vector<int32_t> &src = in_place ? c.recv : c.send;
        src.resize(out.total, kSentinel);
        for (int r = 0; r < size; ++r) {
            for (size_t i = 0; i < to[size_t(r)]; ++i) src[out.displs[size_t(r)] + i] = tag(me, r, i);
            for (size_t i = 0; i < from[size_t(r)]; ++i) c.want[in.displs[size_t(r)] + i] = tag(r, me, i);
        }
        const size_t es = sizeof(int32_t);
        const std::vector<size_t> sb = out.bytes(es, out.elems), sd = out.bytes(es, out.displs),
                                  rb = in.bytes(es, in.elems), rd = in.bytes(es, in.displs);
        run(in_place ? "alltoallv in place" : "alltoallv", c, [&](void *s, void *r) {
            return strata_alltoallv(team, s, sb.data(), sd.data(), r, rb.data(), rd.data());
        });
    }

    // Two roots, rotating with k; the second reduces in place. Only the root passes a
    // receive buffer.
    void reduce(size_t n, int k) {
        for (int second = 0; second < 2; ++second) {
            const int root = (k + second) % size;
            const bool at_root = me == root, in_place = at_root && second == 1;
            Call<double> c;
            c.in_place = in_place;
            if (in_place) {
                c.recv = mine<double>(n, STRATA_OP_SUM);
            } else {
                c.send = mine<double>(n, STRATA_OP_SUM);
                c.recv.assign(at_root ? n : 0, kSentinelD);
            }
            if (at_root) c.want = reduced<double>(n, STRATA_OP_SUM);
            const std::string what =
                "reduce double sum root " + std::to_string(root) + (in_place ? " in place" : "");
            run(what, c, [&](void *s, void *r) {
                return strata_reduce(team, s, at_root ? r : nullptr, n, STRATA_DOUBLE, STRATA_OP_SUM, root);
            });
        }
    }

    // Rotating roots, the second in place. gather: rank r's block is tag(r, 2, i), only
    // the root passes a receive buffer; scatter: block r of the root's buffer is
    // tag(r, 3, i), only the root passes a send buffer (in place: the root's block stays
    // in it, which must come back unchanged).
    void gather(size_t n, int k) {
        for (int second = 0; second < 2; ++second) {
            const int root = (k + second) % size;
            const bool at_root = me == root, in_place = at_root && second == 1;
            Call<int32_t> c;
            c.in_place = in_place;
            if (!in_place) c.send = generate<int32_t>(n, [&](size_t i) { return tag(me, 2, i); });
            c.recv.assign(at_root ? n * nr() : 0, kSentinel);
            if (in_place)
                for (size_t i = 0; i < n; ++i) c.recv[size_t(me) * n + i] = tag(me, 2, i);
            if (at_root) c.want = generate<int32_t>(n * nr(), [&](size_t j) { return tag(int(j / n), 2, j % n); });
            run("gather root " + std::to_string(root) + (in_place ? " in place" : ""), c, [&](void *s, void *r) {
                return strata_gather(team, s, at_root ? r : nullptr, n * sizeof(int32_t), root);
            });
        }
    }
    void scatter(size_t n, int k) {
        for (int second = 0; second < 2; ++second) {
            const int root = (k + second) % size;
            const bool at_root = me == root, in_place = at_root && second == 1;
            const auto all = generate<int32_t>(n * nr(), [&](size_t j) { return tag(int(j / n), 3, j % n); });
            Call<int32_t> c;
            c.in_place = in_place;  // then recv is the root's send buffer
            if (in_place) {
                c.recv = all;
                c.want = all;
            } else {
                if (at_root) c.send = all;
                c.recv.assign(n, kSentinel);
                c.want = generate<int32_t>(n, [&](size_t i) { return tag(me, 3, i); });
            }
            run("scatter root " + std::to_string(root) + (in_place ? " in place" : ""), c, [&](void *s, void *r) {
                if (in_place) return strata_scatter(team, r, s, n * sizeof(int32_t), root);
                return strata_scatter(team, at_root ? s : nullptr, r, n * sizeof(int32_t), root);
            });
        }
    }

    void every_call() {
        int k = 0;
        for (size_t n : kCounts) {
            const std::string before = first_error;
            allreduce(n);
            reduce_scatter(n);
            bcast(n);
            allgather(n);
            allgatherv(n);
            alltoall(n);
            alltoallv(n, false);
            alltoallv(n, true);
            reduce(n, k);
            gather(n, k);
            scatter(n, k++);
            if (before.empty() && !first_error.empty())
                first_error = "count " + std::to_string(n) + ", " + first_error;
        }
    }
};

// Aborts the process when a job outlives `seconds` (each takes a few at most): a rank
// that returned an error leaves its peers waiting for ever, and an abort that says so
// beats a silent hang until contrib/check's timeout.
class Watchdog {
public:
    Watchdog(const std::string &what, int seconds)
        : thread_([this, what, seconds] {
              std::unique_lock<std::mutex> g(mu_);
              if (cv_.wait_for(g, std::chrono::seconds(seconds), [this] { return done_; })) return;
              fprintf(stderr, "%s: not done after %d s (a rank's error above may have left its peers "
                      "waiting)\n", what.c_str(), seconds);
              std::abort();
          }) {}
    ~Watchdog() {
        {
            std::lock_guard<std::mutex> g(mu_);
            done_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }
    Watchdog(const Watchdog &) = delete;
    Watchdog &operator=(const Watchdog &) = delete;

private:
    std::mutex mu_;
    std::condition_variable cv_;
    bool done_ = false;
    std::thread thread_;  // last: starts once the rest is ready
};

// ---- one job -------------------------------------------------------------------------

struct Outcome {
    std::vector<std::string> errors;  // per rank
    std::vector<std::string> forced_idle;  // "team t: coll": a forced algorithm that never ran
    LogTally log;
};

Outcome run_job(const Layout &lay, int cache, const std::string &what) {
    const int size = int(lay.keys.size());
    ThreadJob job(size);
    Outcome out;
    out.errors.assign(size_t(size), "");
    std::mutex mu;
    const std::vector<Setting> settings = team_settings();
    LogCapture capture;
    Watchdog watchdog(what, 120);
    job.run([&](int rank) {
        std::string &err = out.errors[size_t(rank)];
        if (!strata_test::make_gpu0_current(&err)) return;
        strata::MemDomain *gpu = strata::cuda_domain(0, &err);
        if (gpu == nullptr) return;
        strata_transport_t tp = job.transport(rank);
        std::vector<strata_team_t *> teams;
        for (const Setting &algs : settings) {
            strata_config_t cfg;
            strata_config_defaults(&cfg);
            cfg.lazy_calls = 0;     // set up at the first call, whatever the component's default
            cfg.host_buffers = 1;
            cfg.host_handback = 0;  // every size runs strata (not the built-in host rules)
            cfg.verbose = 2;
            cfg.node_size = lay.node_size;
            cfg.segment_size = kSegment;
            cfg.device_segment_size = 0;  // kSegment on one node too: many segments, stages reused
            cfg.device_multinode_segment_size = 0;  // and across nodes
            cfg.small_msg_size = kSmall;
            cfg.zero_copy_size = kSmall;
            cfg.ipc_cache_size = cache;
            std::copy(algs.begin(), algs.end(), cfg.algorithm);
            strata_team_t *team = nullptr;
            if (strata_team_create(rank, size, lay.keys[size_t(rank)], &tp, &cfg, &team) != STRATA_OK) {
                err = "team create";
                break;
            }
            teams.push_back(team);
        }
        for (size_t t = 0; t < teams.size() && teams.size() == settings.size(); ++t) {
            Rank r{teams[t], rank, size, *gpu, ""};
            r.every_call();
            const std::string which = "team " + std::to_string(t);
            if (err.empty() && !r.first_error.empty()) err = which + ", " + r.first_error;
            for (int c = 0; c < STRATA_COLL_COUNT; ++c) {
                if (strata_team_calls(teams[t], strata_coll_t(c), settings[t][size_t(c)]) > 0) continue;
                std::lock_guard<std::mutex> g(mu);
                out.forced_idle.push_back("rank " + std::to_string(rank) + " " + which + ": " +
                                          strata_coll_name(strata_coll_t(c)));
            }
        }
        for (strata_team_t *t : teams) strata_team_destroy(t);
    });
    out.log = capture.result();
    EXPECT_EQ(job.unreceived(), 0u);
    return out;
}

// ---- the tests -----------------------------------------------------------------------

// One job: ranks as threads in a layout, and the IPC cache size of every team.
struct Job {
    Layout layout;
    int cache;
};
std::vector<Job> jobs() {
    const Layout layouts[] = {Layout{"one_node_of_2", blocks(1, 2), 0},     // node_size 0: as the keys say
                              Layout{"one_node_of_3", blocks(1, 3), 0},
                              Layout{"two_nodes_of_2", blocks(1, 4), 2},    // virtual nodes
                              Layout{"nodes_of_3_and_2", blocks(1, 5), 3}};  // uneven
    std::vector<Job> v;
    for (int cache : {64, 1, 0})
        for (const Layout &l : layouts) v.push_back(Job{l, cache});
    return v;
}
std::string describe(const Job &j) {
    return std::string(j.layout.name) + ", IPC cache " + std::to_string(j.cache);
}
void PrintTo(const Job &j, std::ostream *os) { *os << describe(j); }
std::string job_name(const ::testing::TestParamInfo<Job> &i) {
    return std::string(i.param.layout.name) + "_cache" + std::to_string(i.param.cache);
}
bool single_node(const Layout &l) {
    const size_t ranks = l.keys.size();
    if (l.node_size > 0) return size_t(l.node_size) >= ranks;
    return size_t(std::count(l.keys.begin(), l.keys.end(), l.keys[0])) == ranks;
}

class DeviceTeams : public ::testing::TestWithParam<Job> {
protected:
    // Skips without a driver (or GPU), and on a real driver.
    void SetUp() override {
        std::string why;
        if (strata::cuda_driver(&why) == nullptr) GTEST_SKIP() << "needs a CUDA driver and a GPU: " << why;
        stats_ = fake_stats();
        if (stats_ == nullptr)
            GTEST_SKIP() << "needs the fake driver's FAKECUDA_IPC_SELF (real CUDA cannot open a process's "
                            "own IPC handles)";
    }
    StatsFn stats_ = nullptr;
};

TEST_P(DeviceTeams, EveryCollectiveOnDeviceBuffersMatchesTheHostReference) {
    const Job &job = GetParam();
    const size_t ranks = job.layout.keys.size();
    IpcSelf ipc_self;
    struct fakecuda_stats before {}, after {};
    ASSERT_EQ(stats_(&before), 0);
    const int segments = strata_test::count_strata_segments();

    const Outcome o = run_job(job.layout, job.cache, describe(job));

    for (size_t r = 0; r < ranks; ++r) EXPECT_EQ(o.errors[r], "") << "rank " << r;
    EXPECT_EQ(o.forced_idle, std::vector<std::string>{}) << "forced algorithms that never ran";
    EXPECT_EQ(o.log.other, std::vector<std::string>{}) << "unexpected log lines";
    int all_calls = 0;
    for (int c = 0; c < STRATA_COLL_COUNT; ++c) all_calls += o.log.calls[c];
    EXPECT_LE(o.log.copied_instead * 20, all_calls) << "over 1 in 20 calls copied a buffer the IPC cache could not map";
    EXPECT_EQ(o.log.ready.size(), ranks * team_settings().size());
    for (const std::string &line : o.log.ready)
        EXPECT_NE(line.find("schedules in GPU memory"), std::string::npos) << line;
    for (int c = 0; c < STRATA_COLL_COUNT; ++c) {
        const char *name = strata_coll_name(strata_coll_t(c));
        EXPECT_GT(o.log.calls[c], 0) << name;
        EXPECT_EQ(o.log.on_gpu[c], o.log.calls[c]) << name << ": calls not run in GPU memory";
        // README, "Zero copy inside a node": reduce always copies; allgather reads in
        // place on a single node only.
        const bool zero_copy =
            c != STRATA_COLL_REDUCE && (c != STRATA_COLL_ALLGATHER || single_node(job.layout));
        if (job.cache == 0) {
            EXPECT_EQ(o.log.in_place[c], 0) << name << " read in place with the IPC cache off";
        } else if (zero_copy) {
            EXPECT_GT(o.log.in_place[c], 0) << name << " never read local peers' buffers in place";
        }
    }
    EXPECT_EQ(strata_test::count_strata_segments(), segments) << "a segment was left in /dev/shm";
    // A device team's slots are in GPU memory: its host segment holds flags and
    // mailboxes, 1 KiB per rank in whole pages, and a page per rank of small host slots
    // (Team::host_call_slot), at most 5 ranks a node here. (That the full host slots
    // are not made, 4 x coll_strata_segment_size per rank, which at this test's 512
    // bytes would fit the same page, run-device-tests' small-shm section holds at the
    // default size: a GPU team sets up in an 8 MiB folder.)
    EXPECT_GT(o.log.segments, 0) << "no node segment made (every layout here has a node of 2 ranks or more)";
    EXPECT_LE(o.log.largest_segment, size_t(8192 + 5 * 4096)) << "a device team's host segment holds slots";
    ASSERT_EQ(stats_(&after), 0);
    EXPECT_EQ(after.ipc_open, before.ipc_open) << "IPC mappings left open";
    EXPECT_LE(after.dev_allocs, before.dev_allocs) << "device memory left allocated";
    EXPECT_LE(after.host_allocs, before.host_allocs) << "page-locked memory left allocated";
}

INSTANTIATE_TEST_SUITE_P(CudaCollectives, DeviceTeams, ::testing::ValuesIn(jobs()), job_name);

}  // namespace
