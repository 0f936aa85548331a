// SPDX-License-Identifier: BSD-3-Clause
// fake_devmem.cc - device memory use shared across processes (see fake_devmem.h).
#include "test/fakecuda/fake_devmem.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

namespace fakecuda {
namespace {

constexpr int kSlots = 256, kDevices = 16;

struct Slot {
    std::atomic<long> pid;
    std::atomic<long long> bytes;
};
struct Table {
    Slot slot[kSlots];
};
static_assert(std::atomic<long>::is_always_lock_free && std::atomic<long long>::is_always_lock_free,
              "shared counters must be lock free");

bool alive(long pid) { return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno != ESRCH); }

// The table of device dev, mapped once per process; nullptr if unusable.
Table *table(int dev) {
    static std::mutex mu;
    static Table *tables[kDevices] = {};
    static bool tried[kDevices] = {};
    if (dev < 0 || dev >= kDevices) return nullptr;
    std::lock_guard<std::mutex> l(mu);
    if (tried[dev]) return tables[dev];
    tried[dev] = true;
    const char *node = std::getenv("FAKECUDA_NODE");
    char path[128];
    std::snprintf(path, sizeof path, "/dev/shm/fakecuda-%u-%s-dev%d", (unsigned)getuid(),
                  node && *node ? node : "0", dev);
    const int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return nullptr;
    void *p = MAP_FAILED;
    if (ftruncate(fd, sizeof(Table)) == 0)  // zero-filled when new; same size otherwise
        p = mmap(nullptr, sizeof(Table), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p != MAP_FAILED) tables[dev] = static_cast<Table *>(p);
    return tables[dev];
}

// This process's slot: its own, else a free or dead one (reset).
Slot *own_slot(Table *t) {
    const long me = (long)getpid();
    for (Slot &s : t->slot)
        if (s.pid.load() == me) return &s;
    for (Slot &s : t->slot) {
        long cur = s.pid.load();
        if ((cur == 0 || !alive(cur)) && s.pid.compare_exchange_strong(cur, me)) {
            s.bytes.store(0);
            return &s;
        }
    }
    return nullptr;
}

}  // namespace

void devmem_add(int dev, long long delta) {
    Table *t = table(dev);
    if (t == nullptr) return;
    if (Slot *s = own_slot(t)) s->bytes.fetch_add(delta);
}

unsigned long long devmem_used(int dev) {
    Table *t = table(dev);
    if (t == nullptr) return 0;
    long long n = 0;
    for (Slot &s : t->slot) {
        const long pid = s.pid.load();
        if (pid != 0 && alive(pid)) n += s.bytes.load();
    }
    return n > 0 ? (unsigned long long)n : 0;
}

}  // namespace fakecuda
