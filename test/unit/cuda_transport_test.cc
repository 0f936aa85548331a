// SPDX-License-Identifier: BSD-3-Clause
// test/unit/cuda_transport_test.cc - how device memory crosses nodes on a device team.
//
// On a device team (every rank has a CUDA context current, team.cc agree_device),
// point-to-point of GPU memory between nodes goes one of two ways:
//  - staged (device_transport STAGED, or AUTO over a transport that is not CUDA-aware):
//    every send and receive is bounced through page-locked host buffers (btl/p2p.h,
//    BounceChannel), so the transport must never see a device pointer;
//  - direct (DIRECT, or AUTO over a CUDA-aware transport): device pointers go straight
//    to isend/irecv, as to a CUDA-aware MPI.
// Ranks as threads share one process, where CUDA IPC cannot open a handle of its own
// process; with node_size 1 every rank is a node of its own, so no IPC is needed and the
// GPU setup succeeds. Each rank's transport is wrapped: the host-only wrapper counts
// the device (or managed) buffers it is handed and moves a host dummy instead (so a
// violation shows as a count and wrong results, not a crash: host code faults on device
// memory under test/fakecuda); the CUDA-aware wrapper copies device buffers through
// host temporaries with the driver, as a CUDA-aware stack would. Every collective runs
// on device buffers with each of its algorithms, segments of 1 KiB so that pipelines
// have many, and results are compared exactly with a host reference. The team's "team
// ready" log line says it runs in GPU memory and which transport it took.
// Needs a CUDA driver: the real one on a GPU machine, test/fakecuda in CI.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
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
#include "topo/cuda_api.h"

namespace {

using strata_test::ThreadJob;
namespace cu = strata::topo::cu;

constexpr int kRanks = 4;
// Elements per call: none, one, a prime, and primes spanning several 1 KiB segments.
const size_t kCounts[] = {0, 1, 13, 1031};

// Wraps a rank's transport. Device buffers are never handed on: a transfer of one
// moves a host temporary instead, which the CUDA-aware wrapper fills from (isend) or
// copies into (when test() completes an irecv) the device buffer with the driver, and
// the host-only one leaves as zeros. Host buffers pass through.
struct Wrapper {
    strata_transport_t inner{};
    bool cuda_aware = false;
    std::atomic<int> device_ptrs{0};  // device or managed buffers handed to isend/irecv
    std::atomic<int> pinned_ptrs{0};  // page-locked host ones (the staged transport's bounce buffers)
    std::atomic<int> copy_errors{0};

    struct Req {
        void *inner = nullptr;
        std::vector<char> tmp;
        void *device_dst = nullptr;  // gets tmp when the receive completes
    };
    static Wrapper &of(void *ctx) { return *static_cast<Wrapper *>(ctx); }
    static const cu::Driver &driver() { return *strata::cuda_driver(); }

    // What the inner transport gets for buf: buf itself, or a host temporary in r.
    void *route(void *buf, size_t n, bool sending, Req *r) {
        const strata::MemKind k = strata::classify(buf);
        pinned_ptrs += k == strata::MemKind::PinnedHost;
        if (k != strata::MemKind::Device && k != strata::MemKind::Managed) return buf;
        ++device_ptrs;
        r->tmp.assign(n, 0);
        if (cuda_aware && !sending) r->device_dst = buf;
        if (cuda_aware && sending && driver().MemcpyDtoH(r->tmp.data(), cu::CUdeviceptr(buf), n) != cu::SUCCESS)
            ++copy_errors;
        return r->tmp.data();
    }
    static int start(void *c, void *buf, size_t n, int peer, int tag, void **req, bool sending) {
        Wrapper &w = of(c);
        Req *r = new Req;
        void *b = w.route(buf, n, sending, r);
        const int rc = sending ? w.inner.isend(w.inner.ctx, b, n, peer, tag, &r->inner)
                               : w.inner.irecv(w.inner.ctx, b, n, peer, tag, &r->inner);
        if (rc != 0) {
            delete r;
            return rc;
        }
        *req = r;
        return 0;
    }
    static int isend(void *c, const void *b, size_t n, int p, int t, void **r) {
        return start(c, const_cast<void *>(b), n, p, t, r, true);
    }
    static int irecv(void *c, void *b, size_t n, int p, int t, void **r) {
        return start(c, b, n, p, t, r, false);
    }
    static int test(void *c, void *req, int *done, size_t *bytes) {
        Wrapper &w = of(c);
        Req *r = static_cast<Req *>(req);
        const int rc = w.inner.test(w.inner.ctx, r->inner, done, bytes);
        if (rc != 0 || !*done) return rc;
        const cu::CUdeviceptr dst = cu::CUdeviceptr(r->device_dst);
        if (dst != 0 && driver().MemcpyHtoD(dst, r->tmp.data(), r->tmp.size()) != cu::SUCCESS) ++w.copy_errors;
        delete r;
        return 0;
    }
    static void cancel(void *c, void *req, int is_recv) { of(c).inner.cancel(of(c).inner.ctx, req, is_recv); }
    strata_transport_t transport() {
        strata_transport_t t = strata_test::forwarding_transport(this, inner);
        t.device_capable = cuda_aware ? 1 : 0;
        return t;
    }
};

// Makes GPU 0's context current on this thread, so that the rank has a GPU, and
// returns GPU 0's domain; nullptr with *why.
strata::MemDomain *use_gpu0(std::string *why) {
    return strata_test::make_gpu0_current(why) ? strata::cuda_domain(0, why) : nullptr;
}

// The core's "team ready" lines (level 1), which say where a team's schedules run, and
// its lines saying the node flags are ordered by the stream (work chained on the GPU).
std::mutex g_log_mu;
std::vector<std::string> g_ready_lines;
int g_lane_lines = 0;
void capture_log(int level, const char *msg) {
    if (level <= 0) fprintf(stderr, "strata: %s\n", msg);
    const std::string m(msg);
    std::lock_guard<std::mutex> g(g_log_mu);
    if (m.rfind("team ready", 0) == 0) g_ready_lines.push_back(m);
    if (m.rfind("node flags written", 0) == 0) ++g_lane_lines;
}

// One of the fake driver's counters in this process, or -1 under another driver.
long long fake_counter(unsigned long long fakecuda_counters::*which) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    using CountersFn = int (*)(struct fakecuda_counters *);
    auto fn = lib ? reinterpret_cast<CountersFn>(dlsym(lib, "fakecuda_counters")) : nullptr;
    struct fakecuda_counters c {};
    if (fn == nullptr || fn(&c) != 0) return -1;
    return static_cast<long long>(c.*which);
}

// Host waits: event polls that saw a new record, event and stream synchronizations.
long long host_waits() { return fake_counter(&fakecuda_counters::host_waits); }

// GPU memory of the CUDA domain, filled from and read back into host vectors.
class DeviceBuffer {
public:
    DeviceBuffer(strata::MemDomain &gpu, size_t bytes) : gpu_(gpu) {
        if (gpu.alloc(std::max(bytes, size_t(64)), &p_) != STRATA_OK) p_ = nullptr;
    }
    template <class T>
    DeviceBuffer(strata::MemDomain &gpu, const std::vector<T> &v)
        : DeviceBuffer(gpu, v.size() * sizeof(T)) {
        ok_ = copy(p_, v.data(), v.size() * sizeof(T));
    }
    ~DeviceBuffer() {
        if (p_) gpu_.release(p_);
    }
    DeviceBuffer(const DeviceBuffer &) = delete;
    DeviceBuffer &operator=(const DeviceBuffer &) = delete;
    void *get() const { return p_; }
    bool ok() const { return p_ != nullptr && ok_; }
    template <class T>
    bool read(std::vector<T> *v) {
        return copy(v->data(), p_, v->size() * sizeof(T));
    }

private:
    bool copy(void *dst, const void *src, size_t bytes) {
        strata::Ticket t;
        return p_ != nullptr && gpu_.copy(dst, src, bytes, &t) == STRATA_OK &&
               strata::wait_ticket(gpu_, &t) == STRATA_OK;
    }
    strata::MemDomain &gpu_;
    void *p_ = nullptr;
    bool ok_ = true;
};

// Rank r's element i (small integers: every sum is exact in any order), and the sum
// over all ranks.
template <class T>
T input(int r, size_t i) {
    return strata_test::value<T>(r, i, STRATA_OP_SUM);
}
template <class T>
T total(size_t i) {
    return strata_test::expected<T>(kRanks, i, STRATA_OP_SUM);
}
template <class T, class F>
std::vector<T> make(size_t n, F f) {
    std::vector<T> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = f(i);
    return v;
}

// One rank's side of the calls on one team; each returns "" or what went wrong.
struct Rank {
    strata_team_t *team;
    int rank;
    strata::MemDomain &gpu;

    // Runs call(send, recv) on device copies of in and of a receive buffer, then
    // compares the result (in recv, or in send when in place) with want.
    template <class T, class Call>
    std::string check(const char *what, const std::vector<T> &in, const std::vector<T> &want, Call call,
                      bool in_place = false) {
        const std::string where = std::string(what) + ": ";
        DeviceBuffer send(gpu, in), recv(gpu, want.size() * sizeof(T));
        if (!send.ok() || !recv.ok()) return where + "device buffers";
        const strata_status_t st = call(send.get(), recv.get());
        if (st != STRATA_OK) return where + "status " + std::to_string(int(st));
        std::vector<T> got(want.size());
        if (!(in_place ? send : recv).read(&got)) return where + "reading the result back";
        for (size_t i = 0; i < want.size(); ++i)
            if (memcmp(&got[i], &want[i], sizeof(T)) != 0)
                return where + "wrong element " + std::to_string(i) + " of " + std::to_string(want.size());
        return "";
    }
    template <class T>
    std::vector<T> mine(size_t n) const {
        return make<T>(n, [&](size_t i) { return input<T>(rank, i); });
    }

    template <class T>
    std::string allreduce(size_t n, strata_dtype_t dt) {
        return check("allreduce", mine<T>(n), make<T>(n, total<T>), [&](void *s, void *r) {
            return strata_allreduce(team, s, r, n, dt, STRATA_OP_SUM);
        });
    }
    std::string allgather(size_t n) {
        const auto block_of = [&](size_t j) { return input<int32_t>(int(j / n), j % n); };  // rank j / n's
        const auto want = make<int32_t>(n * kRanks, block_of);
        return check("allgather", mine<int32_t>(n), want, [&](void *s, void *r) {
            return strata_allgather(team, s, r, n * sizeof(int32_t));
        });
    }
    // In place: the root's data replaces what the others had.
    std::string bcast(size_t n, int root) {
        const int src = rank == root ? root : kRanks + rank;  // the others' data: anything else
        const auto in = make<double>(n, [&](size_t i) { return input<double>(src, i); });
        const auto want = make<double>(n, [&](size_t i) { return input<double>(root, i); });
        const auto call = [&](void *s, void *) { return strata_bcast(team, s, n * sizeof(double), root); };
        return check("bcast", in, want, call, true);
    }
    // Uneven blocks: rank r gets n + r % 2 elements of the sum.
    std::string reduce_scatter(size_t n) {
        std::vector<size_t> counts(kRanks), first(kRanks + 1, 0);
        for (size_t r = 0; r < kRanks; ++r) {
            counts[r] = n + r % 2;
            first[r + 1] = first[r] + counts[r];
        }
        const size_t me = size_t(rank);
        const auto want = make<int32_t>(counts[me], [&](size_t i) { return total<int32_t>(first[me] + i); });
        return check("reduce_scatter", mine<int32_t>(first[kRanks]), want, [&](void *s, void *r) {
            return strata_reduce_scatter(team, s, r, counts.data(), STRATA_INT32, STRATA_OP_SUM);
        });
    }
    // Rank s's block for rank d is input(s * kRanks + d).
    std::string alltoall(size_t n) {
        const auto block = [&](int s, int d, size_t i) { return input<int32_t>(s * kRanks + d, i); };
        const auto in = make<int32_t>(n * kRanks, [&](size_t j) { return block(rank, int(j / n), j % n); });
        const auto want = make<int32_t>(n * kRanks, [&](size_t j) { return block(int(j / n), rank, j % n); });
        return check("alltoall", in, want, [&](void *s, void *r) {
            return strata_alltoall(team, s, r, n * sizeof(int32_t));
        });
    }
    // Only the root has a receive buffer.
    std::string reduce(size_t n, int root) {
        const auto want = make<double>(rank == root ? n : 0, total<double>);
        return check("reduce", mine<double>(n), want, [&](void *s, void *r) {
            return strata_reduce(team, s, rank == root ? r : nullptr, n, STRATA_DOUBLE, STRATA_OP_SUM, root);
        });
    }

    // Only the root receives (gather) or sends (scatter) size blocks; rank r's is input(r).
    std::string gather(size_t n, int root) {
        const auto want = make<int32_t>(rank == root ? n * kRanks : 0,
                                        [&](size_t j) { return input<int32_t>(int(j / n), j % n); });
        return check("gather", mine<int32_t>(n), want, [&](void *s, void *r) {
            return strata_gather(team, s, rank == root ? r : nullptr, n * sizeof(int32_t), root);
        });
    }
    std::string scatter(size_t n, int root) {
        const auto all = make<int32_t>(rank == root ? n * kRanks : 0,
                                       [&](size_t j) { return input<int32_t>(int(j / n), j % n); });
        return check("scatter", all, mine<int32_t>(n), [&](void *s, void *r) {
            return strata_scatter(team, rank == root ? s : nullptr, r, n * sizeof(int32_t), root);
        });
    }

    // Every call, on every rank, even after a wrong result (its peers would wait for
    // ever otherwise): "" or the first thing that went wrong.
    std::string all_calls() {
        std::string first;
        for (size_t n : kCounts) {
            const int root = int(n % kRanks);
            for (const std::string &e :
                 {allreduce<int32_t>(n, STRATA_INT32), allreduce<double>(n, STRATA_DOUBLE), allgather(n),
                  bcast(n, root), reduce_scatter(n), alltoall(n), reduce(n, (root + 1) % kRanks),
                  gather(n, root), scatter(n, (root + 1) % kRanks)})
                if (first.empty() && !e.empty()) first = "count " + std::to_string(n) + ": " + e;
        }
        return first;
    }
};

struct Outcome {
    std::vector<std::string> errors;   // per rank
    std::vector<int> device_ptrs;      // per rank: device buffers handed to the transport
    std::vector<int> pinned_ptrs;      // per rank: page-locked host buffers handed to it
    int copy_errors = 0;
    std::vector<std::string> ready;    // the teams' "team ready" lines
    int lane_lines = 0;                // teams whose node flags the stream orders
    bool every_algorithm_ran = true;   // on every rank, in every team
    long long host_waits = -1;         // the job's, on the fake driver (else -1)
};

// One team per algorithm index: team a forces every collective to its algorithm a (its
// last one where it has fewer), so that each algorithm of each collective runs.
int teams() {
    int n = 0;
    for (int c = 0; c < STRATA_COLL_COUNT; ++c) n = std::max(n, strata_algorithm_count(strata_coll_t(c)));
    return n;
}

// Every rank makes its context current, then runs all_calls() on teams() teams over
// its wrapped transport.
Outcome run_job(bool cuda_aware, int device_transport, int stream_flags = STRATA_STREAM_FLAGS_OFF) {
    ThreadJob job(kRanks);
    std::vector<Wrapper> wrappers(kRanks);
    Outcome out;
    out.errors.assign(kRanks, "");
    std::mutex mu;
    g_ready_lines.clear();
    g_lane_lines = 0;
    const long long waits_before = host_waits();
    strata_set_logger(&capture_log);
    job.run([&](int rank) {
        std::string &err = out.errors[size_t(rank)];
        Wrapper &w = wrappers[size_t(rank)];
        w.inner = job.transport(rank);
        w.cuda_aware = cuda_aware;
        const strata_transport_t tp = w.transport();
        strata::MemDomain *gpu = use_gpu0(&err);
        if (gpu == nullptr) return;
        for (int alg = 0; alg < teams(); ++alg) {
            strata_config_t cfg;
            strata_config_defaults(&cfg);
            cfg.lazy_calls = 0;     // set up at the first call, whatever the component's default
            cfg.host_buffers = 1;
            cfg.host_handback = 0;  // every size runs strata (not the built-in host rules)
            cfg.node_size = 1;
            cfg.segment_size = 1024;
            cfg.device_transport = device_transport;
            cfg.stream_flags = stream_flags;
            for (int c = 0; c < STRATA_COLL_COUNT; ++c)
                cfg.algorithm[c] = std::min(alg, strata_algorithm_count(strata_coll_t(c)) - 1);
            strata_team_t *team = nullptr;
            if (strata_team_create(rank, kRanks, 0, &tp, &cfg, &team) != STRATA_OK) {
                err = "team create";
                return;
            }
            const std::string e = Rank{team, rank, *gpu}.all_calls();
            if (err.empty() && !e.empty()) err = "algorithm " + std::to_string(alg) + ", " + e;
            for (int c = 0; c < STRATA_COLL_COUNT; ++c) {
                if (strata_team_calls(team, strata_coll_t(c), cfg.algorithm[c]) > 0) continue;
                std::lock_guard<std::mutex> g(mu);
                out.every_algorithm_ran = false;
            }
            strata_team_destroy(team);
        }
    });
    strata_set_logger(nullptr);
    for (Wrapper &w : wrappers) {
        out.device_ptrs.push_back(w.device_ptrs.load());
        out.pinned_ptrs.push_back(w.pinned_ptrs.load());
        out.copy_errors += w.copy_errors.load();
    }
    out.ready = g_ready_lines;
    out.lane_lines = g_lane_lines;
    if (waits_before >= 0) out.host_waits = host_waits() - waits_before;
    EXPECT_EQ(job.unreceived(), 0u);
    return out;
}

// Every team of every rank said it runs in GPU memory, over the given transport.
void expect_device_teams(const Outcome &o, const char *transport) {
    EXPECT_EQ(o.ready.size(), size_t(kRanks * teams()));
    for (const std::string &line : o.ready) {
        EXPECT_NE(line.find("schedules in GPU memory"), std::string::npos) << line;
        EXPECT_NE(line.find(transport), std::string::npos) << line;
    }
}

class CudaTransport : public ::testing::Test {
protected:
    void SetUp() override {
        if (!strata::cuda_available()) {
            std::string why;
            strata::cuda_driver(&why);
            GTEST_SKIP() << "no CUDA driver: " << why;
        }
    }
};

TEST_F(CudaTransport, StagedNeverHandsDevicePointersToTheTransport) {
    for (int transport : {STRATA_DEVICE_TRANSPORT_STAGED, STRATA_DEVICE_TRANSPORT_AUTO}) {
        SCOPED_TRACE(transport == STRATA_DEVICE_TRANSPORT_AUTO ? "auto, not CUDA-aware" : "staged");
        const Outcome o = run_job(false, transport);
        for (int r = 0; r < kRanks; ++r) {
            EXPECT_EQ(o.errors[size_t(r)], "") << "rank " << r;
            EXPECT_EQ(o.device_ptrs[size_t(r)], 0) << "rank " << r << " handed device memory to the transport";
            EXPECT_GT(o.pinned_ptrs[size_t(r)], 0) << "rank " << r << " sent nothing through bounce buffers";
        }
        EXPECT_TRUE(o.every_algorithm_ran);
        expect_device_teams(o, "point-to-point staged through host");
    }
}

TEST_F(CudaTransport, DirectHandsDevicePointersStraightThrough) {
    for (int transport : {STRATA_DEVICE_TRANSPORT_DIRECT, STRATA_DEVICE_TRANSPORT_AUTO}) {
        SCOPED_TRACE(transport == STRATA_DEVICE_TRANSPORT_AUTO ? "auto, CUDA-aware" : "direct");
        const Outcome o = run_job(true, transport);
        for (int r = 0; r < kRanks; ++r) {
            EXPECT_EQ(o.errors[size_t(r)], "") << "rank " << r;
            EXPECT_GT(o.device_ptrs[size_t(r)], 0) << "rank " << r << " handed no device memory on";
            EXPECT_EQ(o.pinned_ptrs[size_t(r)], 0) << "rank " << r << " bounced through host buffers";
        }
        EXPECT_EQ(o.copy_errors, 0);
        EXPECT_TRUE(o.every_algorithm_ran);
        expect_device_teams(o, "device memory to point-to-point directly");
    }
}

// Work chained on the GPU across nodes (coll_strata_stream_flags auto, engine.h): a
// schedule with sends and receives queues its kernels on the team's lane as they
// become ready and polls one event per batch. Every collective and algorithm, one rank
// per node, direct transport: exact results with the flags off and on, and on the fake
// driver every team said its node flags are ordered by the stream.
TEST_F(CudaTransport, ChainedAcrossNodesIsExact) {
    const Outcome off = run_job(true, STRATA_DEVICE_TRANSPORT_DIRECT, STRATA_STREAM_FLAGS_OFF);
    const Outcome on = run_job(true, STRATA_DEVICE_TRANSPORT_DIRECT, STRATA_STREAM_FLAGS_AUTO);
    const Outcome writes = run_job(true, STRATA_DEVICE_TRANSPORT_DIRECT, STRATA_STREAM_FLAGS_WRITES);
    for (const Outcome *o : {&off, &on, &writes}) {
        for (int r = 0; r < kRanks; ++r) EXPECT_EQ(o->errors[size_t(r)], "") << "rank " << r;
        EXPECT_EQ(o->copy_errors, 0);
        EXPECT_TRUE(o->every_algorithm_ran);
        expect_device_teams(*o, "device memory to point-to-point directly");
    }
    EXPECT_EQ(off.lane_lines, 0);
    if (on.host_waits >= 0) {
        EXPECT_EQ(on.lane_lines, teams()) << "every team's flags ordered by the stream";
        EXPECT_EQ(writes.lane_lines, teams()) << "every team's flags written by the stream";
    }
}

// Chained through the bounce channel (a transport that cannot take GPU memory): the
// receives' copies into device memory and the sends' copies out of it go on the lane,
// every collective and algorithm still exact and still staged through host buffers,
// at auto and at writes (the default).
TEST_F(CudaTransport, ChainedThroughTheBounceChannelIsExact) {
    for (int flags : {STRATA_STREAM_FLAGS_AUTO, STRATA_STREAM_FLAGS_WRITES}) {
        SCOPED_TRACE(flags == STRATA_STREAM_FLAGS_AUTO ? "auto" : "writes");
        const Outcome on = run_job(false, STRATA_DEVICE_TRANSPORT_STAGED, flags);
        for (int r = 0; r < kRanks; ++r) {
            EXPECT_EQ(on.errors[size_t(r)], "") << "rank " << r;
            EXPECT_EQ(on.device_ptrs[size_t(r)], 0) << "rank " << r << " handed device memory to the transport";
        }
        EXPECT_TRUE(on.every_algorithm_ran);
        expect_device_teams(on, "point-to-point staged through host");
        if (on.host_waits >= 0) {
            EXPECT_EQ(on.lane_lines, teams()) << "every team's flags ordered by the stream";
        }
    }
}

// The same across two nodes of two ranks (threads: the fake driver opens a process's own
// IPC handles with FAKECUDA_IPC_SELF=1), allreduce hier_ring of 64 KiB in 1 KiB
// segments, so that each rank runs three kernels per segment (node reduction, the
// rail's fold, the write into its node peers' outputs): the host waits of four calls,
// counted between two rendezvous of the ranks. Off, the host polls every kernel; with
// the stream ordering the work, one event per batch of kernels queued together.
struct IpcSelf {
    IpcSelf() { setenv("FAKECUDA_IPC_SELF", "1", 1); }
    ~IpcSelf() { unsetenv("FAKECUDA_IPC_SELF"); }
};

struct Counted {
    std::string error;     // the first rank's error, if any
    long long waits = -1;  // host waits of the timed calls, every rank together
    long long events = -1;  // events recorded by them
};

// transport: direct (a CUDA-aware transport) or staged (the bounce channel).
Counted count_allreduce_waits(int stream_flags, int transport = STRATA_DEVICE_TRANSPORT_DIRECT) {
    constexpr size_t kElems = 16384;  // int32: 64 KiB
    constexpr int kCalls = 4;
    IpcSelf self;
    ThreadJob job(kRanks);
    std::vector<Wrapper> wrappers(kRanks);
    std::vector<std::string> errors(kRanks);
    std::atomic<int> ready{0}, finished{0};
    std::atomic<bool> go{false};
    long long before = -1, after = -1, events_before = -1, events_after = -1;
    job.run([&](int rank) {
        std::string &err = errors[size_t(rank)];
        Wrapper &w = wrappers[size_t(rank)];
        w.inner = job.transport(rank);
        w.cuda_aware = transport == STRATA_DEVICE_TRANSPORT_DIRECT;
        const strata_transport_t tp = w.transport();
        strata::MemDomain *gpu = use_gpu0(&err);
        strata_config_t cfg;
        strata_config_defaults(&cfg);
        cfg.lazy_calls = 0;
        cfg.host_buffers = 1;
        cfg.host_handback = 0;
        cfg.node_size = 2;
        cfg.segment_size = cfg.device_segment_size = cfg.device_multinode_segment_size = 1024;
        cfg.device_transport = transport;
        cfg.stream_flags = stream_flags;
        for (int a = 0; a < strata_algorithm_count(STRATA_COLL_ALLREDUCE); ++a)
            if (std::string(strata_algorithm_name(STRATA_COLL_ALLREDUCE, a)) == "hier_ring")
                cfg.algorithm[STRATA_COLL_ALLREDUCE] = a;
        strata_team_t *team = nullptr;
        if (gpu != nullptr && strata_team_create(rank, kRanks, 0, &tp, &cfg, &team) != STRATA_OK) err = "team create";
        std::unique_ptr<DeviceBuffer> send, recv;
        const std::vector<int32_t> want = make<int32_t>(kElems, total<int32_t>);
        if (err.empty()) {
            Rank me{team, rank, *gpu};
            err = me.allreduce<int32_t>(kElems, STRATA_INT32);  // sets the team up
            send.reset(new DeviceBuffer(*gpu, me.mine<int32_t>(kElems)));
            recv.reset(new DeviceBuffer(*gpu, kElems * sizeof(int32_t)));
            if (err.empty() && (!send->ok() || !recv->ok())) err = "device buffers";
        }
        // Every rank (even one that failed: the others would wait for it) meets twice;
        // the last to arrive reads the counters before anyone goes on.
        if (++ready == kRanks) {
            before = host_waits();
            events_before = fake_counter(&fakecuda_counters::events_recorded);
            go = true;
        }
        while (!go.load()) std::this_thread::yield();
        for (int c = 0; c < kCalls && err.empty(); ++c)
            if (strata_allreduce(team, send->get(), recv->get(), kElems, STRATA_INT32, STRATA_OP_SUM) != STRATA_OK)
                err = "allreduce";
        if (++finished == kRanks) {
            after = host_waits();
            events_after = fake_counter(&fakecuda_counters::events_recorded);
        }
        while (finished.load() < kRanks) std::this_thread::yield();
        std::vector<int32_t> got(kElems);
        if (err.empty() && (!recv->read(&got) || got != want)) err = "wrong sum";
        send.reset();
        recv.reset();
        if (team != nullptr) strata_team_destroy(team);
    });
    Counted out;
    for (const std::string &e : errors)
        if (out.error.empty() && !e.empty()) out.error = e;
    if (before >= 0 && after >= 0) out.waits = after - before;
    if (events_before >= 0 && events_after >= 0) out.events = events_after - events_before;
    return out;
}

TEST_F(CudaTransport, ChainedAcrossNodesPollsOneEventPerBatchNotPerKernel) {
    const Counted off = count_allreduce_waits(STRATA_STREAM_FLAGS_OFF);
    const Counted on = count_allreduce_waits(STRATA_STREAM_FLAGS_AUTO);
    EXPECT_EQ(off.error, "");
    EXPECT_EQ(on.error, "");
    if (on.waits < 0) GTEST_SKIP() << "exact both ways; the counts need the fake driver";
    printf("host waits of 4 allreduces of 64 KiB on 2 nodes of 2 (64 segments): %lld chained, %lld on the host\n",
           on.waits, off.waits);
    // Off: 3 kernels per segment and rank polled one by one (4 x 4 x 64 x 3 = 3072).
    EXPECT_GE(off.waits, 4 * kRanks * 64 * 3);
    EXPECT_LT(on.waits * 2, off.waits);
}

// The same through the bounce channel (a transport that cannot take GPU memory, as
// Debian's Open MPI): chained, a receive's host-to-device copy goes on the lane
// (P2PChannel::test_recv_queued) and needs no poll of its own.
TEST_F(CudaTransport, ChainedAcrossNodesQueuesTheBounceChannelsReceiveCopiesOnTheLane) {
    const Counted off = count_allreduce_waits(STRATA_STREAM_FLAGS_OFF, STRATA_DEVICE_TRANSPORT_STAGED);
    const Counted on = count_allreduce_waits(STRATA_STREAM_FLAGS_AUTO, STRATA_DEVICE_TRANSPORT_STAGED);
    EXPECT_EQ(off.error, "");
    EXPECT_EQ(on.error, "");
    if (on.waits < 0) GTEST_SKIP() << "exact both ways; the counts need the fake driver";
    printf("host waits of 4 allreduces of 64 KiB on 2 nodes of 2 (64 segments), bounce channel: %lld chained, "
           "%lld on the host; events recorded: %lld chained, %lld on the host\n", on.waits, off.waits, on.events, off.events);
    // Counted 2026-12-06: 7,186 on the host; chained 6,176 with each receive's copy
    // polled on the domain's stream, 4,630-4,641 with it on the lane; 555 once a pass's
    // sends shared one event. 2026-12-07, one machine, six runs each (how kernels fall
    // into batches depends on timing): 758-1,569 so, 673-1,081 with the sends' copies on
    // the lane too.
    EXPECT_LT(on.waits * 4, off.waits * 3) << "the receives' copies are polled one by one";
}

}  // namespace

// Open MPI's own calls (a communicator's creation; the glue says so with
// strata_stack_call, or strata_start_t::internal for a nonblocking one) are on host
// memory: on a team in GPU memory they go back to the replaced component, blocking and
// nonblocking, rather than through the GPU; the application's same call is served.
// On the host path (coll_strata_device_path host) the stack's calls are served too.
TEST_F(CudaTransport, OpenMpisOwnCallsOnADeviceTeamAreHandedBack) {
    for (int path : {STRATA_DEVICE_PATH_GPU, STRATA_DEVICE_PATH_HOST}) {
        SCOPED_TRACE(path == STRATA_DEVICE_PATH_GPU ? "gpu path" : "host path");
        const bool gpu_path = path == STRATA_DEVICE_PATH_GPU;
        ThreadJob job(kRanks);
        std::vector<std::string> errors(kRanks);
        const uint64_t before = strata_stat_handed_back(STRATA_HANDBACK_STACK);
        g_ready_lines.clear();
        strata_set_logger(&capture_log);
        job.run([&](int rank) {
            std::string &err = errors[size_t(rank)];
            const strata_transport_t tp = job.transport(rank);
            if (use_gpu0(&err) == nullptr) return;
            strata_config_t cfg = strata_test::host_test_config();
            cfg.node_size = 1;
            cfg.device_path = path;
            cfg.small_msg_size = 0;  // the application's 8 bytes on host buffers served, not voted back (votes_host)
            strata_team_t *team = nullptr;
            if (strata_team_create(rank, kRanks, 0, &tp, &cfg, &team) != STRATA_OK) {
                err = "team create";
                return;
            }
            const int64_t want = int64_t(kRanks) * (kRanks + 1) / 2;
            int64_t in = rank + 1, out = 0;
            const strata_status_t fell_back = gpu_path ? STRATA_FALLBACK : STRATA_OK;
            if (strata_team_setup(team) != STRATA_OK) err = "setup";
            strata_stack_call(1);
            strata_status_t st = strata_allreduce(team, &in, &out, 1, STRATA_INT64, STRATA_OP_SUM);
            strata_stack_call(0);
            if (err.empty() && st != fell_back) err = std::string("the stack's blocking call: ") + strata_status_name(st);
            if (err.empty() && st == STRATA_OK && out != want) err = "the stack's blocking call: wrong sum";
            out = 0;
            st = strata_allreduce(team, &in, &out, 1, STRATA_INT64, STRATA_OP_SUM);
            if (err.empty() && (st != STRATA_OK || out != want)) err = "the application's blocking call was not served exactly";
            strata_start_t how{};
            how.internal = 1;
            strata_request_t *req = nullptr;
            out = 0;
            st = strata_iallreduce(team, &in, &out, 1, STRATA_INT64, STRATA_OP_SUM, &how, &req);
            if (st == STRATA_OK) {
                while (!strata_request_test(req, &st)) std::this_thread::yield();
                strata_request_free(req);
                if (err.empty() && st == STRATA_OK && out != want) err = "the stack's nonblocking call: wrong sum";
            }
            if (err.empty() && st != fell_back)
                err = std::string("the stack's nonblocking call: ") + strata_status_name(st);
            strata_team_destroy(team);
        });
        strata_set_logger(nullptr);
        for (int r = 0; r < kRanks; ++r) EXPECT_EQ(errors[size_t(r)], "") << "rank " << r;
        ASSERT_EQ(g_ready_lines.size(), size_t(kRanks));
        EXPECT_NE(g_ready_lines[0].find(gpu_path ? "schedules in GPU memory" : "schedules in host memory"),
                  std::string::npos)
            << g_ready_lines[0];
        EXPECT_EQ(strata_stat_handed_back(STRATA_HANDBACK_STACK) - before, gpu_path ? uint64_t(2 * kRanks) : 0u);
    }
}

// A small call on a team in GPU memory agrees whether every rank's buffers are host
// memory (runner.h, votes_host): where they are, it goes to the replaced component
// (STRATA_FALLBACK, counted as host_call); where one rank's buffer is on the GPU, or
// the call is larger than coll_strata_small_msg_size, or coll_strata_check_args is off
// (no agreement), strata serves it, exact. Teams of one rank per node, which agree
// every call anyway, blocking and nonblocking; and of one node (FAKECUDA_IPC_SELF lets
// the fake driver open its own process's IPC handles), where a blocking call agrees
// for this and a nonblocking one does not (its start must not wait for its peers), so
// it is served.
TEST_F(CudaTransport, SmallCallsOnHostBuffersEverywhereGoBackFromADeviceTeam) {
    setenv("FAKECUDA_IPC_SELF", "1", 1);
    for (int node_size : {1, 0}) {
        SCOPED_TRACE(node_size == 1 ? "a node per rank" : "one node");
        ThreadJob job(kRanks);
        std::vector<std::string> errors(kRanks);
        const uint64_t before = strata_stat_handed_back(STRATA_HANDBACK_HOST_CALL);
        job.run([&](int rank) {
            std::string &err = errors[size_t(rank)];
            const strata_transport_t tp = job.transport(rank);
            strata::MemDomain *gpu = use_gpu0(&err);
            if (gpu == nullptr) return;
            const auto expect = [&err](bool cond, const std::string &what) {
                if (err.empty() && !cond) err = what;
            };
            for (int check_args : {int(STRATA_CHECK_ARGS_NODES), int(STRATA_CHECK_ARGS_OFF)}) {
                const bool votes = check_args != STRATA_CHECK_ARGS_OFF;
                strata_config_t cfg = strata_test::host_test_config();
                cfg.node_size = node_size;
                cfg.check_args = check_args;
                cfg.small_msg_size = 64;
                strata_team_t *team = nullptr;
                if (strata_team_create(rank, kRanks, 0, &tp, &cfg, &team) != STRATA_OK) {
                    err = "team create";
                    return;
                }
                const std::string when = votes ? "" : " (check_args off)";
                expect(strata_team_setup(team) == STRATA_OK, "setup");
                const int64_t want = int64_t(kRanks) * (kRanks + 1) / 2;
                // 8 bytes, host buffers everywhere: handed back (served without the agreement)
                int64_t in = rank + 1, out = 0;
                strata_status_t st = strata_allreduce(team, &in, &out, 1, STRATA_INT64, STRATA_OP_SUM);
                expect(st == (votes ? STRATA_FALLBACK : STRATA_OK) && (votes || out == want),
                       "8 bytes on host buffers" + when + ": " + strata_status_name(st));
                // the same, nonblocking
                strata_request_t *req = nullptr;
                out = 0;
                st = strata_iallreduce(team, &in, &out, 1, STRATA_INT64, STRATA_OP_SUM, nullptr, &req);
                if (st == STRATA_OK) {
                    while (!strata_request_test(req, &st)) std::this_thread::yield();
                    strata_request_free(req);
                    expect(st != STRATA_OK || out == want, "nonblocking: wrong sum" + when);
                }
                const bool nb_votes = votes && node_size == 1;
                expect(st == (nb_votes ? STRATA_FALLBACK : STRATA_OK), "nonblocking 8 bytes on host buffers" + when +
                                                                            ": " + strata_status_name(st));
                // 8 bytes, rank 0's buffers on the GPU: served, exact
                DeviceBuffer din(*gpu, std::vector<int64_t>{in}), dout(*gpu, std::vector<int64_t>{0});
                const bool mine_on_gpu = rank == 0;
                out = 0;
                st = strata_allreduce(team, mine_on_gpu ? din.get() : &in, mine_on_gpu ? dout.get() : &out, 1,
                                      STRATA_INT64, STRATA_OP_SUM);
                std::vector<int64_t> got{out};
                if (mine_on_gpu) dout.read(&got);
                expect(st == STRATA_OK && got[0] == want, "8 bytes, rank 0 on the GPU" + when + ": " +
                                                              strata_status_name(st));
                // 128 bytes (above small_msg_size) on host buffers: served, exact
                std::vector<int64_t> vin(16, rank + 1), vout(16, 0);
                st = strata_allreduce(team, vin.data(), vout.data(), 16, STRATA_INT64, STRATA_OP_SUM);
                expect(st == STRATA_OK && vout[15] == want, "128 bytes on host buffers" + when + ": " +
                                                                strata_status_name(st));
                strata_team_destroy(team);
            }
        });
        for (int r = 0; r < kRanks; ++r) EXPECT_EQ(errors[size_t(r)], "") << "rank " << r;
        EXPECT_EQ(strata_stat_handed_back(STRATA_HANDBACK_HOST_CALL) - before, uint64_t((node_size == 1 ? 2 : 1) * kRanks));
    }
    unsetenv("FAKECUDA_IPC_SELF");
}
