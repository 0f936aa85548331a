/* SPDX-License-Identifier: BSD-3-Clause */
// test/unit/harness.h - ranks as threads in one process.
//
// A ThreadJob gives each thread-rank a strata_transport_t backed by an
// in-process mailbox (eager sends, FIFO matching per source and tag), so the core's teams, schedules and shared-memory
// channel run exactly as under MPI, without MPI.
#ifndef STRATA_TEST_HARNESS_H
#define STRATA_TEST_HARNESS_H

#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "mem/classify.h"
#include "strata.h"
#include "topo/cuda_api.h"

namespace strata_test {

class ThreadJob {
public:
    explicit ThreadJob(int size) : size_(size), boxes_(size), ctx_(size) {
        for (int r = 0; r < size; ++r) ctx_[r] = {this, r};
    }

    int size() const { return size_; }

    strata_transport_t transport(int rank) {
        strata_transport_t t{};
        t.ctx = &ctx_[rank];
        t.isend = &isend;
        t.irecv = &irecv;
        t.test = &test;
        t.cancel = &cancel;
        return t;
    }

    // Runs fn(rank) on size threads and waits for all of them.
    void run(const std::function<void(int)> &fn) {
        std::vector<std::thread> threads;
        for (int r = 0; r < size_; ++r) threads.emplace_back(fn, r);
        for (auto &t : threads) t.join();
    }

    // Messages sent but never received: a schedule bug if non-zero after a run.
    size_t unreceived() {
        std::lock_guard<std::mutex> g(mu_);
        size_t n = 0;
        for (auto &b : boxes_) n += b.size();
        return n;
    }

private:
    struct Ctx {
        ThreadJob *job;
        int rank;
    };
    struct Msg {
        int src, tag;
        std::vector<char> data;
    };
    struct Req {
        bool is_recv;
        void *buf;
        size_t bytes;
        int peer, tag;
        bool size_mismatch;
    };

    static int isend(void *ctx, const void *buf, size_t bytes, int peer, int tag, void **req) {
        Ctx *c = static_cast<Ctx *>(ctx);
        const char *p = static_cast<const char *>(buf);
        {
            std::lock_guard<std::mutex> g(c->job->mu_);
            c->job->boxes_[peer].push_back(Msg{c->rank, tag, std::vector<char>(p, p + bytes)});
        }
        *req = new Req{false, nullptr, bytes, peer, tag, false};
        return 0;
    }
    static int irecv(void *, void *buf, size_t bytes, int peer, int tag, void **req) {
        *req = new Req{true, buf, bytes, peer, tag, false};
        return 0;
    }
    static int test(void *ctx, void *req_v, int *done, size_t *bytes) {
        Ctx *c = static_cast<Ctx *>(ctx);
        Req *req = static_cast<Req *>(req_v);
        *done = 0;
        if (!req->is_recv) {
            *done = 1;
        } else {
            std::lock_guard<std::mutex> g(c->job->mu_);
            auto &box = c->job->boxes_[c->rank];
            for (auto it = box.begin(); it != box.end(); ++it) {
                if ((it->src != req->peer && req->peer != STRATA_ANY_SOURCE) || it->tag != req->tag) continue;
                if (it->data.size() != req->bytes) {
                    delete req;
                    return -1;  // a schedule bug: sizes must match exactly
                }
                memcpy(req->buf, it->data.data(), req->bytes);
                box.erase(it);
                *done = 1;
                if (bytes) *bytes = req->bytes;
                break;
            }
        }
        if (*done) delete req;
        return 0;
    }
    // Sends are eager here; a receive given up is simply forgotten.
    static void cancel(void *, void *req, int) { delete static_cast<Req *>(req); }
    int size_;
    std::mutex mu_;
    std::vector<std::deque<Msg>> boxes_;
    std::vector<Ctx> ctx_;
};

// A transport whose calls go to W's static isend, irecv, test and cancel with w as
// their ctx (a test's wrapper around a rank's transport, which
// it keeps and forwards to); everything else is base's.
template <class W>
strata_transport_t forwarding_transport(W *w, strata_transport_t base) {
    base.ctx = w;
    base.isend = &W::isend;
    base.irecv = &W::irecv;
    base.test = &W::test;
    base.cancel = &W::cancel;
    return base;
}

// The settings unit tests start from: the defaults, with a team of host ranks that
// runs and sets up at its first call, whatever the defaults users get.
inline strata_config_t host_test_config() {
    strata_config_t cfg;
    strata_config_defaults(&cfg);
    cfg.host_buffers = 1;
    cfg.lazy_calls = 0;
    cfg.host_handback = 0;  // strata's algorithms at every size (the built-in host rules hand small calls back)
    return cfg;
}

// Makes GPU 0's primary context current on this thread, as cudaSetDevice(0) would, so
// that the calling rank has a GPU. false with *why (no driver, or the context fails).
inline bool make_gpu0_current(std::string *why) {
    namespace cu = strata::topo::cu;
    const cu::Driver *d = strata::cuda_driver(why);
    if (d == nullptr) return false;
    cu::CUdevice dev = 0;
    cu::CUcontext ctx = nullptr;
    if (d->DeviceGet(&dev, 0) != cu::SUCCESS || d->DevicePrimaryCtxRetain(&ctx, dev) != cu::SUCCESS ||
        d->CtxSetCurrent(ctx) != cu::SUCCESS) {
        *why = "GPU 0's primary context cannot be made current";
        return false;
    }
    return true;
}

// A scratch file holding text, removed when it goes.
struct TempFile {
    std::string path;
    explicit TempFile(const std::string &text) {
        char tmpl[] = "/tmp/strata_test_XXXXXX";
        const int fd = mkstemp(tmpl);
        path = tmpl;
        if (fd >= 0) {
            ok = write(fd, text.data(), text.size()) == ssize_t(text.size());
            close(fd);
        }
    }
    ~TempFile() { unlink(path.c_str()); }
    bool ok = false;  // the file holds the text
};

}  // namespace strata_test

#endif
