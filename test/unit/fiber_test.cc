// SPDX-License-Identifier: BSD-3-Clause
// test/unit/fiber_test.cc - a body run in steps (src/fiber.h): where each resume takes
// it up, nesting, another thread, and a switch that makes no system call.
#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <thread>
#include <vector>

#include "fiber.h"

using strata::Fiber;

namespace {
// Locals of the body live on the fiber's stack across yields.
TEST(Fiber, EachResumeRunsOneStepAndTheBodysLocalsSurvive) {
    std::vector<int> seen;
    Fiber f([&] {
        std::string mine = "kept";
        for (int i = 0; i < 3; ++i) {
            seen.push_back(i);
            EXPECT_EQ(Fiber::current() != nullptr, true);
            Fiber::yield();
            EXPECT_EQ(mine, "kept");
        }
    });
    EXPECT_EQ(Fiber::current(), nullptr);
    for (int i = 0; i < 3; ++i) {
        EXPECT_FALSE(f.resume());
        EXPECT_EQ(seen.size(), size_t(i + 1));
        EXPECT_EQ(Fiber::current(), nullptr);
    }
    EXPECT_TRUE(f.resume());
    EXPECT_TRUE(f.ended());
    EXPECT_TRUE(f.resume());  // ended: nothing more runs
    EXPECT_EQ(seen, (std::vector<int>{0, 1, 2}));
}

// A fiber's step resumes another (a team's setup progressing a second team): each
// yield goes back to its own resumer.
TEST(Fiber, ANestedFiberYieldsToTheFiberThatResumedIt) {
    std::vector<std::string> trace;
    Fiber inner([&] {
        trace.push_back("inner 1");
        Fiber::yield();
        trace.push_back("inner 2");
    });
    Fiber outer([&] {
        trace.push_back("outer 1");
        EXPECT_FALSE(inner.resume());
        trace.push_back("outer 2");
        Fiber::yield();
        EXPECT_TRUE(inner.resume());
        trace.push_back("outer 3");
    });
    EXPECT_FALSE(outer.resume());
    EXPECT_TRUE(outer.resume());
    EXPECT_EQ(trace, (std::vector<std::string>{"outer 1", "inner 1", "outer 2", "inner 2", "outer 3"}));
}

TEST(Fiber, ResumingItselfFromInsideRunsNothing) {
    Fiber *self = nullptr;
    int inside = 0;
    Fiber f([&] {
        ++inside;
        EXPECT_FALSE(self->resume());
        Fiber::yield();
        ++inside;
    });
    self = &f;
    EXPECT_FALSE(f.resume());
    EXPECT_TRUE(f.resume());
    EXPECT_EQ(inside, 2);
}

// A team's queue may be progressed by another thread (MPI_THREAD_MULTIPLE): the
// fiber goes on there, unless pinned to the thread that ran it last.
TEST(Fiber, TakenUpOnAnotherThreadUnlessPinned) {
    int steps = 0;
    Fiber f([&] {
        ++steps;
        Fiber::yield();
        ++steps;
        Fiber::Pin p;
        Fiber::yield();
        ++steps;
    });
    EXPECT_FALSE(f.resume());
    std::thread([&] { EXPECT_FALSE(f.resume()); }).join();  // step 2, there
    EXPECT_EQ(steps, 2);
    EXPECT_FALSE(f.resume());  // pinned to the other thread: nothing runs here
    EXPECT_EQ(steps, 2);
    EXPECT_FALSE(f.ended());
}

// The switch keeps the thread's signal mask as it is (no sigprocmask per step): a
// mask the body sets stays set for its resumer, as on any code of that thread.
TEST(Fiber, SwitchingLeavesTheSignalMaskAlone) {
    sigset_t before, blocked, now;
    pthread_sigmask(SIG_SETMASK, nullptr, &before);
    Fiber f([&] {
        sigemptyset(&blocked);
        sigaddset(&blocked, SIGUSR2);
        pthread_sigmask(SIG_BLOCK, &blocked, nullptr);
        Fiber::yield();
        pthread_sigmask(SIG_SETMASK, &before, nullptr);
    });
    EXPECT_FALSE(f.resume());
    pthread_sigmask(SIG_SETMASK, nullptr, &now);
    EXPECT_TRUE(sigismember(&now, SIGUSR2));
    EXPECT_TRUE(f.resume());
    pthread_sigmask(SIG_SETMASK, nullptr, &now);
    EXPECT_FALSE(sigismember(&now, SIGUSR2));
}

// One fiber per queued agreement: thousands in a row reuse one stack.
TEST(Fiber, ManyShortFibersInARow) {
    long sum = 0;
    for (int i = 0; i < 5000; ++i) {
        Fiber f([&sum, i] {
            Fiber::yield();
            sum += i;
        });
        EXPECT_FALSE(f.resume());
        EXPECT_TRUE(f.resume());
    }
    EXPECT_EQ(sum, 5000L * 4999 / 2);
}
}  // namespace
