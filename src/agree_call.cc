// SPDX-License-Identifier: BSD-3-Clause
// src/agree_call.cc - coll_strata_check_args for calls that complete later (see agree_call.h).
#include "agree_call.h"

#include <memory>
#include <string>

#include "fiber.h"
#include "runner.h"

namespace strata {

namespace {
// One call's agreement in steps: agree_call (runner.h) in a fiber, resumed each time the
// team's queue looks at its head (CallQueue::decide_head), until it ends.
class HeadAgreement {
public:
    HeadAgreement(Team &team, Call &call, const CallSignature &sig) : team_(team), call_(call), sig_(sig) {}

    Status step(bool *done) {
        // Asked here, at the head of the queue: a call queued before setup did not know
        // yet whether its team spans nodes (Team::agrees_calls).
        if (passed_ || (!fiber_ && !team_.agrees_calls())) {
            *done = true;
            return STRATA_OK;
        }
        if (!fiber_) {
            fiber_.reset(new Fiber([this] {
                const CallInfo &i = call_.info;
                const bool vote = votes_host(team_, sig_.bytes, false);
                bool all_host = false;
                outcome_ = agree_call(team_, sig_.coll, sig_.size_sig, sig_.meta_sig, sig_.pairs, sig_.all_pairs,
                                      i.local, i.why, vote && sig_.host_here, &all_host);
                call_.info.all_host = vote && all_host;
            }));
        }
        *done = fiber_->resume();
        if (!*done) return STRATA_OK;
        fiber_.reset();
        passed_ = outcome_ == STRATA_OK && call_.info.mode == CallInfo::Persistent;
        // A peer had failed an earlier call and hands this one back (agree_call's
        // STRATA_FALLBACK; this rank knows it now, Team::check_broken): the call then
        // fails at its start as any queued call of a broken team does.
        return outcome_ == STRATA_FALLBACK ? STRATA_OK : outcome_;
    }

private:
    Team &team_;
    Call &call_;
    const CallSignature sig_;
    std::unique_ptr<Fiber> fiber_;
    Status outcome_ = STRATA_OK;
    bool passed_ = false;  // persistent: agreed at an earlier start
};
}  // namespace

void agree_at_head(Team &team, Call &call, const CallSignature &sig, bool stack_call) {
    if (stack_call || !team.may_agree_calls()) {
        call.gate = nullptr;
        return;
    }
    auto a = std::make_shared<HeadAgreement>(team, call, sig);
    call.gate = [a](bool *done) { return a->step(done); };
}

}  // namespace strata
