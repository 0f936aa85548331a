// src/api.cc - the C API: teams, tables, collectives.
#include <new>

#include "algo/algo.h"
#include "mem/domain.h"
#include "mem/ops.h"

namespace strata {

Status run_collective(Team &team, strata_coll_t coll, const CollArgs &args) {
    Status st = team.ensure_setup();
    if (st != STRATA_OK) return st;
    const AlgorithmTable &table = algorithm_table(coll);
    if (table.count == 0) return STRATA_FALLBACK;
    int alg = team.config().algorithm[coll];
    if (alg < 0 || alg >= table.count) alg = table.choose(team, args);

    team.begin_call();
    Schedule &s = team.schedule();
    s.clear();
    STRATA_CHECK(table.algorithms[alg].build(team, args));
    STRATA_CHECK(s.run(team.transport()));
    team.count_call(coll, alg);
    log(2, "%s: %zu bytes, %d node(s) x %d rank(s), algorithm %s", strata_coll_name(coll),
        args.bytes(), team.layout().nnodes(), team.layout().max_local_size(),
        table.algorithms[alg].name);
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

uint64_t strata_team_calls(const strata_team_t *team, strata_coll_t coll, int alg) {
    if (!team || coll < 0 || coll >= STRATA_COLL_COUNT || alg < 0 || alg >= kMaxAlgorithms)
        return 0;
    return static_cast<const Team *>(team)->calls(coll, alg);
}

}  // extern "C"
