// SPDX-License-Identifier: BSD-3-Clause
// btl/node_channel.cc - the channel among the ranks of one node (see node_channel.h).
#include "btl/node_channel.h"

#include "btl/exchange.h"

#include <sched.h>
#include <time.h>

#include <cstdio>
#include <algorithm>
#include <deque>
#include <memory>
#include <mutex>

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
    int has_out;  // out below is this call's (a mismatched call may post none)
    IpcRef ref;
    IpcRef out;  // its output, where the call maps outputs too
};
static_assert(2 * sizeof(Post) <= ShmChannel::kMailboxBytes, "mailbox too small");
Post *post_of(char *mailbox, uint64_t n) { return reinterpret_cast<Post *>(mailbox) + n % 2; }
}  // namespace

// Segments of freed communicators, kept for the next communicator of the same ranks
// (a dup/free cycle would otherwise reserve and zero 16 MiB per rank each time, at the
// default segment size). An entry is one process's mapping, found by the segment's
// identity and this process's local index in it; it is taken up only when every local
// rank of the new team still holds it, in the same places (node_channel.h).
namespace {
struct Kept {
    uint64_t id;
    int local, local_size;
    size_t region;
    std::string dir;
    std::unique_ptr<ShmChannel> shm;
};
std::mutex kept_mu;
std::deque<Kept> kept;  // newest first
size_t kept_max = 2;    // per process; the oldest is unmapped beyond it

std::string dir_key(const char *dir) { return dir ? dir : ""; }

// The entry for id (0: any segment this process led, local index 0) at local index
// `local` of a node of local_size ranks with these regions.
std::deque<Kept>::iterator find_kept(uint64_t id, int local, int local_size, size_t region, const char *dir) {
    for (auto it = kept.begin(); it != kept.end(); ++it)
        if ((id == 0 || it->id == id) && it->local == local && it->local_size == local_size &&
            it->region == region && it->dir == dir_key(dir))
            return it;
    return kept.end();
}

// Keeps the entries of the kept_max newest segments (one entry each in a process of
// ranks; one per rank where ranks are threads), moving the others to *dropped.
void trim_kept(std::deque<Kept> *dropped) {
    std::vector<uint64_t> ids;
    for (auto it = kept.begin(); it != kept.end();) {
        auto at = std::find(ids.begin(), ids.end(), it->id);
        if (at == ids.end()) at = ids.insert(ids.end(), it->id);
        if (size_t(at - ids.begin()) >= kept_max) {
            dropped->push_back(std::move(*it));
            it = kept.erase(it);
        } else {
            ++it;
        }
    }
}

// Takes the kept entry into shm (which must be empty).
bool take_kept(ShmChannel *shm, uint64_t id, int local, int local_size, size_t region, const char *dir) {
    std::lock_guard<std::mutex> g(kept_mu);
    auto it = find_kept(id, local, local_size, region, dir);
    if (it == kept.end()) return false;
    shm->swap(*it->shm);
    kept.erase(it);
    return true;
}
}  // namespace

void NodeChannel::keep_segment(int local, size_t region, const char *dir) {
    if (!shm_.shared()) return;
    Kept k{shm_.id(), local, shm_.local_size(), region, dir_key(dir), std::unique_ptr<ShmChannel>(new ShmChannel)};
    k.shm->swap(shm_);
    std::deque<Kept> dropped;  // unmapped outside the lock
    std::lock_guard<std::mutex> g(kept_mu);
    kept.push_front(std::move(k));
    trim_kept(&dropped);
}

void NodeChannel::set_kept_segments_for_testing(size_t n) {
    std::deque<Kept> dropped;
    std::lock_guard<std::mutex> g(kept_mu);
    kept_max = n;
    trim_kept(&dropped);
}

// Setting up the host segment, over the wire with one tag (messages from one sender
// match in order):
//
//   leader                                   each local peer
//   a kept segment ── Word{kReuse, id} ───> do I keep it, at my index?
//                   <───────── Ack ──────── kKept or kNotKept
//   all kKept:      clear its flags and mailboxes (no rank uses it now),
//                   ── Word{kKeep, id} ───> take it up: done
//   otherwise, or none kept:
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
    enum Verdict : int32_t { kFail = 0, kMap = 1, kKeep = 2, kReuse = 3 };
    int32_t verdict;
    ShmWhere where;  // kKeep: where.id != 0 when the segment is a kept one
};
enum Ack : int32_t { kFailed = 0, kMapped = 1, kNoProc = 2, kKept = 3, kNotKept = 4 };
}  // namespace

// The leader asks its local peers whether they all still hold a segment this process
// kept (one it led, for a node of this size and regions). When every one does, it
// takes it up with its flags and mailboxes cleared, and sets *id; else *id is 0. Not
// OK: a wait failed.
Status NodeChannel::reuse_round(const Layout &l, P2PChannel &wire, int tag, const char *dir, size_t region,
                                const Waiter &w, std::string *why, std::vector<int32_t> *acks, uint64_t *id) {
    *id = 0;
    const int local_size = l.my_local_size(), node = l.my_node();
    Word word{};
    word.verdict = Word::kReuse;
    {
        std::lock_guard<std::mutex> g(kept_mu);
        auto it = find_kept(0, 0, local_size, region, dir);
        if (it == kept.end()) return STRATA_OK;
        word.where.id = it->id;
    }
    std::vector<Msg> sends, recvs;
    for (int i = 1; i < local_size; ++i) {
        sends.push_back({&word, sizeof word, l.rank_at(node, i)});
        recvs.push_back({&(*acks)[size_t(i)], sizeof(int32_t), l.rank_at(node, i)});
    }
    STRATA_CHECK(exchange(wire, tag, sends, recvs, w, why));
    for (int i = 1; i < local_size; ++i)
        if ((*acks)[size_t(i)] != kKept) return STRATA_OK;
    if (!take_kept(&shm_, word.where.id, 0, local_size, region, dir)) return STRATA_OK;
    // Every local rank has freed the communicator that used it (each kept it only
    // then) and waits for this verdict: nobody reads or writes it now.
    shm_.clear_control();
    log(2, "node %d: the shared memory of a freed communicator of the same %d ranks, taken up again", node,
        local_size);
    *id = word.where.id;
    return STRATA_OK;
}

Status NodeChannel::open(const Layout &l, P2PChannel &wire, int tag, const char *dir, size_t region, const Waiter &w,
                         std::string *why) {
    const int local_size = l.my_local_size(), node = l.my_node();
    if (local_size == 1) return shm_.make_private(region);
    const int me = l.my_local();
    if (me != 0) {
        for (;;) {
            Word word{};
            STRATA_CHECK(exchange(wire, tag, {}, {{&word, sizeof word, l.rank_at(node, 0)}}, w, why));
            if (word.verdict == Word::kKeep) {
                if (shm_.shared()) return STRATA_OK;  // the one mapped last round
                // Held since the kKept answer: nothing else takes an entry of this index.
                return take_kept(&shm_, word.where.id, me, local_size, region, dir) ? STRATA_OK : STRATA_ERR_SYS;
            }
            int32_t ack = kFailed;
            if (word.verdict == Word::kReuse) {
                std::lock_guard<std::mutex> g(kept_mu);
                ack = find_kept(word.where.id, me, local_size, region, dir) != kept.end() ? kKept : kNotKept;
            } else if (word.verdict == Word::kMap) {
                const Status st = shm_.attach(dir, word.where, local_size, region);
                ack = st == STRATA_OK ? kMapped : st == STRATA_ERR_UNSUPPORTED ? kNoProc : kFailed;
            } else {
                shm_.reset();
                return STRATA_ERR_SYS;  // the leader (or the peer that failed) said why
            }
            STRATA_CHECK(exchange(wire, tag, {{&ack, sizeof ack, l.rank_at(node, 0)}}, {}, w, why));
        }
    }
    Word word{};
    std::vector<int32_t> acks(size_t(local_size), kMapped);
    uint64_t id = 0;
    STRATA_CHECK(reuse_round(l, wire, tag, dir, region, w, why, &acks, &id));
    if (id != 0) {
        word.verdict = Word::kKeep;
        word.where.id = id;
        std::vector<Msg> sends;
        for (int i = 1; i < local_size; ++i) sends.push_back({&word, sizeof word, l.rank_at(node, i)});
        return exchange(wire, tag, sends, {}, w, why);
    }
    Status status = shm_.create(dir, local_size, region, false, &word.where);
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
    word.where.id = 0;  // not a kept one: the peers mapped it
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

Status NodeChannel::post(uint64_t n, int me, MemDomain &dom, const void *buf, bool empty, const void *out,
                         bool settle) {
    ipc_.begin_call();
    Post *mine = post_of(shm_.mailbox(me), n);
    mine->call = n;
    mine->opened = 0;
    mine->empty = empty;
    mine->posted = empty || ipc_.describe(dom, buf, &mine->ref) == STRATA_OK;
    mine->has_out = out != nullptr;
    if (out != nullptr) mine->posted = mine->posted && ipc_.describe(dom, out, &mine->out) == STRATA_OK;
    // Peers' streams are not ordered after this process's: the buffer must be final
    // (work the application queued on the legacy stream included) before they read it,
    // and so must the output before they write it (a bcast peer posts no input, but its
    // root writes its buffer: a late write of the application's would land on top).
    // settle false: the caller orders them some other way (a flag its stream writes).
    if (settle && mine->posted && (!empty || out != nullptr)) STRATA_CHECK(dom.settle());
    return STRATA_OK;
}

Status NodeChannel::open_peers(uint64_t n, int me, int local_size, MemDomain &dom,
                               std::vector<const char *> *bufs, std::vector<const char *> *outs) {
    // A buffer that could not be posted anywhere on the node: it copies anyway, map nothing.
    bool ok = true;
    for (int i = 0; i < local_size && ok; ++i) {
        const Post *p = post_of(shm_.mailbox(i), n);
        ok = p->call == n && p->posted;
    }
    for (int i = 0; i < local_size && ok; ++i) {
        const Post *p = post_of(shm_.mailbox(i), n);
        if (i == me) continue;
        char *mapped = nullptr;
        if (!p->empty) {  // an output is mapped even so (a peer with no input still receives)
            ok = ipc_.map(dom, i, p->ref, &mapped) == STRATA_OK;
            (*bufs)[size_t(i)] = mapped;
        }
        if (ok && outs != nullptr) {
            // Never a stale output of an earlier call: a peer that posted none (a
            // mismatched call) leaves the node on the slots.
            ok = p->has_out != 0 && ipc_.map(dom, i, p->out, &mapped) == STRATA_OK;
            (*outs)[size_t(i)] = mapped;
        }
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
