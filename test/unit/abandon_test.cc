// SPDX-License-Identifier: BSD-3-Clause
// test/unit/abandon_test.cc - what a failed run leaves behind (Schedule::abandon).
//
// When a step fails, the engine gives up the rest of the run and returns the error.
// A receive is cancelled at once. A send may still be read from after that: a peer
// that matched it pulls the data later (a rendezvous), and the caller frees the
// buffer as soon as the call returns. So the run must not return before such a send
// is complete, and must not wait forever for a send nobody will match.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "engine.h"
#include "mem/domain.h"

namespace {

using strata::P2PChannel;
using strata::Schedule;
using strata::Status;

// A channel whose sends complete on the tests_to_finish-th test (never when < 0), as a
// rendezvous completes once the receiver pulls the data; receives never complete.
class SlowChannel : public P2PChannel {
public:
    explicit SlowChannel(int tests_to_finish) : tests_to_finish_(tests_to_finish) {}
    Status isend(const void *, size_t, int, int, void **req) override {
        *req = &send_;
        return STRATA_OK;
    }
    Status irecv(void *, size_t, int, int, void **req) override {
        *req = &recv_;
        return STRATA_OK;
    }
    Status test(void *req, bool *done) override {
        *done = req == &send_ && tests_to_finish_ >= 0 && ++send_tests_ >= tests_to_finish_;
        if (*done) sends_completed_++;
        return STRATA_OK;
    }
    void cancel(void *req, bool recv) override {
        if (req == &send_ && !recv) sends_given_up_++;
        if (req == &recv_ && recv) recvs_cancelled_++;
    }
    int sends_completed_ = 0, sends_given_up_ = 0, recvs_cancelled_ = 0;

private:
    int tests_to_finish_, send_tests_ = 0;
    char send_ = 0, recv_ = 0;
};

// A send and a receive start, then a step fails: the run ends with its error.
Status run_failing(SlowChannel &ch, double *seconds) {
    static char out[64], in[64];
    Schedule s;
    s.send(out, sizeof out, 1, 7);
    s.recv(in, sizeof in, 1, 7);
    int polls = 0;
    s.poll([&](bool *done, bool *) -> Status {
        *done = false;
        return ++polls < 3 ? STRATA_OK : STRATA_ERR_COMM;  // the send has started, not completed
    });
    const auto t0 = std::chrono::steady_clock::now();
    const Status st = s.run(ch);
    *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return st;
}

TEST(Abandon, StartedSendCompletesBeforeTheRunReturns) {
    SlowChannel ch(50);  // the peer pulls the data a little after the failure
    double seconds = 0;
    EXPECT_EQ(run_failing(ch, &seconds), STRATA_ERR_COMM);
    EXPECT_EQ(ch.sends_completed_, 1) << "the run returned while its send could still read the buffer";
    EXPECT_EQ(ch.sends_given_up_, 0);
    EXPECT_EQ(ch.recvs_cancelled_, 1);
    (void)seconds;  // no bound on time: a loaded machine may pause the thread; the counts say it
}

TEST(Abandon, UnmatchedSendIsLeftToTheTransportAfterABoundedWait) {
    SlowChannel ch(-1);  // the receiver gave up before it matched the send
    double seconds = 0;
    EXPECT_EQ(run_failing(ch, &seconds), STRATA_ERR_COMM);
    EXPECT_EQ(ch.sends_completed_, 0);
    EXPECT_EQ(ch.sends_given_up_, 1);
    EXPECT_EQ(ch.recvs_cancelled_, 1);
    EXPECT_GT(seconds, 0.5);  // it waited (kAbandonSendSeconds is 1 s) ...
    EXPECT_LT(seconds, 10.0);  // ... and not forever
}

}  // namespace
