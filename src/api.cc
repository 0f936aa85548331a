// src/api.cc - the C API: teams, tables, collectives.
#include <new>
#include <vector>

#include "algo/algo.h"
#include "mem/domain.h"
#include "mem/ops.h"
#include "mem/cuda_domain.h"
#include "stage.h"

namespace strata {

Status run_collective(Team &team, strata_coll_t coll, const CollArgs &args) {
    Status st = team.ensure_setup();
    if (st != STRATA_OK) return st;
    const AlgorithmTable &table = algorithm_table(coll);
    if (table.count == 0) return STRATA_FALLBACK;
    // The GPU has no kernel for some pairs (long double): agreed, as type and op are.
    const bool reduces = coll == STRATA_COLL_ALLREDUCE || coll == STRATA_COLL_REDUCE_SCATTER ||
                         coll == STRATA_COLL_REDUCE;
    if (reduces && team.device() && !cuda_reduce_supported(args.dtype, args.op)) {
        log(2, "%s: no GPU kernel for %s/%s: handed back", strata_coll_name(coll),
            strata_dtype_name(args.dtype), strata_op_name(args.op));
        return STRATA_FALLBACK;
    }
    int alg = team.config().algorithm[coll];
    if (alg < 0 || alg >= table.count) alg = table.choose(team, args);

    // A rank's buffers that are not of the team's memory kind are staged; the
    // schedule is the one every rank builds, whatever its buffers are.
    CollArgs work = args;
    Staging &staging = team.staging();
    STRATA_CHECK(staging.enter(coll, team.rank(), team.size(),
                               team.device() ? &team.domain() : nullptr, &work));
    const bool staged = staging.active();

    team.begin_call();
    Schedule &s = team.schedule();
    s.clear();
    if (team.staged_transfers()) {
        team.bounce().reset();
        s.stage_transfers(&team.domain(), &team.bounce());
    }
    STRATA_CHECK(table.algorithms[alg].build(team, work));
    STRATA_CHECK(s.run(team.transport()));
    STRATA_CHECK(staging.leave());
    team.count_call(coll, alg);
    log(2, "%s: %zu bytes, %d node(s) x %d rank(s), algorithm %s%s%s%s", strata_coll_name(coll),
        args.bytes(), team.layout().nnodes(), team.layout().max_local_size(),
        table.algorithms[alg].name, team.device() ? " in GPU memory" : "",
        team.mapped_call() ? ", local peers' buffers read in place (IPC)" : "",
        !staged ? "" : team.device() ? ", host buffers staged through the GPU"
                                     : ", device buffers staged through host");
    return STRATA_OK;
}

}  // namespace strata

using namespace strata;

extern "C" {

void strata_config_defaults(strata_config_t *cfg) {
    cfg->verbose = 0;
    cfg->node_size = 0;
    cfg->segment_size = 256 * 1024;
    cfg->small_msg_size = 16 * 1024;
    for (int &a : cfg->algorithm) a = STRATA_ALG_AUTO;
    cfg->shm_dir = nullptr;
    cfg->host_buffers = 1;
    cfg->device_path = STRATA_DEVICE_PATH_GPU;
    cfg->device_transport = STRATA_DEVICE_TRANSPORT_AUTO;
    cfg->ipc_cache_size = 64;
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

const char *strata_coll_name(strata_coll_t coll) {
    static const char *const names[STRATA_COLL_COUNT] = {
        "allreduce", "allgather", "reduce_scatter", "bcast", "alltoall", "reduce"};
    return coll >= 0 && coll < STRATA_COLL_COUNT ? names[coll] : "unknown";
}

size_t strata_dtype_size(strata_dtype_t dtype) {
    return dispatch_type(dtype, [](auto *p) -> size_t {
        using T = std::remove_pointer_t<decltype(p)>;
        if constexpr (std::is_void<T>::value) {
            return 0;
        } else {
            return sizeof(T);
        }
    });
}

int strata_op_supported(strata_dtype_t dtype, strata_op_t op) {
    return host_reduce_fn(dtype, op) != nullptr;
}

const char *strata_dtype_name(strata_dtype_t dtype) {
    static const char *const names[STRATA_DTYPE_COUNT] = {
        "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
        "float", "double", "long_double", "float_complex", "double_complex",
        "long_double_complex", "bool", "logical4", "byte", "float_int", "2int"};
    return dtype >= 0 && dtype < STRATA_DTYPE_COUNT ? names[dtype] : "unknown";
}

const char *strata_op_name(strata_op_t op) {
    static const char *const names[STRATA_OP_COUNT] = {"sum",  "prod", "max", "min",
                                                       "land", "lor",  "lxor", "band",
                                                       "bor",  "bxor", "maxloc", "minloc"};
    return op >= 0 && op < STRATA_OP_COUNT ? names[op] : "unknown";
}

strata_status_t strata_team_create(int rank, int size, int node_key,
                                   const strata_transport_t *transport,
                                   const strata_config_t *cfg, strata_team_t **team) {
    *team = nullptr;
    if (!transport || !cfg || size < 1 || rank < 0 || rank >= size) return STRATA_ERR_ARG;
    if (cfg->segment_size < 64) {
        log(0, "segment size %zu is too small (at least 64 bytes)", cfg->segment_size);
        return STRATA_ERR_ARG;
    }
    Team *t = new (std::nothrow) Team(rank, size, node_key, *transport, *cfg);
    if (!t) return STRATA_ERR_NOMEM;
    *team = t;
    return STRATA_OK;
}

void strata_team_destroy(strata_team_t *team) { delete static_cast<Team *>(team); }

strata_status_t strata_allreduce(strata_team_t *team, const void *sendbuf, void *recvbuf,
                                 size_t count, strata_dtype_t dtype, strata_op_t op) {
    if (!team || !recvbuf) return STRATA_ERR_ARG;
    if (!strata_op_supported(dtype, op)) return STRATA_FALLBACK;
    if (count == 0) return STRATA_OK;
    CollArgs a;
    a.sendbuf = sendbuf ? sendbuf : recvbuf;
    a.recvbuf = recvbuf;
    a.count = count;
    a.dtype = dtype;
    a.op = op;
    return run_collective(*static_cast<Team *>(team), STRATA_COLL_ALLREDUCE, a);
}

// Common entry checks: a team, a known collective; the byte forms take STRATA_BYTE.
static Status check_team(strata_team_t *team) { return team ? STRATA_OK : STRATA_ERR_ARG; }

strata_status_t strata_allgatherv(strata_team_t *team, const void *sendbuf, void *recvbuf,
                                  const size_t *bytes, const size_t *displs) {
    STRATA_CHECK(check_team(team));
    if (!recvbuf || !bytes || !displs) return STRATA_ERR_ARG;
    Team &t = *static_cast<Team *>(team);
    CollArgs a;
    a.in_place = sendbuf == nullptr;
    a.sendbuf = a.in_place ? static_cast<char *>(recvbuf) + displs[t.rank()] : sendbuf;
    a.recvbuf = recvbuf;
    a.count = bytes[t.rank()];
    a.counts = bytes;
    a.displs = displs;
    return run_collective(t, STRATA_COLL_ALLGATHER, a);
}

strata_status_t strata_allgather(strata_team_t *team, const void *sendbuf, void *recvbuf,
                                 size_t bytes_per_rank) {
    STRATA_CHECK(check_team(team));
    const Team &t = *static_cast<Team *>(team);
    std::vector<size_t> bytes(size_t(t.size()), bytes_per_rank), displs(size_t(t.size()));
    for (size_t r = 0; r < displs.size(); ++r) displs[r] = r * bytes_per_rank;
    return strata_allgatherv(team, sendbuf, recvbuf, bytes.data(), displs.data());
}

strata_status_t strata_bcast(strata_team_t *team, void *buf, size_t bytes, int root) {
    STRATA_CHECK(check_team(team));
    Team &t = *static_cast<Team *>(team);
    if (!buf || root < 0 || root >= t.size()) return STRATA_ERR_ARG;
    if (bytes == 0) return STRATA_OK;
    CollArgs a;
    a.sendbuf = buf;
    a.recvbuf = buf;
    a.count = bytes;
    a.root = root;
    return run_collective(t, STRATA_COLL_BCAST, a);
}

namespace {
// uniform: plain alltoall, whose blocks every rank knows the place of in every buffer.
strata_status_t alltoall(strata_team_t *team, const void *sendbuf, const size_t *sbytes, const size_t *sdispls,
                         void *recvbuf, const size_t *rbytes, const size_t *rdispls, bool uniform) {
    STRATA_CHECK(check_team(team));
    if (!rbytes || !rdispls) return STRATA_ERR_ARG;
    if (sendbuf && (!sbytes || !sdispls)) return STRATA_ERR_ARG;
    // A NULL recvbuf is legal when this rank receives nothing.
    const Team &t = *static_cast<Team *>(team);
    for (int r = 0; r < t.size() && !recvbuf; ++r)
        if (rbytes[r] > 0) return STRATA_ERR_ARG;
    CollArgs a;
    a.in_place = sendbuf == nullptr;
    a.sendbuf = a.in_place ? recvbuf : sendbuf;
    a.recvbuf = recvbuf;
    a.send_counts = a.in_place ? rbytes : sbytes;
    a.send_displs = a.in_place ? rdispls : sdispls;
    a.counts = rbytes;
    a.displs = rdispls;
    a.uniform = uniform;
    return run_collective(*static_cast<Team *>(team), STRATA_COLL_ALLTOALL, a);
}
}  // namespace

strata_status_t strata_alltoallv(strata_team_t *team, const void *sendbuf, const size_t *sbytes,
                                 const size_t *sdispls, void *recvbuf, const size_t *rbytes,
                                 const size_t *rdispls) {
    return alltoall(team, sendbuf, sbytes, sdispls, recvbuf, rbytes, rdispls, false);
}

strata_status_t strata_alltoall(strata_team_t *team, const void *sendbuf, void *recvbuf,
                                size_t bytes_per_rank) {
    STRATA_CHECK(check_team(team));
    const Team &t = *static_cast<Team *>(team);
    std::vector<size_t> bytes(size_t(t.size()), bytes_per_rank), displs(size_t(t.size()));
    for (size_t r = 0; r < displs.size(); ++r) displs[r] = r * bytes_per_rank;
    return alltoall(team, sendbuf, bytes.data(), displs.data(), recvbuf, bytes.data(), displs.data(), true);
}

strata_status_t strata_reduce_scatter(strata_team_t *team, const void *sendbuf, void *recvbuf,
                                      const size_t *counts, strata_dtype_t dtype, strata_op_t op) {
    STRATA_CHECK(check_team(team));
    if (!counts) return STRATA_ERR_ARG;
    if (!strata_op_supported(dtype, op)) return STRATA_FALLBACK;
    Team &t = *static_cast<Team *>(team);
    CollArgs a;
    for (int r = 0; r < t.size(); ++r) a.count += counts[r];
    if (a.count == 0) return STRATA_OK;
    if (!recvbuf && counts[t.rank()] > 0) return STRATA_ERR_ARG;
    a.in_place = sendbuf == nullptr;
    a.sendbuf = a.in_place ? recvbuf : sendbuf;
    a.recvbuf = recvbuf;
    a.counts = counts;
    a.dtype = dtype;
    a.op = op;
    return run_collective(t, STRATA_COLL_REDUCE_SCATTER, a);
}

strata_status_t strata_reduce(strata_team_t *team, const void *sendbuf, void *recvbuf,
                              size_t count, strata_dtype_t dtype, strata_op_t op, int root) {
    STRATA_CHECK(check_team(team));
    Team &t = *static_cast<Team *>(team);
    if (root < 0 || root >= t.size()) return STRATA_ERR_ARG;
    if (!strata_op_supported(dtype, op)) return STRATA_FALLBACK;
    if (count == 0) return STRATA_OK;
    if (t.rank() == root && !recvbuf) return STRATA_ERR_ARG;
    if (!sendbuf && t.rank() != root) return STRATA_ERR_ARG;
    CollArgs a;
    a.in_place = sendbuf == nullptr;
    a.sendbuf = a.in_place ? recvbuf : sendbuf;
    a.recvbuf = recvbuf;
    a.count = count;
    a.dtype = dtype;
    a.op = op;
    a.root = root;
    return run_collective(t, STRATA_COLL_REDUCE, a);
}

uint64_t strata_team_calls(const strata_team_t *team, strata_coll_t coll, int alg) {
    if (!team || coll < 0 || coll >= STRATA_COLL_COUNT || alg < 0 || alg >= kMaxAlgorithms)
        return 0;
    return static_cast<const Team *>(team)->calls(coll, alg);
}

}  // extern "C"
