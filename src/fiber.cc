// SPDX-License-Identifier: BSD-3-Clause
// src/fiber.cc - blocking code run in steps (see fiber.h).
//
// A fiber and the thread that resumes it switch with _setjmp/_longjmp, each jumping to
// a frame that is still live (resume() waits on the thread's stack, yield() on the
// fiber's). _FORTIFY_SOURCE's checked longjmp takes a jump to another stack for
// stack smashing and aborts: it is off in this file, before any header reads it.
#undef _FORTIFY_SOURCE
#include "fiber.h"

#include <sys/mman.h>

#include <cstdint>
#include <mutex>
#include <utility>

namespace strata {

namespace {
// Setup runs the driver's calls (GPU regions, kernels) and Open MPI's: a generous
// stack, of which only the pages touched are ever backed.
constexpr size_t kStackBytes = size_t(4) << 20;
constexpr size_t kGuardBytes = 64 << 10;  // a whole page on every page size Linux uses
thread_local Fiber *tl_current = nullptr;
// One stack of a fiber that ended, kept for the next fiber (a queued call's agreement
// makes one per call): its mapping and guard page are made once.
std::mutex g_spare_mu;
char *g_spare = nullptr;
}  // namespace

Fiber::Fiber(std::function<void()> body) : body_(std::move(body)), stack_bytes_(kStackBytes) {
    {
        std::lock_guard<std::mutex> g(g_spare_mu);
        std::swap(stack_, g_spare);
    }
    if (stack_ != nullptr) return;
    void *p = mmap(nullptr, stack_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    stack_ = p == MAP_FAILED ? nullptr : static_cast<char *>(p);
    // The stack grows down: its lowest page faults, so an overflow crashes here
    // instead of writing over whatever lies below.
    if (stack_ != nullptr && mprotect(stack_, kGuardBytes, PROT_NONE) != 0) {
        munmap(stack_, stack_bytes_);
        stack_ = nullptr;  // resume() then runs the body to its end in one go
    }
}

Fiber::~Fiber() {
    if (stack_ == nullptr) return;
    // A fiber left in the middle may have lent its stack to a pending request: not reused.
    if (ended_ || !started_) {
        std::lock_guard<std::mutex> g(g_spare_mu);
        if (g_spare == nullptr) {
            g_spare = stack_;
            return;
        }
    }
    munmap(stack_, stack_bytes_);
}

void Fiber::entry(unsigned lo, unsigned hi) {
    Fiber *f = reinterpret_cast<Fiber *>(uintptr_t(lo) | (uintptr_t(hi) << 32));
    f->body_();
    f->ended_ = true;
    _longjmp(f->back_, 1);  // never returns: this stack is not entered again
}

bool Fiber::resume() {
    if (ended_) return true;
    if (stack_ == nullptr) {  // no stack: the body runs to its end here, waits and all
        ended_ = true;
        body_();
        return true;
    }
    // Not from inside itself (its own waits may progress the team that runs it).
    if (tl_current == this || (pins_ > 0 && last_ != std::this_thread::get_id())) return false;
    last_ = std::this_thread::get_id();
    Fiber *const outer = tl_current;
    tl_current = this;
    if (_setjmp(back_) == 0) {
        if (started_) _longjmp(self_, 1);
        started_ = true;
        getcontext(&start_);
        start_.uc_stack.ss_sp = stack_;
        start_.uc_stack.ss_size = stack_bytes_;
        start_.uc_link = nullptr;  // entry() never returns
        const uintptr_t me = reinterpret_cast<uintptr_t>(this);
        makecontext(&start_, reinterpret_cast<void (*)()>(&Fiber::entry), 2, unsigned(me & 0xffffffffu),
                    unsigned(me >> 32));
        setcontext(&start_);
    }
    // Back from the fiber: it yielded, or its body ended.
    tl_current = outer;
    return ended_;
}

void Fiber::yield() {
    Fiber *f = tl_current;
    if (f == nullptr || f->stack_ == nullptr) return;
    if (_setjmp(f->self_) == 0) _longjmp(f->back_, 1);
}

Fiber *Fiber::current() { return tl_current; }

Fiber::Pin::Pin() : f(tl_current) {
    if (f) ++f->pins_;
}

Fiber::Pin::~Pin() {
    if (f) --f->pins_;
}

}  // namespace strata
