// SPDX-License-Identifier: BSD-3-Clause
// btl/oob.cc - a team's failure notices (oob.h).
#include "btl/oob.h"

namespace strata {

bool FailureNotices::listen() {
    if (inbox_req_ != nullptr || tp_.cancel == nullptr) return true;
    if (tp_.irecv(tp_.ctx, &inbox_, sizeof inbox_, STRATA_ANY_SOURCE, tag_, &inbox_req_) == 0) return true;
    inbox_req_ = nullptr;
    return false;
}

void FailureNotices::tell(uint64_t call, int rank, int peer) {
    outgoing_ = Notice{call, rank};
    void *req = nullptr;
    if (tp_.isend(tp_.ctx, &outgoing_, sizeof outgoing_, peer, tag_, &req) == 0) out_.push_back(req);
}

bool FailureNotices::arrived(uint64_t *call, int *rank) {
    if (inbox_req_ == nullptr) return false;
    int done = 0;
    if (tp_.test(tp_.ctx, inbox_req_, &done, nullptr) != 0) {
        inbox_req_ = nullptr;
        return false;
    }
    if (!done) return false;
    inbox_req_ = nullptr;
    *call = inbox_.call;
    *rank = int(inbox_.rank);
    return true;
}

void FailureNotices::close() {
    if (inbox_req_ != nullptr && tp_.cancel) tp_.cancel(tp_.ctx, inbox_req_, 1);
    inbox_req_ = nullptr;
    for (void *r : out_)
        if (tp_.cancel) tp_.cancel(tp_.ctx, r, 0);
    out_.clear();
}

}  // namespace strata
