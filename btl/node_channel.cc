// SPDX-License-Identifier: BSD-3-Clause
// btl/node_channel.cc - the channel among the ranks of one node (see node_channel.h).
#include "btl/node_channel.h"

#include "btl/exchange.h"

#include <sched.h>
#include <time.h>

#include <cstdio>

namespace strata {

namespace {

// What a rank posts in its mailbox in call n: in half n % 2, so that a rank one call
// ahead never overwrites what a slower peer still reads. (No rank gets two ahead:
// finishing the exchange of call n waits for every peer's "mapped" of n.) A post is
// read only if it is of the reader's call (a peer in an erroneous call may have
// posted nothing).
struct Post {
    uint64_t call;
    int posted;  // ref describes this rank's buffer, or there is nothing to read (empty)
    int empty;
    int opened;  // this rank mapped every peer's buffer
    IpcRef ref;
};
static_assert(2 * sizeof(Post) <= ShmChannel::kMailboxBytes, "mailbox too small");
Post *post_of(char *mailbox, uint64_t n) { return reinterpret_cast<Post *>(mailbox) + n % 2; }
}  // namespace

// Setting up the host segment, over the wire with one tag (messages from one sender
// match in order):
//
//   leader                                   each local peer
//   create, unnamed ── Word{kMap, /proc} ──> open /proc/<pid>/fd/<fd>, map
//                   <───────── Ack ──────── kMapped, kNoProc or kFailed
//   all kMapped:    ── Word{kKeep} ───────> done
//   a kNoProc:      create a named one, ── Word{kMap, name} ──> drop the first, map
//                   <───────── Ack ──────── (the leader unlinks the name now)
//                   ── Word{kKeep} ───────> done
//   a failure:      ── Word{kFail} ───────> unmap (the rank that failed says why)
//
// The leader keeps its fd open (or the name in place) until every peer has answered,
// and lets go of it before it returns, whatever happened: an unnamed segment never had
// a name, and a named one is unlinked at the first moment no peer needs it.
namespace {
struct Word {
    enum Verdict : int32_t { kFail = 0, kMap = 1, kKeep = 2 };
    int32_t verdict;
    ShmWhere where;
};
enum Ack : int32_t { kFailed = 0, kMapped = 1, kNoProc = 2 };
}  // namespace

Status NodeChannel::open(const Layout &l, P2PChannel &wire, int tag, const char *dir, size_t region, const Waiter &w,
                         std::string *why) {
    const int local_size = l.my_local_size(), node = l.my_node();
    if (local_size == 1) return shm_.make_private(region);
    if (l.my_local() != 0) {
        for (;;) {
            Word word{};
            STRATA_CHECK(exchange(wire, tag, {}, {{&word, sizeof word, l.rank_at(node, 0)}}, w, why));
            if (word.verdict == Word::kKeep) return STRATA_OK;
            if (word.verdict != Word::kMap) {
                shm_.reset();
                return STRATA_ERR_SYS;  // the leader (or the peer that failed) said why
            }
            const Status st = shm_.attach(dir, word.where, local_size, region);
            int32_t ack = st == STRATA_OK ? kMapped : st == STRATA_ERR_UNSUPPORTED ? kNoProc : kFailed;
            STRATA_CHECK(exchange(wire, tag, {{&ack, sizeof ack, l.rank_at(node, 0)}}, {}, w, why));
        }
    }
    Word word{};
    Status status = shm_.create(dir, local_size, region, false, &word.where);
    std::vector<int32_t> acks(size_t(local_size), kMapped);
    for (int round = 0; status == STRATA_OK; ++round) {
        word.verdict = Word::kMap;
        std::vector<Msg> sends, recvs;
        for (int i = 1; i < local_size; ++i) {
            sends.push_back({&word, sizeof word, l.rank_at(node, i)});
            recvs.push_back({&acks[size_t(i)], sizeof(int32_t), l.rank_at(node, i)});
        }
        const Status st = exchange(wire, tag, sends, recvs, w, why);
        shm_.release();  // every peer has mapped it or given up
        STRATA_CHECK(st);
        int no_proc = 0, failed = 0;
        for (int i = 1; i < local_size; ++i) {
            no_proc += acks[size_t(i)] == kNoProc;
            failed += acks[size_t(i)] == kFailed;
        }
        if (failed == 0 && no_proc == 0) break;
        if (failed > 0 || round > 0) {
            status = STRATA_ERR_SYS;  // the peer that failed says why
            break;
        }
        log(1, "%d local peer(s) of node %d cannot open the node's segment through /proc: a named segment "
               "instead, removed once they have mapped it",
            no_proc, node);
        status = shm_.create(dir, local_size, region, true, &word.where);
    }
    word.verdict = status == STRATA_OK ? Word::kKeep : Word::kFail;
    std::vector<Msg> sends;
    for (int i = 1; i < local_size; ++i) sends.push_back({&word, sizeof word, l.rank_at(node, i)});
    STRATA_CHECK(exchange(wire, tag, sends, {}, w, why));
    if (status != STRATA_OK) shm_.reset();
    return status;
}

Status NodeChannel::open_device(const Layout &l, P2PChannel &wire, int tag, MemDomain *dom, size_t region,
                                const Waiter &w, std::string *why) {
    struct Offer {
        int ok;
        IpcHandle handle;
    };
    const int local_size = l.my_local_size(), me = l.my_local(), node = l.my_node();
    Offer mine{};
    std::vector<Offer> theirs(static_cast<size_t>(local_size));
    if (dom != nullptr) {
        const Status st = dregions_.make_own(*dom, local_size, me, region, &mine.handle);
        if (st == STRATA_OK) {
            mine.ok = 1;
        } else {
            *why = std::string("device region: ") + status_name(st);
        }
    }
    std::vector<Msg> sends, recvs;
    for (int i = 0; i < local_size; ++i) {
        if (i == me) continue;
        sends.push_back({&mine, sizeof mine, l.rank_at(node, i)});
        recvs.push_back({&theirs[size_t(i)], sizeof(Offer), l.rank_at(node, i)});
    }
    STRATA_CHECK(exchange(wire, tag, sends, recvs, w, why));
    if (!mine.ok) return STRATA_ERR_DEVICE;
    for (int i = 0; i < local_size; ++i) {
        if (i == me) continue;
        if (!theirs[size_t(i)].ok) {  // its own failure, which it says
            *why = "local rank " + std::to_string(i) + " could not set up its GPU";
            return STRATA_ERR_PEER;
        }
        const Status st = dregions_.open_peer(i, theirs[size_t(i)].handle);
        if (st != STRATA_OK) {
            *why = "mapping local rank " + std::to_string(i) + "'s GPU memory: " + status_name(st);
            return st;
        }
    }
    return STRATA_OK;
}

// A peer's last copy out of this rank's region may still be queued when this rank
// ends its last call: so every rank first unmaps its peers' regions and says so, and
// frees its own only once every local peer has. Communicator free and finalize are
// collective, so the wait is usually short; it is bounded (a rank may free a
// communicator long after its peers).
bool NodeChannel::close_device(const Layout &l, uint64_t tries, int wait_seconds) {
    ipc_.clear();
    dregions_.close_peers();
    const int local_size = l.my_local_size(), me = l.my_local();
    bool all_closed = true;
    if (local_size > 1) {
        __atomic_store_n(flag(me, kFlagClosed), tries, __ATOMIC_RELEASE);
        const time_t give_up = time(nullptr) + wait_seconds;
        for (int r = 0; r < local_size; ++r) {
            while (__atomic_load_n(flag(r, kFlagClosed), __ATOMIC_ACQUIRE) < tries) {
                if (time(nullptr) > give_up) {
                    all_closed = false;
                    break;
                }
                sched_yield();
            }
        }
    }
    dregions_.drop_own(!all_closed);
    return all_closed;
}

Status NodeChannel::post(uint64_t n, int me, MemDomain &dom, const void *buf, bool empty) {
    ipc_.begin_call();
    Post *mine = post_of(shm_.mailbox(me), n);
    mine->call = n;
    mine->opened = 0;
    mine->empty = empty;
    mine->posted = empty || ipc_.describe(dom, buf, &mine->ref) == STRATA_OK;
    // Peers' streams are not ordered after this process's: the buffer must be final
    // (work the application queued on the legacy stream included) before they read it.
    if (mine->posted && !empty) STRATA_CHECK(dom.settle());
    return STRATA_OK;
}

Status NodeChannel::open_peers(uint64_t n, int me, int local_size, MemDomain &dom,
                               std::vector<const char *> *bufs) {
    // A buffer that could not be posted anywhere on the node: it copies anyway, map nothing.
    bool ok = true;
    for (int i = 0; i < local_size && ok; ++i) {
        const Post *p = post_of(shm_.mailbox(i), n);
        ok = p->call == n && p->posted;
    }
    for (int i = 0; i < local_size && ok; ++i) {
        const Post *p = post_of(shm_.mailbox(i), n);
        if (i == me || p->empty) continue;
        char *mapped = nullptr;
        ok = ipc_.map(dom, i, p->ref, &mapped) == STRATA_OK;
        (*bufs)[size_t(i)] = mapped;
    }
    post_of(shm_.mailbox(me), n)->opened = ok;
    return STRATA_OK;
}

bool NodeChannel::all_opened(uint64_t n, int local_size) const {
    bool ok = true;
    for (int i = 0; i < local_size && ok; ++i) {
        const Post *p = post_of(shm_.mailbox(i), n);
        ok = p->call == n && p->opened;
    }
    return ok;
}

}  // namespace strata
