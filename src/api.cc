// SPDX-License-Identifier: BSD-3-Clause
// src/api.cc - the C API: teams, tables, collectives. Checks the arguments, maps them to
// CollArgs and hands the call to the runner (runner.h), which lives it.
#include <algorithm>
#include <atomic>
#include <climits>
#include <mutex>
#include <new>
#include <vector>

#include "algo/algo.h"
#include "collectives.h"
#include "mem/ops.h"
#include "runner.h"


using namespace strata;

extern "C" {

void strata_config_defaults(strata_config_t *cfg) {
    cfg->verbose = 0;
    cfg->node_size = 0;
    cfg->segment_size = size_t(4) << 20;  // README "Measured": the two-host cluster, the model
    // Every segment of a GPU schedule costs a kernel launch and a host round trip,
    // about 30 us on an H200, so one node wants few of them: 64 MiB measured 3.8x
    // (2 ranks) and 4x (8 ranks) the busbw of 4 MiB at 64-256 MiB allreduce, and no
    // size slower (perf/results/h200-2026-12-04-segments.txt). Across nodes a deep
    // pipeline matters more; there segment_size stays.
    cfg->device_segment_size = size_t(64) << 20;
    // Across nodes the cost model (perf/MODEL.md, DGX H100, allreduce with 8 segments in
    // flight) puts 8 MiB ahead of 4 MiB from 64 MiB calls up (2 x 8 GPUs: 341 / 353 /
    // 355 GB/s against 305 / 311 / 312 at 64 MiB / 256 MiB / 1 GiB; 4 x 8: 292 / 256 /
    // 248 against 241 / 235 / 235), 2-7% behind at 16 MiB. Its slots: 32 MiB of GPU
    // memory per rank.
    cfg->device_multinode_segment_size = size_t(16) << 20;
    cfg->small_msg_size = 16 * 1024;
    // Its own setting since 2026-12-05, at the value small_msg_size gave it. The cost
    // model prices no size at which the slots beat the mapped kernels (perf/MODEL.md),
    // so it may go lower once a GPU run has measured what a mapping costs.
    cfg->zero_copy_size = 16 * 1024;
    for (int &a : cfg->algorithm) a = STRATA_ALG_AUTO;
    cfg->shm_dir = nullptr;
    cfg->opt_out = 0;
    cfg->host_buffers = 0;
    cfg->device_path = STRATA_DEVICE_PATH_GPU;
    cfg->device_transport = STRATA_DEVICE_TRANSPORT_AUTO;
    cfg->ipc_cache_size = 64;
    cfg->ipc_cache_bytes = size_t(4) << 30;  // UCX bounds its CUDA IPC cache by bytes too
    cfg->timeout = 0;
    cfg->check_args = STRATA_CHECK_ARGS_NODES;
    cfg->lazy_calls = 4;
    cfg->rules_file = nullptr;
    cfg->setup_at_creation = STRATA_SETUP_AT_CREATION_HOST;
    cfg->host_handback = 1;
    cfg->p2p_channel = nullptr;
    // The stream writes, the host waits: with waits on the stream (auto) a started
    // call's lane waits for its node peers, so an application that synchronizes or
    // frees on the device before its peers start the call would wait for them
    // (docs/architecture.md, "Work chained on the GPU").
    cfg->stream_flags = STRATA_STREAM_FLAGS_WRITES;
}

int strata_algorithm_count(strata_coll_t coll) { return algorithm_table(coll).count; }

const char *strata_algorithm_name(strata_coll_t coll, int index) {
    const AlgorithmTable &t = algorithm_table(coll);
    return index >= 0 && index < t.count ? t.algorithms[index].name : nullptr;
}

const char *strata_algorithm_description(strata_coll_t coll, int index) {
    const AlgorithmTable &t = algorithm_table(coll);
    return index >= 0 && index < t.count ? t.algorithms[index].description : nullptr;
}

int strata_op_supported(strata_dtype_t dtype, strata_op_t op) {
    return host_reduce_fn(dtype, op) != nullptr;
}

strata_status_t strata_team_create(int rank, int size, int node_key,
                                   const strata_transport_t *transport,
                                   const strata_config_t *cfg, strata_team_t **team) {
    *team = nullptr;
    if (!transport || !cfg || size < 1 || rank < 0 || rank >= size) return STRATA_ERR_ARG;
    if (cfg->segment_size < 64 || cfg->segment_size > (size_t(1) << 30)) {
        warn("segment size out of range", "segment size %zu is out of range (64 bytes to 1 GiB)", cfg->segment_size);
        return STRATA_ERR_ARG;
    }
    for (const size_t *dev : {&cfg->device_segment_size, &cfg->device_multinode_segment_size})
        if (*dev != 0 && (*dev < 64 || *dev > (size_t(1) << 30))) {
            warn("segment size out of range", "device segment size %zu is out of range (0, or 64 bytes to 1 GiB)",
                 *dev);
            return STRATA_ERR_ARG;
        }
    CoreTeam *t = new (std::nothrow) CoreTeam(rank, size, node_key, *transport, *cfg);
    if (!t) return STRATA_ERR_NOMEM;
    load_team_rules(*t, cfg->rules_file);
    *team = t;
    return STRATA_OK;
}

void strata_team_destroy(strata_team_t *team) { delete static_cast<Team *>(team); }

void strata_stack_call(int yes) { note_stack_call(yes != 0); }

strata_status_t strata_team_setup(strata_team_t *team) {
    if (team == nullptr) return STRATA_ERR_ARG;
    Team &t = *static_cast<Team *>(team);
    std::lock_guard<std::recursive_mutex> held(t.mutex());
    return t.ensure_setup(false);
}

// A NULL buffer where this rank has bytes to move fails the call on this rank (after
// every rank got as far, so that its peers hear of it); in place is STRATA_IN_PLACE.
static void need(CollArgs *a, const void *buf, bool has_bytes, const char *why) {
    if (a->local == STRATA_OK && buf == nullptr && has_bytes) {
        a->local = STRATA_ERR_BUFFER;
        a->why = why;
    }
}
static const char kNullSend[] = "the send buffer is NULL (MPI_IN_PLACE is not NULL)";
static const char kNullRecv[] = "the receive buffer is NULL";

// A type and op with no host reduction (the glue asks first: only other callers reach it).
static strata_status_t no_reduction(strata_team_t *team, strata_coll_t coll, strata_dtype_t dtype, strata_op_t op) {
    const std::string which = std::string(" (") + strata_dtype_name(dtype) + "/" + strata_op_name(op) + ")";
    return hand_back(*static_cast<Team *>(team), coll, CallInfo::Blocking, 0, STRATA_HANDBACK_UNSUPPORTED, which.c_str());
}

static strata_status_t allreduce(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t count,
                                 strata_dtype_t dtype, strata_op_t op, const Start &how) {
    if (!team) return STRATA_ERR_ARG;
    if (!strata_op_supported(dtype, op)) return no_reduction(team, STRATA_COLL_ALLREDUCE, dtype, op);
    if (count == 0) return STRATA_OK;
    CollArgs a;
    a.sendbuf = sendbuf == STRATA_IN_PLACE ? recvbuf : sendbuf;
    a.recvbuf = recvbuf;
    a.count = count;
    a.dtype = dtype;
    a.op = op;
    need(&a, recvbuf, true, kNullRecv);
    need(&a, a.sendbuf, true, kNullSend);
    return run_collective(*static_cast<Team *>(team), STRATA_COLL_ALLREDUCE, a, how);
}

// Common entry checks: a team, a known collective; the byte forms take STRATA_BYTE.
static Status check_team(strata_team_t *team) { return team ? STRATA_OK : STRATA_ERR_ARG; }

// uniform: plain allgather, whose blocks lie at r x the block in every rank's recvbuf.
static strata_status_t allgatherv(strata_team_t *team, const void *sendbuf, void *recvbuf, const size_t *bytes,
                                  const size_t *displs, const Start &how, bool uniform = false) {
    STRATA_CHECK(check_team(team));
    if (!bytes || !displs) return STRATA_ERR_ARG;
    Team &t = *static_cast<Team *>(team);
    CollArgs a;
    a.in_place = sendbuf == STRATA_IN_PLACE;
    a.sendbuf = a.in_place ? (recvbuf ? static_cast<char *>(recvbuf) + displs[t.rank()] : nullptr) : sendbuf;
    a.recvbuf = recvbuf;
    a.count = bytes[t.rank()];
    a.counts = bytes;
    a.displs = displs;
    a.uniform = uniform;
    size_t total = 0;
    for (int r = 0; r < t.size(); ++r) total += bytes[r];
    if (total == 0) return STRATA_OK;  // the same on every rank: MPI makes the counts agree
    need(&a, recvbuf, true, kNullRecv);
    need(&a, a.sendbuf, a.count > 0, kNullSend);
    return run_collective(t, STRATA_COLL_ALLGATHER, a, how);
}

// The per-rank arrays of a call with equal blocks, kept per thread (a call's builder
// reads them; nothing keeps them past the call): no allocation per call.
static std::vector<size_t> &uniform_blocks(const Team &t, size_t bytes_per_rank) {
    static thread_local std::vector<size_t> v;
    v.assign(size_t(t.size()), bytes_per_rank);
    return v;
}
static std::vector<size_t> &uniform_displs(const Team &t, size_t bytes_per_rank) {
    static thread_local std::vector<size_t> v;
    v.resize(size_t(t.size()));
    for (size_t r = 0; r < v.size(); ++r) v[r] = r * bytes_per_rank;
    return v;
}

static strata_status_t allgather(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t bytes_per_rank,
                                 const Start &how) {
    STRATA_CHECK(check_team(team));
    const Team &t = *static_cast<Team *>(team);
    std::vector<size_t> &bytes = uniform_blocks(t, bytes_per_rank), &displs = uniform_displs(t, bytes_per_rank);
    return allgatherv(team, sendbuf, recvbuf, bytes.data(), displs.data(), how, true);
}

static strata_status_t bcast(strata_team_t *team, void *buf, size_t bytes, int root, const Start &how) {
    STRATA_CHECK(check_team(team));
    Team &t = *static_cast<Team *>(team);
    if (root < 0 || root >= t.size()) return STRATA_ERR_ARG;
    if (bytes == 0) return STRATA_OK;
    CollArgs a;
    a.sendbuf = buf;
    a.recvbuf = buf;
    a.count = bytes;
    a.root = root;
    need(&a, buf, true, "the buffer is NULL");
    return run_collective(t, STRATA_COLL_BCAST, a, how);
}

namespace {
// uniform: plain alltoall, whose blocks every rank knows the place of in every buffer.
strata_status_t alltoall(strata_team_t *team, const void *sendbuf, const size_t *sbytes, const size_t *sdispls,
                         void *recvbuf, const size_t *rbytes, const size_t *rdispls, bool uniform, const Start &how) {
    STRATA_CHECK(check_team(team));
    if (!rbytes || !rdispls) return STRATA_ERR_ARG;
    const bool in_place = sendbuf == STRATA_IN_PLACE;
    if (!in_place && (!sbytes || !sdispls)) return STRATA_ERR_ARG;
    const Team &t = *static_cast<Team *>(team);
    CollArgs a;
    a.in_place = in_place;
    a.sendbuf = a.in_place ? recvbuf : sendbuf;
    a.recvbuf = recvbuf;
    a.send_counts = a.in_place ? rbytes : sbytes;
    a.send_displs = a.in_place ? rdispls : sdispls;
    a.counts = rbytes;
    a.displs = rdispls;
    a.uniform = uniform;
    // NULL buffers are legal where this rank moves nothing.
    bool receives = false, sends = false;
    for (int r = 0; r < t.size(); ++r) {
        receives = receives || rbytes[r] > 0;
        sends = sends || a.send_counts[r] > 0;
    }
    if (uniform && !receives) return STRATA_OK;  // the same on every rank
    need(&a, recvbuf, receives, kNullRecv);
    need(&a, a.sendbuf, sends, kNullSend);
    return run_collective(*static_cast<Team *>(team), STRATA_COLL_ALLTOALL, a, how);
}
}  // namespace

static strata_status_t alltoall_uniform(strata_team_t *team, const void *sendbuf, void *recvbuf,
                                        size_t bytes_per_rank, const Start &how) {
    STRATA_CHECK(check_team(team));
    const Team &t = *static_cast<Team *>(team);
    std::vector<size_t> &bytes = uniform_blocks(t, bytes_per_rank), &displs = uniform_displs(t, bytes_per_rank);
    return alltoall(team, sendbuf, bytes.data(), displs.data(), recvbuf, bytes.data(), displs.data(), true, how);
}

static strata_status_t reduce_scatter(strata_team_t *team, const void *sendbuf, void *recvbuf, const size_t *counts,
                                      strata_dtype_t dtype, strata_op_t op, const Start &how) {
    STRATA_CHECK(check_team(team));
    if (!counts) return STRATA_ERR_ARG;
    if (!strata_op_supported(dtype, op)) return no_reduction(team, STRATA_COLL_REDUCE_SCATTER, dtype, op);
    Team &t = *static_cast<Team *>(team);
    CollArgs a;
    for (int r = 0; r < t.size(); ++r) a.count += counts[r];
    if (a.count == 0) return STRATA_OK;  // the same on every rank: MPI makes the counts agree
    a.in_place = sendbuf == STRATA_IN_PLACE;
    a.sendbuf = a.in_place ? recvbuf : sendbuf;
    a.recvbuf = recvbuf;
    a.counts = counts;
    a.dtype = dtype;
    a.op = op;
    need(&a, recvbuf, a.in_place || counts[t.rank()] > 0, kNullRecv);
    need(&a, a.sendbuf, true, kNullSend);
    return run_collective(t, STRATA_COLL_REDUCE_SCATTER, a, how);
}

static strata_status_t reduce(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t count,
                              strata_dtype_t dtype, strata_op_t op, int root, const Start &how) {
    STRATA_CHECK(check_team(team));
    Team &t = *static_cast<Team *>(team);
    if (root < 0 || root >= t.size()) return STRATA_ERR_ARG;
    if (!strata_op_supported(dtype, op)) return no_reduction(team, STRATA_COLL_REDUCE, dtype, op);
    if (count == 0) return STRATA_OK;
    CollArgs a;
    a.in_place = sendbuf == STRATA_IN_PLACE;
    a.sendbuf = a.in_place ? recvbuf : sendbuf;
    a.recvbuf = recvbuf;
    a.count = count;
    a.dtype = dtype;
    a.op = op;
    a.root = root;
    if (a.in_place && t.rank() != root) {
        a.local = STRATA_ERR_ARG;
        a.why = "MPI_IN_PLACE on a rank that is not the root of MPI_Reduce";
    }
    need(&a, recvbuf, t.rank() == root, kNullRecv);
    need(&a, a.sendbuf, true, kNullSend);
    return run_collective(t, STRATA_COLL_REDUCE, a, how);
}

// Rooted data movement (strata.h): gather (scatter = false) and scatter. The root's
// buffer holds size x bytes blocks; the other ranks' one of them is ignored (NULL here,
// whatever they passed). In place is the root's own block left where it is.
static strata_status_t rooted(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t bytes, int root,
                              bool scatter, const Start &how) {
    STRATA_CHECK(check_team(team));
    Team &t = *static_cast<Team *>(team);
    if (root < 0 || root >= t.size()) return STRATA_ERR_ARG;
    if (bytes == 0) return STRATA_OK;  // the same on every rank: MPI makes the sizes agree
    const bool is_root = t.rank() == root;
    char *all = static_cast<char *>(scatter ? const_cast<void *>(sendbuf) : recvbuf);  // the root's buffer
    CollArgs a;
    a.count = bytes;
    a.root = root;
    a.in_place = scatter ? recvbuf == STRATA_IN_PLACE : sendbuf == STRATA_IN_PLACE;
    if (a.in_place && !is_root) {
        a.local = STRATA_ERR_ARG;
        a.why = scatter ? "MPI_IN_PLACE on a rank that is not the root of MPI_Scatter"
                        : "MPI_IN_PLACE on a rank that is not the root of MPI_Gather";
    }
    const bool mine_in_all = a.in_place && is_root && all != nullptr;
    void *mine = mine_in_all ? all + size_t(root) * bytes : nullptr;  // the root's block, in place
    a.sendbuf = scatter ? (is_root ? all : nullptr) : mine_in_all ? mine : a.in_place ? nullptr : sendbuf;
    a.recvbuf = scatter ? (a.in_place ? nullptr : recvbuf) : (is_root ? all : nullptr);
    need(&a, all, is_root, scatter ? kNullSend : kNullRecv);
    need(&a, scatter ? a.recvbuf : a.sendbuf, !(a.in_place && is_root), scatter ? kNullRecv : kNullSend);
    return run_collective(t, scatter ? STRATA_COLL_SCATTER : STRATA_COLL_GATHER, a, how);
}

// ---- the entry points: blocking, and nonblocking or persistent (strata.h)
namespace {
const Start kBlocking{};
// A nonblocking or persistent call's Start; *req is NULL until a request exists.
Start start_of(const strata_start_t *how, strata_request_t **req) {
    *req = nullptr;
    return Start{how && how->persistent ? CallInfo::Persistent : CallInfo::Nonblocking, how, req};
}
}  // namespace

strata_status_t strata_allreduce(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t count,
                                 strata_dtype_t dtype, strata_op_t op) {
    return allreduce(team, sendbuf, recvbuf, count, dtype, op, kBlocking);
}
strata_status_t strata_iallreduce(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t count,
                                  strata_dtype_t dtype, strata_op_t op, const strata_start_t *how,
                                  strata_request_t **req) {
    return allreduce(team, sendbuf, recvbuf, count, dtype, op, start_of(how, req));
}
strata_status_t strata_allgather(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t bytes_per_rank) {
    return allgather(team, sendbuf, recvbuf, bytes_per_rank, kBlocking);
}
strata_status_t strata_iallgather(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t bytes_per_rank,
                                  const strata_start_t *how, strata_request_t **req) {
    return allgather(team, sendbuf, recvbuf, bytes_per_rank, start_of(how, req));
}
strata_status_t strata_allgatherv(strata_team_t *team, const void *sendbuf, void *recvbuf, const size_t *bytes,
                                  const size_t *displs) {
    return allgatherv(team, sendbuf, recvbuf, bytes, displs, kBlocking);
}
strata_status_t strata_iallgatherv(strata_team_t *team, const void *sendbuf, void *recvbuf, const size_t *bytes,
                                   const size_t *displs, const strata_start_t *how, strata_request_t **req) {
    return allgatherv(team, sendbuf, recvbuf, bytes, displs, start_of(how, req));
}
strata_status_t strata_bcast(strata_team_t *team, void *buf, size_t bytes, int root) {
    return bcast(team, buf, bytes, root, kBlocking);
}
strata_status_t strata_ibcast(strata_team_t *team, void *buf, size_t bytes, int root, const strata_start_t *how,
                              strata_request_t **req) {
    return bcast(team, buf, bytes, root, start_of(how, req));
}
strata_status_t strata_alltoall(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t bytes_per_rank) {
    return alltoall_uniform(team, sendbuf, recvbuf, bytes_per_rank, kBlocking);
}
strata_status_t strata_ialltoall(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t bytes_per_rank,
                                 const strata_start_t *how, strata_request_t **req) {
    return alltoall_uniform(team, sendbuf, recvbuf, bytes_per_rank, start_of(how, req));
}
strata_status_t strata_alltoallv(strata_team_t *team, const void *sendbuf, const size_t *sbytes,
                                 const size_t *sdispls, void *recvbuf, const size_t *rbytes, const size_t *rdispls) {
    return alltoall(team, sendbuf, sbytes, sdispls, recvbuf, rbytes, rdispls, false, kBlocking);
}
strata_status_t strata_ialltoallv(strata_team_t *team, const void *sendbuf, const size_t *sbytes,
                                  const size_t *sdispls, void *recvbuf, const size_t *rbytes, const size_t *rdispls,
                                  const strata_start_t *how, strata_request_t **req) {
    return alltoall(team, sendbuf, sbytes, sdispls, recvbuf, rbytes, rdispls, false, start_of(how, req));
}
strata_status_t strata_reduce_scatter(strata_team_t *team, const void *sendbuf, void *recvbuf, const size_t *counts,
                                      strata_dtype_t dtype, strata_op_t op) {
    return reduce_scatter(team, sendbuf, recvbuf, counts, dtype, op, kBlocking);
}
strata_status_t strata_ireduce_scatter(strata_team_t *team, const void *sendbuf, void *recvbuf,
                                       const size_t *counts, strata_dtype_t dtype, strata_op_t op,
                                       const strata_start_t *how, strata_request_t **req) {
    return reduce_scatter(team, sendbuf, recvbuf, counts, dtype, op, start_of(how, req));
}
strata_status_t strata_reduce(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t count,
                              strata_dtype_t dtype, strata_op_t op, int root) {
    return reduce(team, sendbuf, recvbuf, count, dtype, op, root, kBlocking);
}
strata_status_t strata_ireduce(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t count,
                               strata_dtype_t dtype, strata_op_t op, int root, const strata_start_t *how,
                               strata_request_t **req) {
    return reduce(team, sendbuf, recvbuf, count, dtype, op, root, start_of(how, req));
}

strata_status_t strata_gather(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t bytes_per_rank,
                              int root) {
    return rooted(team, sendbuf, recvbuf, bytes_per_rank, root, false, kBlocking);
}
strata_status_t strata_igather(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t bytes_per_rank,
                               int root, const strata_start_t *how, strata_request_t **req) {
    return rooted(team, sendbuf, recvbuf, bytes_per_rank, root, false, start_of(how, req));
}
strata_status_t strata_scatter(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t bytes_per_rank,
                               int root) {
    return rooted(team, sendbuf, recvbuf, bytes_per_rank, root, true, kBlocking);
}
strata_status_t strata_iscatter(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t bytes_per_rank,
                                int root, const strata_start_t *how, strata_request_t **req) {
    return rooted(team, sendbuf, recvbuf, bytes_per_rank, root, true, start_of(how, req));
}

strata_status_t strata_request_start(strata_request_t *req) {
    if (req == nullptr) return STRATA_ERR_ARG;
    std::unique_lock<std::recursive_mutex> held(req->team->mutex());
    if (!req->persistent || !req->done) return STRATA_ERR_ARG;
    start_request(req);
    return STRATA_OK;
}

// done is read once after the progress: read again for the return, a completion on
// another thread in between made it report a request done whose status it never
// handed over (a failed call's MPI_Test saw MPI_SUCCESS).
int strata_request_test(strata_request_t *req, strata_status_t *status) {
    if (req == nullptr) return 1;
    if (!req->done) req->team->progress_others();  // a transport's test() may only look
    if (!req->done) return 0;
    if (status) *status = req->status;
    return 1;
}

strata_status_t strata_request_free(strata_request_t *req) {
    if (req == nullptr) return STRATA_OK;
    {
        // The pass that completed it may still be finishing (on another thread).
        std::lock_guard<std::recursive_mutex> held(req->team->mutex());
        if (!req->done) return STRATA_ERR_ARG;
        calls_of(*req->team).return_call(std::move(req->call));
    }
    delete req;
    return STRATA_OK;
}

int strata_progress(void) {
    bool idle = false;
    return progress_all(&idle);
}

int strata_progress_pending(void) { return anything_queued() ? 1 : 0; }

static strata_status_t fail_call(strata_team_t *team, strata_coll_t coll, strata_status_t status, const char *why,
                                 size_t call_bytes, strata_dtype_t dtype, strata_op_t op, const Start &how) {
    if (!team || coll < 0 || coll >= STRATA_COLL_COUNT) return status;
    Team &t = *static_cast<Team *>(team);
    // Arguments whose size, type and op are the call's, as its peers see them, so that
    // every decision before the failure is theirs (a reduction's type decides whether
    // the GPU has a kernel for it).
    const size_t n = size_t(t.size()), es = strata_dtype_size(dtype) ? strata_dtype_size(dtype) : 1;
    const size_t elems = call_bytes / es;
    std::vector<size_t> per(n, elems / n);
    per[0] += elems % n;
    CollArgs a;
    a.local = status < 0 ? status : STRATA_ERR_ARG;
    a.why = why;
    a.dtype = dtype;
    a.op = op;
    a.count = elems > 0 ? elems : 1;
    a.counts = per.data();
    a.send_counts = per.data();
    if (collective(coll).is(kRootBuffer))  // call_bytes is size x a rank's block
        a.count = std::max<size_t>(elems / n, 1);
    a.uniform = collective(coll).is(kPairs) && call_bytes > 0;
    // Goes as far as its peers (setup, agreement), then fails the call for everyone.
    return run_collective(t, coll, a, how);
}

strata_status_t strata_fail_call(strata_team_t *team, strata_coll_t coll, strata_status_t status,
                                 const char *why, size_t call_bytes, strata_dtype_t dtype, strata_op_t op) {
    return fail_call(team, coll, status, why, call_bytes, dtype, op, kBlocking);
}

strata_status_t strata_ifail_call(strata_team_t *team, strata_coll_t coll, strata_status_t status, const char *why,
                                  size_t call_bytes, strata_dtype_t dtype, strata_op_t op, const strata_start_t *how,
                                  strata_request_t **req) {
    return fail_call(team, coll, status, why, call_bytes, dtype, op, start_of(how, req));
}

const char *strata_team_last_error(const strata_team_t *team) {
    if (!team) return "";
    const Team &t = *static_cast<const Team *>(team);
    return !t.last_error().empty() ? t.last_error().c_str() : t.first_failure().c_str();
}

const char *strata_team_last_algorithm(const strata_team_t *team) {
    return team ? static_cast<const Team *>(team)->last_algorithm() : nullptr;
}

uint64_t strata_team_calls(const strata_team_t *team, strata_coll_t coll, int alg) {
    if (!team || coll < 0 || coll >= STRATA_COLL_COUNT || alg < 0 || alg >= kMaxAlgorithms)
        return 0;
    return static_cast<const Team *>(team)->calls(coll, alg);
}

void strata_team_count_handback(strata_team_t *team, strata_handback_t why) {
    if (why < 0 || why >= STRATA_HANDBACK_COUNT) return;
    if (team)
        static_cast<Team *>(team)->count_handback(why);
    else
        count(stats().handed_back[why]);
}

void strata_team_report(const strata_team_t *team, const char *name) {
    if (!team) return;
    const Team &t = *static_cast<const Team *>(team);
    std::string served, back;
    uint64_t nserved = 0, nback = 0;
    char b[96];
    for (int c = 0; c < STRATA_COLL_COUNT; ++c) {
        const AlgorithmTable &table = algorithm_table(strata_coll_t(c));
        uint64_t n = 0;
        std::string algs;
        for (int a = 0; a < table.count && a < kMaxAlgorithms; ++a) {
            const uint64_t k = t.calls(strata_coll_t(c), a);
            if (k == 0) continue;
            snprintf(b, sizeof b, "%s%s %llu", algs.empty() ? "" : ", ", table.algorithms[a].name, (unsigned long long)k);
            algs += b;
            n += k;
        }
        if (n == 0) continue;
        snprintf(b, sizeof b, "%s%s %llu: ", served.empty() ? "" : "; ", strata_coll_name(strata_coll_t(c)),
                 (unsigned long long)n);
        served += b + algs;
        nserved += n;
    }
    for (int w = 0; w < STRATA_HANDBACK_COUNT; ++w) {
        const uint64_t k = t.handed_back(strata_handback_t(w));
        if (k == 0) continue;
        snprintf(b, sizeof b, "%s%llu: ", back.empty() ? "" : "; ", (unsigned long long)k);
        back += b + std::string(strata_handback_words(strata_handback_t(w)));
        nback += k;
    }
    if (nserved + nback == 0) return;
    log(1, "%s: %llu call(s): %llu served%s%s%s, %llu handed back%s%s%s", name ? name : "a communicator",
        (unsigned long long)(nserved + nback), (unsigned long long)nserved, served.empty() ? "" : " (",
        served.c_str(), served.empty() ? "" : ")", (unsigned long long)nback, back.empty() ? "" : " (",
        back.c_str(), back.empty() ? "" : ")");
}

}  // extern "C"
