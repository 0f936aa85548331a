/* SPDX-License-Identifier: BSD-3-Clause */
// src/copies.h - copies of a rank's buffers in the memory its team's schedules use.
//
// A team's schedules run either in host memory or, on a device team, in GPU memory
// (team.h). A rank whose buffers of a call are of the other kind copies the call's
// inputs into memory of the team's kind, runs on those copies the same schedule
// every other rank runs, and copies its outputs back before the call returns: GPU
// buffers through page-locked host memory on a host team, host buffers through GPU
// memory on a device team. Only how this rank moves its own bytes changes: whether
// strata runs and which algorithm do not depend on where any rank's buffers live
// (every decision is one all ranks agree on), so a call where some ranks pass device and others host
// buffers works.
#ifndef STRATA_COPIES_H
#define STRATA_COPIES_H

#include <vector>

#include "args.h"
#include "collectives.h"
#include "engine.h"
#include "mem/domain.h"

namespace strata {

// What `coll` reads from a.sendbuf (*in) and writes to a.recvbuf (*out) on rank
// `rank` of `size`, sorted and with touching or overlapping blocks merged; empty blocks left out.
void call_blocks(strata_coll_t coll, const CollArgs &a, int rank, int size, std::vector<Block> *in,
                 std::vector<Block> *out);

class BufferCopies {
public:
    BufferCopies() = default;
    ~BufferCopies();
    BufferCopies(const BufferCopies &) = delete;
    BufferCopies &operator=(const BufferCopies &) = delete;

    // gpu: the team's GPU domain on a device team, else nullptr. Where a's buffers
    // are not of the team's kind, reserves copies of them and points *a at the
    // copies; nothing is copied yet. active() says whether anything is copied.
    Status enter(strata_coll_t coll, int rank, int size, MemDomain *gpu, CollArgs *a);
    // Steps of s that copy the inputs over (their join; kNoStep when there is none).
    StepId copy_in(Schedule &s);
    // Steps of s that copy the outputs back into the caller's buffers after deps (their
    // join; kNoStep when there is none). Once they complete the result is visible to
    // host code and to any later CUDA work.
    StepId copy_out(Schedule &s, const Deps &deps);
    bool active() const { return active_; }
    // How enter() treats ptr on a team with GPU domain gpu (nullptr: a host team): which
    // domain copies it and into which memory, as one number (0: not copied).
    static uint64_t plan_key(const void *ptr, MemDomain *gpu);

private:
    // Grow-only memory from one domain: its host memory (page-locked for a GPU)
    // or its own (GPU memory).
    struct StageBuf {
        MemDomain *dom = nullptr;
        bool host = true;
        char *ptr = nullptr;
        size_t bytes = 0;
        Status reserve(MemDomain &d, bool host_memory, size_t n);
        void drop();
    };
    // Whether ptr must be copied for this team; if so *dom copies it, and *host
    // says whether the copy is in host memory.
    static Status plan(const void *ptr, MemDomain *gpu, MemDomain **dom, bool *host);
    // Steps dst + dst_shift + b.offset <- src + b.offset for every block; their join.
    static StepId copy_blocks(Schedule &s, MemDomain &dom, char *dst, const char *src,
                              const std::vector<Block> &blocks, size_t dst_shift, const Deps &deps);

    StageBuf send_, recv_;
    bool active_ = false;
    MemDomain *in_dom_ = nullptr;   // set when the inputs are copied over
    const char *in_user_ = nullptr;
    char *in_copy_ = nullptr;
    size_t in_shift_ = 0;
    MemDomain *out_dom_ = nullptr;  // set when the outputs go back to the caller's buffer
    char *out_user_ = nullptr, *out_copy_ = nullptr;
    std::vector<Block> in_, out_;
};

}  // namespace strata

// For the glue's fallback staging (C): page-locked host memory of at least bytes to
// stage device_buf (device memory) through, reused between calls; NULL when
// device_buf is not device memory or none could be had (then stage through malloc).
// Give it back with strata_host_copy_put (declared for the glue in src/strata_device.h).
#include "strata_device.h"

#endif
