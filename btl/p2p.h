/* SPDX-License-Identifier: BSD-3-Clause */
// btl/p2p.h - point-to-point channels: how a message goes from one rank to another.
//
// The engine sends and receives through a P2PChannel and knows nothing else of it.
// Today there are two:
//  - TransportChannel: the glue's callbacks (strata_transport_t; in Open MPI, the PML
//    on the communicator, coll_strata_p2p.c);
//  - BounceChannel: device memory over a channel that cannot touch it. Each message
//    goes through a page-locked host buffer: the device-to-host copy runs before
//    the inner send starts, the host-to-device copy after the inner receive ends.
//    Messages are independent requests, so one message's copy overlaps another's
//    transfer (a pipeline's segments are separate messages).
//    In a run chained on a lane (src/engine.h) a receive's copy goes on the lane
//    instead (test_recv_queued): no event of its own to poll; and so does a send's
//    (isend_queued), behind the kernels that wrote its buffer, so that the host need
//    not learn that they are done before the copy starts.
// Channels of other kinds (UCX: btl/ucx_channel.cc) implement this interface and are
// registered in btl/channels.h, which the team asks which one its schedules run over.
#ifndef STRATA_BTL_P2P_H
#define STRATA_BTL_P2P_H

#include <cstddef>
#include <vector>

#include "mem/domain.h"
#include "strata.h"

namespace strata {

class P2PChannel {
public:
    virtual ~P2PChannel() = default;
    // Start moving bytes at buf to / from peer with tag; *req names the transfer until
    // test() says it is done.
    virtual Status isend(const void *buf, size_t bytes, int peer, int tag, void **req) = 0;
    virtual Status irecv(void *buf, size_t bytes, int peer, int tag, void **req) = 0;
    // *done once the transfer is complete (req is then released). An error releases
    // req too: STRATA_ERR_TRUNCATE when the message was larger than the receive.
    virtual Status test(void *req, bool *done) = 0;
    // test() of a receive that must get exactly `expected` bytes: a shorter message (a
    // peer that passed a smaller count) is STRATA_ERR_TRUNCATE, as a longer one is.
    virtual Status test_recv(void *req, bool *done, size_t expected) {
        (void)expected;
        return test(req, done);
    }
    // A run chained on a lane (src/engine.h): test_recv(), except that where the data
    // still needs a copy of the channel's own to reach buf (the bounce channel's
    // host-to-device copy), that copy may be queued on lane and the receive reported
    // done at once with *queued set: the lane's later work follows it in stream order.
    // req then stays the channel's until finish_queued(req), once the lane has passed
    // the copy (the run saw the batch queued after it complete, or drained the lane).
    virtual Status test_recv_queued(void *req, bool *done, size_t expected, MemDomain &lane, bool *queued) {
        (void)lane;
        *queued = false;
        return test_recv(req, done, expected);
    }
    virtual void finish_queued(void *req) { (void)req; }
    // Whether isend_queued() can put a send's own copy (the bounce channel's
    // device-to-host copy) on a run's lane.
    virtual bool queues_sends() const { return false; }
    // A run chained on a lane, where queues_sends(): isend(), with the copy queued on
    // lane behind what the run queued there before (the work that wrote buf may not
    // have run yet). The transfer starts at the first test() of req, which the caller
    // makes only once the lane has passed the copy (the batch queued after it
    // completed, or the lane drained); cancel() is allowed from then on too.
    virtual Status isend_queued(const void *buf, size_t bytes, int peer, int tag, MemDomain &lane, void **req) {
        (void)buf, (void)bytes, (void)peer, (void)tag, (void)lane, (void)req;
        return STRATA_ERR_INTERNAL;
    }
    // Gives up a transfer test() has not completed: nothing of it touches memory after.
    virtual void cancel(void *req, bool recv) = 0;
    // Moves the transfers on. test() only looks (a transport may leave progress to
    // this); whoever waits on test() calls this between its rounds of tests.
    virtual void progress() {}
    // Whether isend/irecv take GPU memory (else a device team wraps it in the bounce channel).
    virtual bool device_capable() const { return false; }
    // For logs ("point-to-point over ucx").
    virtual const char *name() const { return "a channel"; }
};

class TransportChannel : public P2PChannel {
public:
    explicit TransportChannel(const strata_transport_t &tp) : tp_(tp) {}
    Status isend(const void *buf, size_t bytes, int peer, int tag, void **req) override;
    Status irecv(void *buf, size_t bytes, int peer, int tag, void **req) override;
    Status test(void *req, bool *done) override;
    Status test_recv(void *req, bool *done, size_t expected) override;
    void cancel(void *req, bool recv) override;
    void progress() override {
        if (tp_.progress) tp_.progress(tp_.ctx);
    }
    bool device_capable() const override { return tp_.device_capable != 0; }
    const char *name() const override { return "transport"; }

private:
    strata_transport_t tp_;
};

class BounceChannel : public P2PChannel {
public:
    // dom copies between device memory and its page-locked host memory.
    BounceChannel(P2PChannel &inner, MemDomain &dom) : inner_(inner), dom_(dom) {}
    ~BounceChannel() override;
    BounceChannel(const BounceChannel &) = delete;
    BounceChannel &operator=(const BounceChannel &) = delete;
    Status isend(const void *buf, size_t bytes, int peer, int tag, void **req) override;
    Status irecv(void *buf, size_t bytes, int peer, int tag, void **req) override;
    Status test(void *req, bool *done) override;
    Status test_recv_queued(void *req, bool *done, size_t expected, MemDomain &lane, bool *queued) override;
    void finish_queued(void *req) override;
    bool queues_sends() const override { return true; }
    Status isend_queued(const void *buf, size_t bytes, int peer, int tag, MemDomain &lane, void **req) override;
    void cancel(void *req, bool recv) override;
    void progress() override { inner_.progress(); }
    const char *name() const override { return "bounce"; }

private:
    struct Buf {
        char *ptr;
        size_t bytes;
    };
    // The copies of sends issued one after another share one event, recorded behind
    // the last of them (the stream runs them in order): a group. A send's first test
    // leaves its group open for the sends issued in the same pass; its next test
    // records the event, if no send of the group has, and polls it. So a pass's sends
    // cost one host wait, not one each.
    struct Group {
        Ticket end;
        bool marked, done;
        Status failed;  // the event's record or poll failed: every send of the group fails
        int refs;       // its sends not past their copy
    };
    struct Req {
        bool recv;
        // Queued: its copy is on a run's lane (a receive's after its transfer, a send's
        // before it).
        enum class Phase { Copy, Transfer, Queued } phase;
        void *user;     // the device buffer
        size_t bytes;
        int peer, tag;
        Buf bounce;
        Ticket ticket;  // a receive's copy (Phase::Copy)
        void *inner;    // the inner request (Phase::Transfer)
        Group *group;   // a send's copy (Phase::Copy)
        bool tested;    // a send's copy tested once
    };
    Status take(size_t bytes, Buf *b);  // a host buffer of at least bytes, kept for reuse
    void give(const Buf &b) { free_.push_back(b); }
    Req *new_req();
    void drop(Req *r);
    Group *join_group();
    void leave(Group *g);
    Status poll_group(Group *g, bool *done);
    Status send_copy(const void *buf, size_t bytes, int peer, int tag, MemDomain &on, Req::Phase phase, void **req);
    Status start_transfer(Req *r);

    P2PChannel &inner_;
    MemDomain &dom_;
    std::vector<Buf> free_;    // host buffers not in use
    std::vector<Req *> spare_;  // request records not in use
    Group *open_ = nullptr;     // the group whose event is not recorded yet
    std::vector<Group *> spare_groups_;
};

}  // namespace strata

#endif
