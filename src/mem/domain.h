/* SPDX-License-Identifier: BSD-3-Clause */
// src/mem/domain.h - the one interface for memory work: copy, reduce, scratch.
//
// Algorithms never touch memory except through a domain. The host domain runs
// everything inline; a device domain queues work on a stream and hands back a
// ticket the progress engine polls. Both implement the same contract:
//   copy/reduce may complete before returning (ticket->pending == nullptr) or
//   later (poll until done); operands must stay valid until then.
#ifndef STRATA_MEM_DOMAIN_H
#define STRATA_MEM_DOMAIN_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common.h"

namespace strata {

enum class MemKind { Host, Device, Managed, PinnedHost };

// While one lives on a thread, the driver errors of domain calls made on that thread
// are kept (text(): the first one) and logged at level 3 instead of 0, for a caller
// that says the failure in a line of its own: team setup ends in one line, "GPU setup
// failed on rank R (what: the driver's error)", not in that line and the driver's.
class DeviceErrors {
public:
    DeviceErrors() : prev_(current()) { current() = this; }
    ~DeviceErrors() { current() = prev_; }
    DeviceErrors(const DeviceErrors &) = delete;
    DeviceErrors &operator=(const DeviceErrors &) = delete;
    const std::string &text() const { return text_; }
    // A domain's failed driver call (its message): true when one of these keeps it.
    static bool keep(const std::string &error) {
        DeviceErrors *e = current();
        if (e == nullptr) return false;
        if (e->text_.empty()) e->text_ = error;
        return true;
    }

private:
    static DeviceErrors *&current() {
        static thread_local DeviceErrors *c = nullptr;
        return c;
    }
    DeviceErrors *prev_;
    std::string text_;
};

struct Ticket {
    void *pending = nullptr;  // domain-specific handle (an event); nullptr = complete
};

class MemDomain;
// A domain's stream of its own (MemDomain::open_lane), released with the lane.
using LanePtr = std::unique_ptr<MemDomain>;

// reduce: dst[i] = op(srcs[0][i], srcs[1][i], ..., srcs[nsrc-1][i]) in that order
// for i < count. dst may be one of the sources; it must not partially overlap any.
// An exported device allocation, as CUDA IPC hands it to another process.
struct IpcHandle {
    char bytes[64];
};

// A buffer inside a device allocation, as another process of the node maps it: the
// allocation's handle (ipc_export of base), where the allocation starts in the exporting process, a
// process-unique id of the allocation (a freed and re-allocated address gets a new
// one, so the pair never names two allocations), and the buffer's offset in it.
struct IpcRef {
    IpcHandle handle;
    uint64_t base;
    uint64_t buffer_id;
    uint64_t offset;
    uint64_t bytes;  // the allocation's size (0: not known), which its mapping holds
};

using ReduceFn = void (*)(void *dst, const void *const *srcs, int nsrc, size_t count);

class MemDomain {
public:
    virtual ~MemDomain() = default;
    virtual const char *name() const = 0;
    // The GPU ordinal a device domain works on; -1 for the host domain.
    virtual int device() const { return -1; }
    // Loads what the domain needs before its first copy or reduction (a GPU's
    // reduction kernels), so that a failure shows at setup, where ranks agree on it.
    virtual Status prepare() { return STRATA_OK; }
    // t == nullptr (device domains): queued with no ticket; its completion is learnt
    // from a later mark() (work chained on the stream, engine.h).
    virtual Status copy(void *dst, const void *src, size_t bytes, Ticket *t) = 0;
    virtual Status reduce(void *dst, const void *const *srcs, int nsrc, size_t count,
                          strata_dtype_t dtype, strata_op_t op, Ticket *t) = 0;
    // The fused node kernel: r[i] = op over srcs (as reduce) stored into every one of
    // dsts[0 .. ndst-1] (this rank's output and node peers' outputs, mapped through
    // IPC), reading each source once, so a node's reduced slice costs one launch and
    // count x (nsrc + ndst) elements moved. A destination may be one of the sources;
    // destinations must not overlap each other. With one source, a copy to many.
    virtual Status reduce_multi(void *const *dsts, int ndst, const void *const *srcs, int nsrc, size_t count,
                                strata_dtype_t dtype, strata_op_t op, Ticket *t) {
        (void)dsts, (void)ndst, (void)srcs, (void)nsrc, (void)count, (void)dtype, (void)op;
        t->pending = nullptr;
        return STRATA_ERR_UNSUPPORTED;
    }
    virtual Status poll(Ticket *t, bool *done) = 0;
    // Returns once the work queued before it on this domain's stream, and so (a GPU's
    // stream being a blocking one) on the application's legacy default stream, has
    // completed: before other processes read this rank's buffers in place, since
    // their streams are not ordered after this process's.
    virtual Status settle() { return STRATA_OK; }
    virtual Status alloc(size_t bytes, void **p) = 0;
    virtual void release(void *p) = 0;
    // Host memory this domain copies to and from fastest (page-locked for a GPU),
    // for staging a device buffer through the host; released by release_host.
    virtual Status alloc_host(size_t bytes, void **p) = 0;
    virtual void release_host(void *p) = 0;
    // Sharing memory from alloc() with other processes of the node (CUDA IPC): the
    // host domain has none (its memory is shared through btl/shm.h instead).
    virtual Status ipc_export(void *base, IpcHandle *h) {
        (void)base, (void)h;
        return STRATA_ERR_UNSUPPORTED;
    }
    virtual Status ipc_open(const IpcHandle &h, void **p) {
        (void)h, (void)p;
        return STRATA_ERR_UNSUPPORTED;
    }
    virtual void ipc_close(void *p) { (void)p; }

    // Stream memory operations: node-wide flags ordered by the GPU's stream itself, so
    // that a call's device work and its flag rounds are queued once (engine.h, "work
    // chained on the stream"). stream_flags(): whether the GPU can (decided once, at
    // the domain's creation: the driver's entry points and the device attribute).
    virtual bool stream_flags() const { return false; }
    // Makes [p, p + bytes) (host memory, page-aligned) reachable by the GPU's stream
    // operations (cuMemHostRegister, DEVICEMAP); unregister_flags(p) undoes it.
    virtual Status register_flags(void *p, size_t bytes) {
        (void)p, (void)bytes;
        return STRATA_ERR_UNSUPPORTED;
    }
    virtual void unregister_flags(void *p) { (void)p; }
    // Queued on the stream: signal_flag stores value into *flag once the work queued
    // before it has completed; wait_flag holds the work queued after it until *flag has
    // reached value (flag_reached, engine.h: serial numbers). flag lies in memory
    // given to register_flags.
    virtual Status signal_flag(uint64_t *flag, uint64_t value) {
        (void)flag, (void)value;
        return STRATA_ERR_UNSUPPORTED;
    }
    virtual Status wait_flag(const uint64_t *flag, uint64_t value) {
        (void)flag, (void)value;
        return STRATA_ERR_UNSUPPORTED;
    }
    // A ticket that completes once everything queued so far on the stream has.
    virtual Status mark(Ticket *t) {
        t->pending = nullptr;
        return STRATA_OK;
    }
    // A domain of the same GPU (same context, memory and kernels) with a stream of its
    // own: work that may wait on a flag holds up only what is queued behind it on its
    // own lane, never another team's work. The lane outlives nothing it queued:
    // releasing it waits for its stream.
    virtual Status open_lane(LanePtr *lane) {
        lane->reset();
        return STRATA_ERR_UNSUPPORTED;
    }
    // A lane's stream is a non-blocking one: the legacy default stream does not wait
    // for it (an application's cudaMemcpy must not wait for a flag of its peers, who may
    // wait for this rank elsewhere). follow_application() orders what is queued next on
    // the lane after what the application queued on the legacy default stream before
    // (an event recorded there and waited for by the lane), as a blocking stream would.
    virtual Status follow_application() { return STRATA_OK; }
    // Where p lies in its device allocation (ref's base, buffer_id and offset; not the
    // handle, which ipc_export of base gives). Cheap: one pointer query. Unsupported
    // where p's memory cannot be shared through CUDA IPC (host, managed, or memory
    // from the virtual memory or stream-ordered allocators).
    virtual Status ipc_describe(const void *p, IpcRef *ref) {
        (void)p, (void)ref;
        return STRATA_ERR_UNSUPPORTED;
    }
};

// Waits for a ticket (yielding the CPU between polls).
Status wait_ticket(MemDomain &dom, Ticket *t);

// The host domain: a process-wide singleton.
MemDomain &host_domain();

// The host kernel for (dtype, op), or nullptr where MPI defines no such reduction.
ReduceFn host_reduce_fn(strata_dtype_t dtype, strata_op_t op);

}  // namespace strata

#endif
