/* SPDX-License-Identifier: BSD-3-Clause */
// src/fiber.h - a piece of blocking code run in steps: a stack of its own, left at
// each wait and taken up again by the next progress.
//
// A team's setup is a sequence of exchanges, each waited for in strata's own loop
// (btl/exchange.h). Run in a fiber, each of those waits gives the thread back
// (Fiber::yield from the waiter's idle) instead of spinning, so a nonblocking call can
// start the setup and return, and the team's queue advances it with its calls.
#ifndef STRATA_FIBER_H
#define STRATA_FIBER_H

#include <setjmp.h>
#include <ucontext.h>

#include <cstddef>
#include <functional>
#include <thread>

namespace strata {

class Fiber {
public:
    explicit Fiber(std::function<void()> body);
    ~Fiber();
    Fiber(const Fiber &) = delete;
    Fiber &operator=(const Fiber &) = delete;

    // Runs the body until it yields or ends; true once it has ended. A fiber never runs
    // on two threads at once (its team's lock), and, while pinned, only on the thread
    // that last ran it (false without running).
    bool resume();
    bool ended() const { return ended_; }
    // From inside a body: back to whoever resumed it.
    static void yield();
    // The fiber this thread runs now (nullptr: none).
    static Fiber *current();
    // While one lives, the running fiber stays on its thread: code that keeps
    // thread-local state across a wait (DeviceErrors) runs in it.
    struct Pin {
        Pin();
        ~Pin();
        Fiber *f;
    };

private:
    static void entry(unsigned lo, unsigned hi);
    std::function<void()> body_;
    // Entered once through a ucontext (its own stack), then switched with _setjmp and
    // _longjmp, which leave the signal mask alone: swapcontext makes a system call
    // (sigprocmask) at every switch, twice per step, and a step runs at every progress.
    ucontext_t start_{};
    jmp_buf self_{}, back_{};
    char *stack_ = nullptr;
    size_t stack_bytes_;
    bool ended_ = false, started_ = false;
    int pins_ = 0;
    std::thread::id last_;
};

}  // namespace strata

#endif
