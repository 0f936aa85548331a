// SPDX-License-Identifier: BSD-3-Clause
// fake_cuda.cc - a CUDA driver test double, built as test/fakecuda/libcuda.so.1.
//
// Select it with LD_LIBRARY_PATH=$builddir/test/fakecuda. It exports the driver entry
// points strata loads (topo/cuda_api.h) under their ABI names, with enough fidelity to
// catch what a GPU would catch:
//  - Device memory is a memfd mapped twice: the address handed out is PROT_NONE, so host
//    code that touches it faults; only the fake's own copy/memset code uses the RW
//    "shadow" mapping. An IPC handle names the memfd (/proc/PID/fd/N) and its size.
//    cuMemFree poisons the memory first (0xDB), so a peer that still reads it through
//    an IPC mapping gets garbage, as it would once the GPU hands the memory out again.
//  - Streams are worker threads with in-order queues; each queued op first sleeps
//    FAKECUDA_DELAY_US (default 200), so a caller that skips a wait reads stale data.
//    The legacy stream (0) runs ops in the caller after draining the blocking streams.
//    With FAKECUDA_LEGACY_QUEUE_US=N (N > 0) it is a queue too, each op run N us late, as
//    an application's work queued on it before an MPI call may still be running: work
//    on a blocking stream then starts after the legacy work queued before it (the real
//    legacy stream's implicit order, kept in the stream's worker: the host does not
//    wait), and the synchronous copies and memsets, cuStreamSynchronize and
//    cuCtxSynchronize wait for it; an IPC close does not.
//  - An event is a pair of counters (recorded, completed); an interprocess event keeps
//    them in shared memory, so cuIpcOpenEventHandle works across processes.
//  - As with a real GPU, a process forked after cuInit cannot use the driver: every call
//    in the child returns CUDA_ERROR_NOT_INITIALIZED.
//  - Device addresses come from one reserved range per process, first fit, as a GPU's
//    virtual address space is reused: a freed range is handed out again, and a new
//    allocation may overlap an old one at another start.
//  - IPC: opening a handle again in the same process counts a reference and returns
//    the same address (as the driver documents); opening a handle of another
//    allocation of the same exporter whose range overlaps one still mapped here (the
//    exporter freed it and allocated again) fails with CUDA_ERROR_ALREADY_MAPPED, as
//    the real driver does, until the stale mapping is closed.
//  - Kernels: cuModuleLoadData checks the image (fake_image.h): a fatbin, cubin or PTX
//    that this driver version can run on the GPU (sm_90), else
//    CUDA_ERROR_UNSUPPORTED_PTX_VERSION / NO_BINARY_FOR_GPU / INVALID_IMAGE, as a
//    driver older than the toolkit refuses its images. FAKECUDA_DRIVER_VERSION
//    (default 13000) is the version cuDriverGetVersion reports and the loader checks.
//    cuModuleGetFunction knows strata's reduction kernels by name (the list in
//    src/mem/cuda_kernels.h, e.g. strata_reduce_uint32_sum) and nothing else
//    (CUDA_ERROR_NOT_FOUND); cuLaunchKernel checks the launch shape and that operands
//    are memory the driver knows, and queues the kernel's fold written with strata's
//    host functors (src/mem/ops.h) on the stream. An operand misaligned for the
//    element type faults *in the kernel*, as on a GPU: the launch succeeds, and once
//    the stream reaches it the error (CUDA_ERROR_MISALIGNED_ADDRESS) is sticky: every
//    later call of the process fails with it.
//  - cuMemGetInfo counts device memory of every process on the machine (fake_devmem.h),
//    in 2 MiB pages, as a shared GPU does.
//  - Stream-ordered (cuMemAllocAsync) and virtual-memory (cuMemCreate + cuMemMap)
//    allocations are device memory that legacy CUDA IPC cannot share
//    (IS_LEGACY_CUDA_IPC_CAPABLE 0, cuIpcGetMemHandle fails).
//  - Contexts: each GPU's primary context, and contexts of the application's own
//    (cuCtxCreate). Device memory belongs to the context it was allocated in
//    (CU_POINTER_ATTRIBUTE_CONTEXT); a kernel that touches another context's device
//    memory faults, sticky (CUDA_ERROR_ILLEGAL_ADDRESS), as on a GPU; copies take any
//    memory (unified addressing). FAKECUDA_COMPUTE_MODE (default 0) is what
//    CU_DEVICE_ATTRIBUTE_COMPUTE_MODE reads: at 3 (exclusive-process) a process may hold
//    one context per GPU, so the primary one cannot be retained beside one of its own
//    (and the reverse), CUDA_ERROR_DEVICE_UNAVAILABLE; at 2 (prohibited) no context can be
//    had at all. (Exclusivity between processes is not modelled: tests run as under MPS.)
//  - Failures to order, for tests of the paths that meet them: FAKECUDA_FAIL, a comma
//    list read at each call: ipc_get (cuIpcGetMemHandle: CUDA_ERROR_NOT_SUPPORTED, as
//    where IPC is refused), ipc_open (cuIpcOpenMemHandle: CUDA_ERROR_MAP_FAILED, as
//    across container namespaces), alloc:BYTES (cuMemAlloc of at least BYTES:
//    CUDA_ERROR_OUT_OF_MEMORY, a nearly full GPU).
//  - A CUDA-aware Open MPI 4.1 (contrib/cuda-openmpi) runs on it too: every entry point
//    its opal/mca/common/cuda looks up is here (the selftest lists them), so its
//    convertor copies, smcuda's IPC handles and events and its host registrations go
//    through the fake, under the same rules.
//  - Counters (fakecuda_counters, fakecuda.h): kernel launches, copies, event records,
//    stream waits and writes, host waits, device bytes read and written, per process,
//    counted where each operation is issued, so a test can bound what a collective asks
//    of the GPU without timing it.
//  - Stream memory operations (cuStreamWaitValue32/64, cuStreamWriteValue32/64) run in
//    the stream's worker in order: a wait holds the worker, and so everything queued
//    behind it, until the word meets the condition (GEQ: the cyclic (signed)(word -
//    value) >= 0); CAN_USE_64_BIT_STREAM_MEM_OPS reads 1, or 0 with
//    FAKECUDA_STREAM_MEMOPS=0 (a GPU without them).
// FAKECUDA_DEVICES (default 1; 0 means no GPU) sets the GPU count; FAKECUDA_IPC_SELF=1 lets a
// process open its own IPC handles (see cuIpcOpenMemHandle); FAKECUDA_VERBOSE=1 says why
// an image or an IPC open was refused, =2 also every IPC map, unmap and device free, on
// stderr. FAKECUDA_STATS_FILE gets one line of live counts and cumulative counters at
// exit (fakecuda.h). Entry points not defined here are
// absent on purpose: a caller fails at dlsym instead of running on a silent stub. The
// CUDA runtime (cudaLaunchKernel and friends) does not work on it.
#pragma GCC visibility push(default)  // built with -fvisibility=hidden: export the header's API
#include "fakecuda.h"
#pragma GCC visibility pop

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "strata.h"
#include "mem/cuda_kernels.h"
#include "mem/ops.h"
#include "test/fakecuda/fake_devmem.h"
#include "test/fakecuda/fake_image.h"

// Own minimal types with the ABI of cuda.h (CUDA 13).
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
struct CUctx_st { int dev, refs; };  // a primary context and its retain count
struct CUstream_st;
struct CUevent_st;
struct CUmod_st;
struct CUfunc_st;
typedef CUctx_st *CUcontext;
typedef CUstream_st *CUstream;
typedef CUevent_st *CUevent;
typedef CUmod_st *CUmodule;
typedef CUfunc_st *CUfunction;
struct CUipcMemHandle { char reserved[64]; };
struct CUipcEventHandle { char reserved[64]; };
typedef void (*CUhostFn)(void *);

#define FAKECUDA_API extern "C" __attribute__((visibility("default")))

namespace {

enum : int {
    OK = 0, E_VALUE = 1, E_MEMORY = 2, E_NOT_INIT = 3, E_NO_DEVICE = 100, E_DEVICE = 101,
    E_INVALID_IMAGE = 200, E_CONTEXT = 201, E_MAP_FAILED = 205, E_ALREADY_MAPPED = 208,
    E_NO_BINARY = 209, E_PTX_VERSION = 222, E_HANDLE = 400, E_NOT_FOUND = 500, E_NOT_READY = 600,
    E_ILLEGAL_ADDRESS = 700, E_REGISTERED = 712, E_NOT_REGISTERED = 713, E_MISALIGNED = 716,
    E_NOT_SUPPORTED = 801, E_UNKNOWN = 999, E_DEVICE_UNAVAILABLE = 46,
};
enum : unsigned { MEM_HOST = 1, MEM_DEVICE = 2 };
enum : unsigned { EVENT_DISABLE_TIMING = 0x2, EVENT_INTERPROCESS = 0x4, STREAM_NON_BLOCKING = 0x1 };
constexpr int kMaxDevices = 16;
constexpr int kDeviceAttrMax = 148;  // CU_DEVICE_ATTRIBUTE_MAX in CUDA 13
constexpr unsigned long long kTotalMem = 16ull << 30;
constexpr size_t kArenaBytes = 64ull << 30;  // device address space per process
constexpr size_t kArenaAlign = 64 << 10;
constexpr size_t kVmmGranularity = 2 << 20;  // cuMemGetAllocationGranularity, and cuMemGetInfo's page
constexpr int kDriverVersion = 13000;        // default for FAKECUDA_DRIVER_VERSION
constexpr int kComputeCapability = 90;
constexpr char kMemMagic[8] = {'F', 'A', 'K', 'E', 'C', 'U', 'M', '1'};
constexpr char kEventMagic[8] = {'F', 'A', 'K', 'E', 'C', 'U', 'E', '1'};

// Device: cuMemAlloc; Pool: cuMemAllocAsync; Vmm: cuMemMap of a cuMemCreate handle.
enum class Kind { Device, Managed, Ipc, Host, Registered, Pool, Vmm };

// A range of memory the driver knows, keyed by its start. Device and Ipc ranges have a
// shadow; the others are ordinary host memory.
struct Range {
    Kind kind;
    size_t size, map_size;  // as requested; page-rounded, as mapped
    char *shadow;
    int fd;  // Device: the memfd, open until cuMemFree so IPC peers can open it; else -1
    unsigned long long id;
    int dev, refs;                            // refs: Ipc opens of the same handle
    std::pair<long, unsigned long long> key;  // Ipc: (exporter pid, exporter buffer id)
    uintptr_t peer_start = 0;                 // Ipc: where the allocation is in the exporter
    unsigned long long vmm = 0;               // Vmm: the cuMemCreate handle mapped there
    CUctx_st *ctx = nullptr;                  // Device, Pool, Ipc: the context it belongs to
    bool sync_memops = false;                 // cuPointerSetAttribute(SYNC_MEMOPS)
};

// A cuMemCreate allocation: physical memory, mapped by cuMemMap.
struct VmmAlloc {
    int fd, dev;
    size_t size;
    int maps;
    bool released;
};

struct EvState { std::atomic<unsigned long long> recorded{0}, completed{0}; };

// IPC handle payloads (64 bytes on the wire).
struct MemHandle { char magic[8]; long long pid; int fd, dev; unsigned long long size, id, start; };
struct EventHandle { char magic[8]; long long pid; int fd; };
static_assert(sizeof(MemHandle) <= 64 && sizeof(EventHandle) <= 64, "IPC handles are 64 bytes");

}  // namespace

struct CUevent_st {
    unsigned flags;
    std::shared_ptr<EvState> st;  // queued ops hold it too, so destroy never races them
    int fd;                       // interprocess: the memfd holding *st; else -1
    unsigned long long polled = 0;  // the latest record cuEventQuery saw (host_waits); under g().mu
};

struct CUstream_st {
    unsigned flags;
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::function<void()>> q;  // the front one runs; popped once done
    unsigned long long queued = 0, ran = 0;  // ops ever queued, and run
    bool stop = false;
    std::thread worker;
};

// A kernel of a loaded module: its entry in strata::kern::kKernels and how to run it.
struct CUfunc_st {
    CUmod_st *mod;
    int kernel;
    size_t elem_size, elem_align;
    void (*fold)(char *const *dsts, int ndst, char *const *srcs, int nsrc, unsigned long long count);
};

struct CUmod_st {
    CUcontext ctx;
    std::unique_ptr<CUfunc_st> fns[strata::kern::kNumKernels];  // made on first lookup
};

namespace {

struct Global {
    std::mutex mu;  // everything below; never held while a worker runs or sleeps
    std::map<uintptr_t, Range> ranges;
    std::map<std::pair<long, unsigned long long>, uintptr_t> ipc_open;
    std::map<CUstream, std::shared_ptr<CUstream_st>> streams;
    std::map<CUevent, std::unique_ptr<CUevent_st>> events;
    std::map<CUmodule, std::unique_ptr<CUmod_st>> modules;
    std::map<unsigned long long, VmmAlloc> vmm;  // cuMemCreate handles
    std::map<uintptr_t, size_t> arena_used;      // device address ranges handed out (offsets)
    std::map<uintptr_t, size_t> reserved;        // cuMemAddressReserve ranges
    char *arena = nullptr;
    CUctx_st ctx[kMaxDevices];
    std::vector<std::unique_ptr<CUctx_st>> own_ctx;  // cuCtxCreate's, until cuCtxDestroy
    std::atomic<bool> inited{false}, forked{false};
    std::atomic<int> sticky{0};  // a kernel's fault: every later call fails with it
    int ndev = 0;
    std::atomic<unsigned> delay_us{200};
    CUstream_st *legacy = nullptr;  // FAKECUDA_LEGACY_QUEUE_US: the legacy stream's queue (never freed)
    unsigned legacy_us = 0;
    unsigned long long next_id = 1, total_dev = 0;
};

// Never destroyed: workers and the exit-time stats writer may outlive static destructors.
Global &g() {
    static Global *p = new Global;
    return *p;
}

thread_local CUcontext tl_ctx = nullptr;

CUresult ready(bool need_ctx, bool args_ok = true) {
    if (!g().inited.load() || g().forked.load()) return E_NOT_INIT;
    if (int e = g().sticky.load()) return e;
    if (need_ctx && tl_ctx == nullptr) return E_CONTEXT;
    return args_ok ? OK : E_VALUE;
}

bool valid_dev(CUdevice d) { return d >= 0 && d < g().ndev; }

// The checks every device query starts with.
CUresult dev_call(const void *out, CUdevice d) {
    if (CUresult rc = ready(false)) return rc;
    if (out == nullptr) return E_VALUE;
    return valid_dev(d) ? OK : E_DEVICE;
}

template <typename T, typename V>
CUresult put(T *out, V v) {
    *out = (T)v;
    return OK;
}

size_t page_round(size_t n) {
    const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    return (n + pg - 1) / pg * pg;
}

// Whether FAKECUDA_FAIL lists `what` (read at each call); *arg gets the number after
// "what:" where there is one.
bool fail(const char *what, unsigned long long *arg = nullptr) {
    const size_t n = std::strlen(what);
    for (const char *s = std::getenv("FAKECUDA_FAIL"); s != nullptr; s = std::strchr(s, ',')) {
        if (*s == ',') ++s;
        if (std::strncmp(s, what, n) != 0 || (s[n] != '\0' && s[n] != ',' && s[n] != ':')) continue;
        if (arg != nullptr) *arg = s[n] == ':' ? std::strtoull(s + n + 1, nullptr, 10) : 0;
        return true;
    }
    return false;
}

int env_int(const char *name, int def, int lo, int hi) {
    const char *s = std::getenv(name);
    if (s == nullptr || *s == '\0') return def;
    char *end = nullptr;
    long v = std::strtol(s, &end, 10);
    if (*end == '\0' && v >= lo && v <= hi) return (int)v;
    std::fprintf(stderr, "fakecuda: ignoring %s=%s (want %d..%d)\n", name, s, lo, hi);
    return def;
}

// The range holding p, or nullptr. Caller holds g().mu.
Range *find(uintptr_t p, uintptr_t *start) {
    auto it = g().ranges.upper_bound(p);
    if (it == g().ranges.begin()) return nullptr;
    --it;
    if (p - it->first >= it->second.size) return nullptr;
    if (start) *start = it->first;
    return &it->second;
}

bool has_shadow(const Range *r) {
    return r && (r->kind == Kind::Device || r->kind == Kind::Ipc || r->kind == Kind::Pool || r->kind == Kind::Vmm);
}

// Where the fake itself touches [p, p+n): the shadow inside device memory (interior
// pointers too), p itself for host memory. E_VALUE for NULL, a device range overrun, or,
// where the call names a device address (dev), memory the driver does not know (plain
// host memory, or freed). Caller holds g().mu.
CUresult xlate(CUdeviceptr p, size_t n, bool dev, char **out) {
    if (p == 0) return E_VALUE;
    uintptr_t start = 0;
    Range *r = find(p, &start);
    *out = reinterpret_cast<char *>(p);
    if (dev && r == nullptr) return E_VALUE;
    if (!has_shadow(r)) return OK;
    if (n > r->size - (p - start)) return E_VALUE;
    *out = r->shadow + (p - start);
    return OK;
}

bool counts_as_device(Kind k) { return k == Kind::Device || k == Kind::Managed || k == Kind::Pool; }

// ---- counters (struct fakecuda_counters, fakecuda.h) -------------------------------------
// Kept apart from what the entry points do: each calls one of these, once, where the
// operation it counts has been issued (cuLaunchKernel at its top, and count_bytes for
// what its kernel reads and writes).

struct Counters {
    std::atomic<unsigned long long> launches{0}, copies{0}, events_recorded{0}, stream_waits{0}, stream_writes{0},
        host_waits{0}, dev_read{0}, dev_written{0};
};

// Never destroyed, as g(): the exit-time stats writer reads it.
Counters &counters() {
    static Counters *p = new Counters;
    return *p;
}

void bump(std::atomic<unsigned long long> &c) { c.fetch_add(1, std::memory_order_relaxed); }

// Bytes of device memory an issued kernel or copy reads and writes.
void count_bytes(unsigned long long read, unsigned long long written) {
    counters().dev_read.fetch_add(read, std::memory_order_relaxed);
    counters().dev_written.fetch_add(written, std::memory_order_relaxed);
}

// Whether the byte counts take p as device memory (peers' memory mapped through IPC
// too; pinned and registered host memory not). Caller holds g().mu.
bool device_side(CUdeviceptr p) {
    const Range *r = find(p, nullptr);
    return r != nullptr && (has_shadow(r) || r->kind == Kind::Managed);
}

// An issued copy of n bytes from src (0 for a memset) to dst. Takes g().mu.
void count_copy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
    bool to_dev = false, from_dev = false;
    {
        std::lock_guard<std::mutex> l(g().mu);
        to_dev = device_side(dst);
        from_dev = src != 0 && device_side(src);
    }
    bump(counters().copies);
    count_bytes(from_dev ? n : 0, to_dev ? n : 0);
}

// cuEventQuery of e: one host wait per record of e, at the first query that sees it
// (a poll loop is one wait). Takes g().mu.
void count_poll(CUevent e) {
    std::lock_guard<std::mutex> l(g().mu);
    auto it = g().events.find(e);
    if (it == g().events.end()) return;
    const unsigned long long rec = it->second->st->recorded.load();
    if (rec <= it->second->polled) return;
    it->second->polled = rec;
    bump(counters().host_waits);
}

// This process's device memory (as requested). Caller holds g().mu.
unsigned long long live_dev_bytes() {
    unsigned long long n = 0;
    for (auto &kv : g().ranges)
        if (counts_as_device(kv.second.kind)) n += kv.second.size;
    for (auto &kv : g().vmm) n += kv.second.size;
    return n;
}

// What an allocation of n bytes takes of the GPU's memory.
long long dev_pages(size_t n) { return (long long)((n + kVmmGranularity - 1) / kVmmGranularity * kVmmGranularity); }

// Device address space: n bytes (kArenaAlign-rounded) of the process's reserved range,
// the lowest free ones, so that freed addresses come back as on a GPU; nullptr when
// full. Caller holds g().mu.
char *arena_take(size_t n) {
    Global &G = g();
    if (G.arena == nullptr) {
        void *p = mmap(nullptr, kArenaBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) return nullptr;
        G.arena = static_cast<char *>(p);
    }
    n = (n + kArenaAlign - 1) / kArenaAlign * kArenaAlign;
    uintptr_t at = 0;
    for (auto &kv : G.arena_used) {
        if (kv.first - at >= n) break;
        at = kv.first + kv.second;
    }
    if (at + n > kArenaBytes) return nullptr;
    G.arena_used[at] = n;
    return G.arena + at;
}

// Gives [p, ...) back to the arena, reserved again (PROT_NONE). Caller holds g().mu.
void arena_give(char *p) {
    Global &G = g();
    auto it = G.arena_used.find((uintptr_t)(p - G.arena));
    if (it == G.arena_used.end()) return;
    mmap(p, it->second, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    G.arena_used.erase(it);
}

// Maps fd twice: PROT_NONE where the caller sees it (at `at`, in the arena, or a fresh
// arena range when null), RW for the fake. Caller holds g().mu.
CUresult map_pair(int fd, size_t map_size, char **va, char **shadow, char *at = nullptr) {
    char *where = at ? at : arena_take(map_size);
    if (where == nullptr) return E_MEMORY;
    void *a = mmap(where, map_size, PROT_NONE, MAP_SHARED | MAP_FIXED, fd, 0);
    void *b = a == MAP_FAILED ? MAP_FAILED : mmap(nullptr, map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (b == MAP_FAILED) {
        if (at == nullptr) arena_give(where);
        return E_MEMORY;
    }
    *va = static_cast<char *>(a);
    *shadow = static_cast<char *>(b);
    return OK;
}

// Another process's fd (an exported memfd), or -1.
int open_peer_fd(long long pid, int fd) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%lld/fd/%d", pid, fd);
    return open(path, O_RDWR | O_CLOEXEC);
}

// A device allocation's memfd is named after its buffer id, so that an importer can tell
// a stale handle (the exporter freed it and reused the fd number) from the real one.
std::string mem_name(unsigned long long id) { return "fakecuda-mem-" + std::to_string(id); }

bool is_memfd_named(int fd, const std::string &name) {
    char link[64], target[128];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    const ssize_t n = readlink(link, target, sizeof target);
    return n > 0 && std::string(target, (size_t)n).rfind("/memfd:" + name + " ", 0) == 0;
}

// Writes payload, stamped with magic, into a 64-byte handle.
template <typename T>
void put_handle(char (&dst)[64], const char (&magic)[8], T payload) {
    std::memcpy(payload.magic, magic, 8);
    std::memset(dst, 0, sizeof dst);
    std::memcpy(dst, &payload, sizeof payload);
}

// ---- streams ----------------------------------------------------------------------

void run_worker(CUstream_st *s) {
    std::unique_lock<std::mutex> l(s->mu);
    for (;;) {
        s->cv.wait(l, [s] { return s->stop || !s->q.empty(); });
        if (s->q.empty()) return;  // stopped, and drained
        std::function<void()> op = s->q.front();
        l.unlock();
        if (unsigned us = s == g().legacy ? g().legacy_us : g().delay_us.load()) usleep(us);
        op();
        l.lock();
        s->q.pop_front();
        s->ran++;
        s->cv.notify_all();
    }
}

void drain(CUstream_st *s) {
    std::unique_lock<std::mutex> l(s->mu);
    s->cv.wait(l, [s] { return s->q.empty(); });
}

// Drains the legacy stream's queue, where it has one (FAKECUDA_LEGACY_QUEUE_US).
void drain_legacy() {
    if (g().legacy != nullptr) drain(g().legacy);
}

// Drains every stream, or only the blocking ones (those the legacy stream orders after),
// and with_legacy the legacy stream's queue too.
void drain_all(bool blocking_only, bool with_legacy = true) {
    std::vector<std::shared_ptr<CUstream_st>> all;
    {
        std::lock_guard<std::mutex> l(g().mu);
        for (auto &kv : g().streams)
            if (!blocking_only || !(kv.second->flags & STREAM_NON_BLOCKING)) all.push_back(kv.second);
    }
    for (auto &s : all) drain(s.get());
    if (with_legacy) drain_legacy();
}

// *out stays empty for the default streams: 0 (legacy), 1 (CU_STREAM_LEGACY) and
// 2 (CU_STREAM_PER_THREAD), which run ops in the caller.
CUresult lookup_stream(CUstream s, std::shared_ptr<CUstream_st> *out) {
    if (reinterpret_cast<uintptr_t>(s) <= 2) return OK;
    std::lock_guard<std::mutex> l(g().mu);
    auto it = g().streams.find(s);
    if (it == g().streams.end()) return E_HANDLE;
    *out = it->second;
    return OK;
}

void enqueue(CUstream_st *sp, std::function<void()> op) {
    std::lock_guard<std::mutex> l(sp->mu);
    sp->q.push_back(std::move(op));
    ++sp->queued;
    sp->cv.notify_all();
}

// The legacy stream's ops queued so far (0 without its queue).
unsigned long long legacy_queued() {
    CUstream_st *lg = g().legacy;
    if (lg == nullptr) return 0;
    std::lock_guard<std::mutex> l(lg->mu);
    return lg->queued;
}

// In a stream's worker: returns once the legacy stream has run its first n ops.
void legacy_reached(unsigned long long n) {
    CUstream_st *lg = g().legacy;
    if (lg == nullptr || n == 0) return;
    std::unique_lock<std::mutex> l(lg->mu);
    lg->cv.wait(l, [lg, n] { return lg->ran >= n; });
}

// Runs op in s's order: queued on a created stream (a blocking one after the legacy
// stream's queued work); on a default stream at once, or queued on the legacy stream's
// queue where it has one (the legacy one after the blocking streams drain, as the real
// one orders itself after them).
CUresult submit(CUstream s, std::function<void()> op) {
    std::shared_ptr<CUstream_st> sp;
    if (CUresult rc = lookup_stream(s, &sp)) return rc;
    if (!sp) {
        if (reinterpret_cast<uintptr_t>(s) == 2) {
            op();
        } else {
            drain_all(true, false);
            if (g().legacy != nullptr) enqueue(g().legacy, std::move(op));
            else op();
        }
        return OK;
    }
    // A blocking stream's op starts after the legacy work queued before it (on the
    // device: the host does not wait).
    const unsigned long long before = sp->flags & STREAM_NON_BLOCKING ? 0 : legacy_queued();
    if (before == 0) enqueue(sp.get(), std::move(op));
    else enqueue(sp.get(), [before, op] { legacy_reached(before); op(); });
    return OK;
}

// A synchronous copy or memset returns once it is done.
CUresult synced(CUresult rc) {
    if (rc == OK) drain_legacy();
    return rc;
}

// dev_dst, dev_src: the call's signature names that side a device address.
CUresult copy(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s, bool dev_dst, bool dev_src) {
    if (CUresult rc = ready(true)) return rc;
    if (n == 0) return OK;
    char *to = nullptr, *from = nullptr;
    {
        std::lock_guard<std::mutex> l(g().mu);
        CUresult rc = xlate(dst, n, dev_dst, &to);
        if (rc == OK) rc = xlate(src, n, dev_src, &from);
        if (rc != OK) return rc;
    }
    if (CUresult rc = submit(s, [to, from, n] { std::memmove(to, from, n); })) return rc;
    count_copy(dst, src, n);
    return OK;
}

CUresult fill(CUdeviceptr dst, unsigned v, size_t n, size_t width, CUstream s) {
    if (CUresult rc = ready(true)) return rc;
    if ((width == 4 && (dst & 3)) || n > SIZE_MAX / width) return E_VALUE;
    if (n == 0) return OK;
    char *to = nullptr;
    {
        std::lock_guard<std::mutex> l(g().mu);
        if (CUresult rc = xlate(dst, n * width, true, &to)) return rc;
    }
    if (CUresult rc = submit(s, [to, v, n, width] {
            if (width == 1) std::memset(to, (int)(v & 0xff), n);
            else for (size_t i = 0; i < n; ++i) std::memcpy(to + 4 * i, &v, 4);
        }))
        return rc;
    count_copy(dst, 0, n * width);
    return OK;
}

// ---- events -----------------------------------------------------------------------

std::shared_ptr<EvState> event_state(CUevent e) {
    std::lock_guard<std::mutex> l(g().mu);
    auto it = g().events.find(e);
    return it == g().events.end() ? nullptr : it->second->st;
}

void advance(std::atomic<unsigned long long> &c, unsigned long long to) {
    unsigned long long cur = c.load();
    while (cur < to && !c.compare_exchange_weak(cur, to)) {
    }
}

void wait_reached(const EvState &st, unsigned long long target) {
    while (st.completed.load() < target) usleep(20);
}

// An EvState in a shared mapping of fd (a memfd of one page).
std::shared_ptr<EvState> map_event(int fd, bool construct) {
    const size_t n = page_round(sizeof(EvState));
    void *p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return nullptr;
    EvState *st = construct ? new (p) EvState : static_cast<EvState *>(p);
    return std::shared_ptr<EvState>(st, [n](EvState *s) { munmap(s, n); });
}

CUresult add_event(std::unique_ptr<CUevent_st> ev, CUevent *out) {
    std::lock_guard<std::mutex> l(g().mu);
    *out = ev.get();
    g().events[ev.get()] = std::move(ev);
    return OK;
}

// ---- host-visible allocations and frees -------------------------------------------------

CUresult host_alloc(size_t n, Kind k, void **out) {
    const size_t ms = page_round(n);
    void *p = mmap(nullptr, ms, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return E_MEMORY;
    std::lock_guard<std::mutex> l(g().mu);
    if (k == Kind::Managed && n > kTotalMem - live_dev_bytes()) {
        munmap(p, ms);
        return E_MEMORY;
    }
    g().total_dev += k == Kind::Managed;
    if (k == Kind::Managed) fakecuda::devmem_add(tl_ctx->dev, dev_pages(n));
    g().ranges[(uintptr_t)p] = Range{k, n, ms, nullptr, -1, g().next_id++, tl_ctx->dev, 1, {}};
    *out = p;
    return OK;
}

// Forgets the range starting at p if its kind is k or k2 (else err); then, like the real
// driver's frees, drains the streams so queued work never sees it unmapped, and unmaps.
CUresult free_range(uintptr_t p, Kind k, Kind k2, CUresult err) {
    if (CUresult rc = ready(false)) return rc;
    Range r;
    {
        std::lock_guard<std::mutex> l(g().mu);
        auto it = g().ranges.find(p);
        if (it == g().ranges.end() || (it->second.kind != k && it->second.kind != k2)) return err;
        if (it->second.kind == Kind::Ipc && --it->second.refs > 0) return OK;
        r = it->second;
        if (r.kind == Kind::Ipc) g().ipc_open.erase(r.key);
        if (r.kind == Kind::Ipc && env_int("FAKECUDA_VERBOSE", 0, 0, 2) == 2)
            std::fprintf(stderr, "fakecuda: unmapped buffer %llu\n", r.key.second);
        if (r.kind == Kind::Device && env_int("FAKECUDA_VERBOSE", 0, 0, 2) == 2)
            std::fprintf(stderr, "fakecuda: freed buffer %llu\n", r.id);
        g().ranges.erase(it);
        if (counts_as_device(r.kind)) fakecuda::devmem_add(r.dev, -dev_pages(r.size));
    }
    if (r.kind == Kind::Registered) return OK;  // the caller's memory
    // (An IPC close leaves the legacy stream's queue alone: the application's work there
    // cannot use a mapping strata opened, and a real close does not wait for it.)
    drain_all(false, r.kind != Kind::Ipc);
    // Freed device memory is soon someone else's: poison it, so that a process still
    // reading it through an IPC mapping (which keeps the pages) sees garbage, not the data.
    if (r.kind == Kind::Device || r.kind == Kind::Pool) std::memset(r.shadow, 0xDB, r.map_size);
    if (has_shadow(&r)) {
        std::lock_guard<std::mutex> l(g().mu);
        arena_give(reinterpret_cast<char *>(p));
    } else {
        munmap(reinterpret_cast<void *>(p), r.map_size);
    }
    if (r.shadow) munmap(r.shadow, r.map_size);
    if (r.fd >= 0) close(r.fd);
    return OK;
}

// ---- pointer attributes -------------------------------------------------------------

size_t attr_size(int a) {
    switch (a) {
        case 2: case 6: case 8: case 9: case 10: case 13: return 4;  // unsigned, int or bool-as-int
        case 1: case 3: case 4: case 7: case 11: case 12: return 8;
        default: return 0;
    }
}

// E_VALUE for an unsupported attribute, an unknown pointer, or the host pointer of device
// memory. Caller holds g().mu.
CUresult attr(int a, void *data, CUdeviceptr p) {
    const size_t sz = attr_size(a);
    uintptr_t start = 0;
    const Range *r = find(p, &start);
    if (sz == 0 || r == nullptr) return E_VALUE;
    const bool host = r->kind == Kind::Host || r->kind == Kind::Registered;  // Pool, Vmm: device
    unsigned long long v = 0;
    switch (a) {
        case 1: v = (uintptr_t)(r->ctx ? r->ctx : &g().ctx[r->dev]); break;  // CONTEXT
        case 2: v = host ? MEM_HOST : MEM_DEVICE; break;  // MEMORY_TYPE (managed: device)
        case 3: v = p; break;                             // DEVICE_POINTER: unified addressing
        case 4:                                           // HOST_POINTER
            if (has_shadow(r)) return E_VALUE;
            v = p;
            break;
        case 6: v = r->sync_memops; break;             // SYNC_MEMOPS
        case 7: v = r->id; break;                      // BUFFER_ID
        case 8: v = r->kind == Kind::Managed; break;   // IS_MANAGED
        case 9: v = (unsigned)r->dev; break;           // DEVICE_ORDINAL
        case 10: v = r->kind == Kind::Device; break;   // IS_LEGACY_CUDA_IPC_CAPABLE
        case 11: v = start; break;                     // RANGE_START_ADDR
        case 12: v = r->size; break;                   // RANGE_SIZE
        case 13: v = 1; break;                         // MAPPED
    }
    const unsigned u = (unsigned)v;
    std::memcpy(data, sz == 4 ? static_cast<const void *>(&u) : &v, sz);
    return OK;
}

struct ErrorText { int code; const char *name, *text; };
const ErrorText kErrors[] = {
    {OK, "CUDA_SUCCESS", "no error"},
    {E_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {E_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {E_NOT_INIT, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {E_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {E_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {E_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {E_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {E_MAP_FAILED, "CUDA_ERROR_MAP_FAILED", "mapping of buffer object failed"},
    {E_ALREADY_MAPPED, "CUDA_ERROR_ALREADY_MAPPED", "resource already mapped"},
    {E_NO_BINARY, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {E_PTX_VERSION, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain."},
    {E_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {E_MISALIGNED, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
    {E_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {E_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {E_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {E_REGISTERED, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "memory range already registered"},
    {E_NOT_REGISTERED, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "memory range not registered"},
    {E_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {E_DEVICE_UNAVAILABLE, "CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable"},
    {E_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

CUresult error_text(CUresult e, const char **out, bool name) {
    if (out == nullptr) return E_VALUE;
    *out = nullptr;
    for (const ErrorText &t : kErrors)
        if (t.code == e) *out = name ? t.name : t.text;
    return *out ? OK : E_VALUE;
}

void write_stats_at_exit() {
    const char *path = std::getenv("FAKECUDA_STATS_FILE");
    if (path == nullptr || *path == '\0' || g().forked.load()) return;  // a forked child owns nothing
    struct fakecuda_stats s;
    fakecuda_stats(&s);
    struct fakecuda_counters c;
    fakecuda_counters(&c);
    if (FILE *f = std::fopen(path, "a")) {
        std::fprintf(f, "fakecuda pid=%ld dev_allocs=%llu dev_bytes=%llu ipc_open=%llu host_allocs=%llu "
                        "registered=%llu events=%llu streams=%llu modules=%llu inited=%llu launches=%llu "
                        "copies=%llu events_recorded=%llu stream_waits=%llu stream_writes=%llu host_waits=%llu "
                        "dev_read=%llu dev_written=%llu\n",
                     (long)getpid(), s.dev_allocs, s.dev_bytes, s.ipc_open, s.host_allocs, s.registered,
                     s.events, s.streams, s.modules, s.inited, c.launches, c.copies, c.events_recorded,
                     c.stream_waits, c.stream_writes, c.host_waits, c.dev_read, c.dev_written);
        std::fclose(f);
    }
}

void on_fork_child() {
    if (g().inited.load()) g().forked = true;
}

__attribute__((constructor)) void register_hooks() {
    std::atexit(write_stats_at_exit);
    pthread_atfork(nullptr, nullptr, on_fork_child);
}

}  // namespace

// ---- accounting -----------------------------------------------------------------------

FAKECUDA_API int fakecuda_stats(struct fakecuda_stats *out) {
    if (out == nullptr) return -1;
    std::memset(out, 0, sizeof *out);
    std::lock_guard<std::mutex> l(g().mu);
    for (auto &kv : g().ranges) {
        const Range &r = kv.second;
        if (counts_as_device(r.kind)) {
            ++out->dev_allocs;
            out->dev_bytes += r.size;
        }
        out->ipc_open += r.kind == Kind::Ipc;
        out->host_allocs += r.kind == Kind::Host;
        out->registered += r.kind == Kind::Registered;
    }
    out->events = g().events.size();
    out->streams = g().streams.size();
    out->modules = g().modules.size();
    for (auto &kv : g().vmm) {
        ++out->dev_allocs;
        out->dev_bytes += kv.second.size;
    }
    out->total_dev_allocs = g().total_dev;
    out->inited = g().inited.load();
    return 0;
}

FAKECUDA_API int fakecuda_counters(struct fakecuda_counters *out) {
    if (out == nullptr) return -1;
    const Counters &c = counters();
    out->launches = c.launches.load();
    out->copies = c.copies.load();
    out->events_recorded = c.events_recorded.load();
    out->stream_waits = c.stream_waits.load();
    out->stream_writes = c.stream_writes.load();
    out->host_waits = c.host_waits.load();
    out->dev_read = c.dev_read.load();
    out->dev_written = c.dev_written.load();
    return 0;
}

// ---- initialisation, devices, contexts ------------------------------------------------

FAKECUDA_API CUresult cuInit(unsigned flags) {
    if (flags != 0) return E_VALUE;
    Global &G = g();
    if (G.forked.load()) return E_NOT_INIT;
    std::lock_guard<std::mutex> l(G.mu);
    if (G.inited.load()) return OK;
    G.ndev = env_int("FAKECUDA_DEVICES", 1, 0, kMaxDevices);
    if (G.ndev == 0) return E_NO_DEVICE;
    G.delay_us = (unsigned)env_int("FAKECUDA_DELAY_US", 200, 0, 10000000);
    G.legacy_us = (unsigned)env_int("FAKECUDA_LEGACY_QUEUE_US", 0, 0, 10000000);
    if (G.legacy_us > 0) {
        G.legacy = new CUstream_st;
        G.legacy->flags = 0;
        std::thread(run_worker, G.legacy).detach();
    }
    for (int i = 0; i < kMaxDevices; ++i) G.ctx[i] = CUctx_st{i, 0};
    G.inited = true;
    return OK;
}

// Read at each call, so that a test can play an older driver.
int driver_version() { return env_int("FAKECUDA_DRIVER_VERSION", kDriverVersion, 9000, 99999); }

FAKECUDA_API CUresult cuDriverGetVersion(int *v) {
    if (v == nullptr) return E_VALUE;
    return put(v, driver_version());
}

FAKECUDA_API CUresult cuGetErrorString(CUresult e, const char **s) { return error_text(e, s, false); }
FAKECUDA_API CUresult cuGetErrorName(CUresult e, const char **s) { return error_text(e, s, true); }

FAKECUDA_API CUresult cuDeviceGetCount(int *n) {
    if (CUresult rc = ready(false, n != nullptr)) return rc;
    return put(n, g().ndev);
}

FAKECUDA_API CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    if (CUresult rc = dev_call(d, ordinal)) return rc;
    return put(d, ordinal);
}

FAKECUDA_API CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
    if (CUresult rc = dev_call(name, d)) return rc;
    if (len <= 0) return E_VALUE;
    std::snprintf(name, (size_t)len, "strata fake GPU");
    return OK;
}

FAKECUDA_API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) {
    if (CUresult rc = dev_call(bytes, d)) return rc;
    return put(bytes, kTotalMem);
}

// CU_COMPUTEMODE_*: 0 default, 2 prohibited, 3 exclusive-process (1 is gone from CUDA).
int compute_mode() { return env_int("FAKECUDA_COMPUTE_MODE", 0, 0, 3); }

// Whether this process has a context of its own on d. Caller holds g().mu.
bool has_own_ctx(CUdevice d) {
    for (auto &c : g().own_ctx)
        if (c->dev == d) return true;
    return false;
}

// An H100-like part; attributes not listed read 0 (so: no GPUDirect RDMA). PCI bus ids
// differ per GPU.
FAKECUDA_API CUresult cuDeviceGetAttribute(int *v, int attrib, CUdevice d) {
    if (CUresult rc = dev_call(v, d)) return rc;
    if (attrib < 1 || attrib >= kDeviceAttrMax) return E_VALUE;
    static const int kValues[][2] = {
        {1, 1024}, {2, 1024}, {3, 1024}, {4, 64},        // max threads per block, block dims
        {5, 2147483647}, {6, 65535}, {7, 65535},         // grid dims
        {8, 49152}, {9, 65536}, {10, 32}, {12, 65536},   // shared/block, constant, warp, registers/block
        {13, 1980000}, {16, 132}, {39, 2048}, {81, 233472},  // clock kHz, SMs, threads and shared per SM
        {19, 1}, {31, 1}, {37, 5120}, {38, 52428800},    // map host, concurrent kernels, bus width, L2
        {40, 3}, {41, 1}, {75, 9}, {76, 0},              // copy engines, UVA, compute capability 9.0
        {83, 1}, {89, 1}, {91, 1}, {99, 1},              // managed (+concurrent), registered host ptr, register
        {102, 1}, {115, 1},                              // virtual memory management, memory pools
        {122, 1}, {123, 1}, {125, 1},                    // 64-bit stream memory ops, wait NOR, IPC events
    };
    *v = attrib == 33 ? 0x18 + d : 0;  // PCI_BUS_ID; PCI_DEVICE_ID (34) and PCI_DOMAIN_ID (50) are 0
    if (attrib == 20) *v = compute_mode();  // COMPUTE_MODE
    for (const auto &kv : kValues)
        if (kv[0] == attrib) *v = kv[1];
    if (attrib == 122 && env_int("FAKECUDA_STREAM_MEMOPS", 1, 0, 1) == 0) *v = 0;  // a GPU without them
    return OK;
}

// Same device: 0, as the real driver answers.
FAKECUDA_API CUresult cuDeviceCanAccessPeer(int *can, CUdevice d, CUdevice peer) {
    if (CUresult rc = dev_call(can, d)) return rc;
    if (!valid_dev(peer)) return E_DEVICE;
    return put(can, d != peer);
}

FAKECUDA_API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice d) {
    if (CUresult rc = dev_call(pctx, d)) return rc;
    std::lock_guard<std::mutex> l(g().mu);
    if (compute_mode() == 2 || (compute_mode() == 3 && has_own_ctx(d))) return E_DEVICE_UNAVAILABLE;
    ++g().ctx[d].refs;
    return put(pctx, &g().ctx[d]);
}

FAKECUDA_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
    if (CUresult rc = dev_call(&d, d)) return rc;
    std::lock_guard<std::mutex> l(g().mu);
    if (g().ctx[d].refs == 0) return E_CONTEXT;
    --g().ctx[d].refs;
    return OK;
}

// A context of this process: a primary one or one of its own. Caller holds g().mu.
bool known_ctx(CUcontext ctx) {
    if (ctx >= g().ctx && ctx < g().ctx + g().ndev) return true;
    for (auto &c : g().own_ctx)
        if (c.get() == ctx) return true;
    return false;
}

FAKECUDA_API CUresult cuCtxSetCurrent(CUcontext ctx) {
    if (CUresult rc = ready(false)) return rc;
    std::lock_guard<std::mutex> l(g().mu);
    if (ctx != nullptr && !known_ctx(ctx)) return E_CONTEXT;
    return put(&tl_ctx, ctx);
}

// A context of the application's own, made current (the real one pushes it).
FAKECUDA_API CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned flags, CUdevice d) {
    if (CUresult rc = dev_call(pctx, d)) return rc;
    std::lock_guard<std::mutex> l(g().mu);
    if (compute_mode() == 2 || (compute_mode() == 3 && (g().ctx[d].refs > 0 || has_own_ctx(d))))
        return E_DEVICE_UNAVAILABLE;
    (void)flags;
    g().own_ctx.emplace_back(new CUctx_st{d, 1});
    tl_ctx = g().own_ctx.back().get();
    return put(pctx, tl_ctx);
}

FAKECUDA_API CUresult cuCtxDestroy_v2(CUcontext ctx) {
    if (CUresult rc = ready(false)) return rc;
    std::lock_guard<std::mutex> l(g().mu);
    for (auto it = g().own_ctx.begin(); it != g().own_ctx.end(); ++it) {
        if (it->get() != ctx) continue;
        if (tl_ctx == ctx) tl_ctx = nullptr;
        g().own_ctx.erase(it);
        return OK;
    }
    return E_CONTEXT;
}

FAKECUDA_API CUresult cuCtxGetCurrent(CUcontext *pctx) {
    if (CUresult rc = ready(false, pctx != nullptr)) return rc;
    return put(pctx, tl_ctx);
}

FAKECUDA_API CUresult cuCtxGetDevice(CUdevice *d) {
    if (CUresult rc = ready(true, d != nullptr)) return rc;
    return put(d, tl_ctx->dev);
}

FAKECUDA_API CUresult cuCtxSynchronize() {
    if (CUresult rc = ready(true)) return rc;
    bump(counters().host_waits);
    drain_all(false);
    return OK;
}

FAKECUDA_API CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
    if (CUresult rc = ready(true, free_bytes != nullptr && total != nullptr)) return rc;
    const unsigned long long used = fakecuda::devmem_used(tl_ctx->dev);
    *total = kTotalMem;
    return put(free_bytes, used < kTotalMem ? kTotalMem - used : 0);
}

// ---- memory ---------------------------------------------------------------------------

namespace {

// Device memory of kind k (Device or Pool): a memfd named after its id, in the arena.
// Caller holds g().mu.
CUresult dev_alloc(CUdeviceptr *dptr, size_t bytes, size_t ms, Kind k) {
    if (bytes > kTotalMem - live_dev_bytes()) return E_MEMORY;
    const unsigned long long id = g().next_id++;
    int fd = memfd_create(mem_name(id).c_str(), MFD_CLOEXEC);
    if (fd < 0) return E_MEMORY;
    char *va = nullptr, *shadow = nullptr;
    if (ftruncate(fd, (off_t)ms) != 0 || map_pair(fd, ms, &va, &shadow) != OK) {
        close(fd);
        return E_MEMORY;
    }
    g().ranges[(uintptr_t)va] = Range{k, bytes, ms, shadow, fd, id, tl_ctx->dev, 1, {}};
    g().ranges[(uintptr_t)va].ctx = tl_ctx;
    ++g().total_dev;
    fakecuda::devmem_add(tl_ctx->dev, dev_pages(bytes));
    *dptr = (CUdeviceptr)va;
    return OK;
}

}  // namespace

FAKECUDA_API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes) {
    if (CUresult rc = ready(true, dptr != nullptr && bytes != 0)) return rc;
    unsigned long long at_least = 0;
    if (fail("alloc", &at_least) && bytes >= at_least) return E_MEMORY;
    const size_t ms = page_round(bytes);
    std::lock_guard<std::mutex> l(g().mu);
    return dev_alloc(dptr, bytes, ms, Kind::Device);
}

FAKECUDA_API CUresult cuMemFree_v2(CUdeviceptr p) {
    if (p == 0) return ready(false);
    return free_range(p, Kind::Device, Kind::Managed, E_VALUE);
}

FAKECUDA_API CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytes, unsigned flags) {
    const bool attach_ok = flags == 1 || flags == 2;  // CU_MEM_ATTACH_GLOBAL or _HOST
    if (CUresult rc = ready(true, dptr != nullptr && bytes != 0 && attach_ok)) return rc;
    return host_alloc(bytes, Kind::Managed, reinterpret_cast<void **>(dptr));
}

FAKECUDA_API CUresult cuMemHostAlloc(void **pp, size_t bytes, unsigned flags) {
    if (CUresult rc = ready(true, pp != nullptr && bytes != 0 && !(flags & ~0x7u))) return rc;
    return host_alloc(bytes, Kind::Host, pp);
}

FAKECUDA_API CUresult cuMemAllocHost_v2(void **pp, size_t bytes) { return cuMemHostAlloc(pp, bytes, 0); }

FAKECUDA_API CUresult cuMemFreeHost(void *p) {
    return free_range((uintptr_t)p, Kind::Host, Kind::Host, E_VALUE);
}

FAKECUDA_API CUresult cuMemHostRegister_v2(void *p, size_t bytes, unsigned flags) {
    if (CUresult rc = ready(true, p != nullptr && bytes != 0 && !(flags & ~0xfu))) return rc;
    const uintptr_t a = (uintptr_t)p;
    std::lock_guard<std::mutex> l(g().mu);
    auto it = g().ranges.lower_bound(a + bytes);  // the first range starting at or after our end
    if (it != g().ranges.begin() && (--it)->first + it->second.size > a) return E_REGISTERED;
    g().ranges[a] = Range{Kind::Registered, bytes, bytes, nullptr, -1, g().next_id++, tl_ctx->dev, 1, {}};
    return OK;
}

FAKECUDA_API CUresult cuMemHostUnregister(void *p) {
    return free_range((uintptr_t)p, Kind::Registered, Kind::Registered, E_NOT_REGISTERED);
}

// Unified addressing: the device sees pinned host memory at its host address.
FAKECUDA_API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *dptr, void *p, unsigned flags) {
    if (CUresult rc = ready(true, dptr != nullptr && flags == 0)) return rc;
    std::lock_guard<std::mutex> l(g().mu);
    const Range *r = find((uintptr_t)p, nullptr);
    if (r == nullptr || (r->kind != Kind::Host && r->kind != Kind::Registered)) return E_VALUE;
    return put(dptr, (CUdeviceptr)p);
}

FAKECUDA_API CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p) {
    if (CUresult rc = ready(true)) return rc;
    std::lock_guard<std::mutex> l(g().mu);
    uintptr_t start = 0;
    const Range *r = find(p, &start);
    if (r == nullptr) return E_NOT_FOUND;
    if (base) *base = start;
    if (size) *size = r->size;
    return OK;
}

FAKECUDA_API CUresult cuPointerGetAttribute(void *data, int attribute, CUdeviceptr p) {
    if (CUresult rc = ready(false, data != nullptr)) return rc;
    std::lock_guard<std::mutex> l(g().mu);
    return attr(attribute, data, p);
}

// Only SYNC_MEMOPS can be set, and only on device memory (cuMemAlloc, managed, pool,
// VMM, IPC-opened), as the driver documents; the value is a bool (unsigned int), 0 or
// 1. The fake's synchronous copies are already synchronous, so the flag is only kept
// (and read back through cuPointerGetAttribute).
FAKECUDA_API CUresult cuPointerSetAttribute(const void *value, int attribute, CUdeviceptr p) {
    if (CUresult rc = ready(true, value != nullptr && attribute == 6)) return rc;
    unsigned v = 0;
    std::memcpy(&v, value, sizeof v);
    if (v > 1) return E_VALUE;
    std::lock_guard<std::mutex> l(g().mu);
    Range *r = find(p, nullptr);
    if (r == nullptr || r->kind == Kind::Host || r->kind == Kind::Registered) return E_VALUE;
    r->sync_memops = v != 0;
    return OK;
}

// Unlike the singular form, unknown pointers succeed with every value zero.
FAKECUDA_API CUresult cuPointerGetAttributes(unsigned n, int *attrs, void **data, CUdeviceptr p) {
    if (CUresult rc = ready(false, n != 0 && attrs != nullptr && data != nullptr)) return rc;
    std::lock_guard<std::mutex> l(g().mu);
    for (unsigned i = 0; i < n; ++i) {
        if (attr_size(attrs[i]) == 0 || data[i] == nullptr) return E_VALUE;
        if (attr(attrs[i], data[i], p) != OK) std::memset(data[i], 0, attr_size(attrs[i]));
    }
    return OK;
}

// ---- copies and memsets ---------------------------------------------------------------
// A side the name calls D must be memory the driver knows (device, managed, IPC-opened,
// pinned or registered); cuMemcpy/cuMemcpyAsync take any address (unified addressing).

typedef CUdeviceptr Dp;
typedef CUstream St;
FAKECUDA_API CUresult cuMemcpy(Dp dst, Dp src, size_t n) { return synced(copy(dst, src, n, 0, false, false)); }
FAKECUDA_API CUresult cuMemcpyHtoD_v2(Dp dst, const void *src, size_t n) {
    return synced(copy(dst, (Dp)src, n, 0, true, false));
}
FAKECUDA_API CUresult cuMemcpyDtoH_v2(void *dst, Dp src, size_t n) {
    return synced(copy((Dp)dst, src, n, 0, false, true));
}
FAKECUDA_API CUresult cuMemcpyDtoD_v2(Dp dst, Dp src, size_t n) {
    return synced(copy(dst, src, n, 0, true, true));
}
FAKECUDA_API CUresult cuMemcpyAsync(Dp dst, Dp src, size_t n, St s) { return copy(dst, src, n, s, false, false); }
FAKECUDA_API CUresult cuMemcpyHtoDAsync_v2(Dp dst, const void *src, size_t n, St s) {
    return copy(dst, (Dp)src, n, s, true, false);
}
FAKECUDA_API CUresult cuMemcpyDtoHAsync_v2(void *dst, Dp src, size_t n, St s) {
    return copy((Dp)dst, src, n, s, false, true);
}
FAKECUDA_API CUresult cuMemsetD8_v2(Dp dst, unsigned char v, size_t n) { return synced(fill(dst, v, n, 1, 0)); }
FAKECUDA_API CUresult cuMemsetD32_v2(Dp dst, unsigned v, size_t n) { return synced(fill(dst, v, n, 4, 0)); }
FAKECUDA_API CUresult cuMemsetD8Async(Dp dst, unsigned char v, size_t n, St s) { return fill(dst, v, n, 1, s); }
FAKECUDA_API CUresult cuMemsetD32Async(Dp dst, unsigned v, size_t n, St s) { return fill(dst, v, n, 4, s); }

// ---- streams ------------------------------------------------------------------------------

FAKECUDA_API CUresult cuStreamCreate(CUstream *ps, unsigned flags) {
    if (CUresult rc = ready(true, ps != nullptr && !(flags & ~STREAM_NON_BLOCKING))) return rc;
    auto s = std::make_shared<CUstream_st>();
    s->flags = flags;
    s->worker = std::thread(run_worker, s.get());
    std::lock_guard<std::mutex> l(g().mu);
    g().streams[s.get()] = s;
    *ps = s.get();
    return OK;
}

FAKECUDA_API CUresult cuStreamDestroy_v2(CUstream s) {
    if (CUresult rc = ready(false)) return rc;
    std::shared_ptr<CUstream_st> sp;
    {
        std::lock_guard<std::mutex> l(g().mu);
        auto it = g().streams.find(s);
        if (it == g().streams.end()) return E_HANDLE;
        sp = it->second;
        g().streams.erase(it);
    }
    std::unique_lock<std::mutex> l(sp->mu);
    sp->stop = true;
    sp->cv.notify_all();
    l.unlock();
    sp->worker.join();  // the worker drains the queue before it stops
    return OK;
}

FAKECUDA_API CUresult cuStreamSynchronize(CUstream s) {
    if (CUresult rc = ready(false)) return rc;
    std::shared_ptr<CUstream_st> sp;
    if (CUresult rc = lookup_stream(s, &sp)) return rc;
    bump(counters().host_waits);
    if (sp) drain(sp.get());
    else if (reinterpret_cast<uintptr_t>(s) != 2) drain_all(true);
    return OK;
}

FAKECUDA_API CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags) {
    if (CUresult rc = ready(false, !(flags & ~1u))) return rc;
    std::shared_ptr<EvState> st = event_state(e);
    if (!st) return E_HANDLE;
    const unsigned long long target = st->recorded.load();  // the latest record as of now
    if (CUresult rc = submit(s, [st, target] { wait_reached(*st, target); })) return rc;
    bump(counters().stream_waits);
    return OK;
}

FAKECUDA_API CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void *user) {
    if (CUresult rc = ready(false, fn != nullptr)) return rc;
    return submit(s, [fn, user] { fn(user); });
}

namespace {

// Stream memory operations on a 32- or 64-bit word of memory the driver knows, aligned
// to its size. Waits: GEQ 0 (cyclic), EQ 1, AND 2, NOR 3, optionally | FLUSH (1 << 30).
template <typename T>
CUresult wait_value(CUstream s, CUdeviceptr addr, T value, unsigned flags) {
    const unsigned op = flags & ~(1u << 30);
    if (CUresult rc = ready(true, addr % sizeof(T) == 0 && op <= 3)) return rc;
    char *p = nullptr;
    {
        std::lock_guard<std::mutex> l(g().mu);
        if (CUresult rc = xlate(addr, sizeof(T), true, &p)) return rc;
    }
    const CUresult rc = submit(s, [p, value, op] {
        for (;;) {
            const T v = __atomic_load_n(reinterpret_cast<T *>(p), __ATOMIC_ACQUIRE);
            const bool met = op == 0 ? (typename std::make_signed<T>::type)(v - value) >= 0 : op == 1 ? v == value
                           : op == 2 ? (v & value) != 0 : ~(v | value) != 0;
            if (met) return;
            usleep(20);
        }
    });
    if (rc == OK) bump(counters().stream_waits);
    return rc;
}

// Writes: DEFAULT 0, or NO_MEMORY_BARRIER 1 (the fake's store is ordered either way).
template <typename T>
CUresult write_value(CUstream s, CUdeviceptr addr, T value, unsigned flags) {
    if (CUresult rc = ready(true, addr % sizeof(T) == 0 && flags <= 1)) return rc;
    char *p = nullptr;
    {
        std::lock_guard<std::mutex> l(g().mu);
        if (CUresult rc = xlate(addr, sizeof(T), true, &p)) return rc;
    }
    const CUresult rc =
        submit(s, [p, value] { __atomic_store_n(reinterpret_cast<T *>(p), value, __ATOMIC_RELEASE); });
    if (rc == OK) bump(counters().stream_writes);
    return rc;
}

}  // namespace

FAKECUDA_API CUresult cuStreamWaitValue32_v2(CUstream s, CUdeviceptr addr, unsigned value, unsigned flags) {
    return wait_value<uint32_t>(s, addr, value, flags);
}
FAKECUDA_API CUresult cuStreamWaitValue64_v2(CUstream s, CUdeviceptr addr, unsigned long long value,
                                             unsigned flags) {
    return wait_value<uint64_t>(s, addr, value, flags);
}
FAKECUDA_API CUresult cuStreamWriteValue32_v2(CUstream s, CUdeviceptr addr, unsigned value, unsigned flags) {
    return write_value<uint32_t>(s, addr, value, flags);
}
FAKECUDA_API CUresult cuStreamWriteValue64_v2(CUstream s, CUdeviceptr addr, unsigned long long value,
                                              unsigned flags) {
    return write_value<uint64_t>(s, addr, value, flags);
}

// ---- events ---------------------------------------------------------------------------------

FAKECUDA_API CUresult cuEventCreate(CUevent *pe, unsigned flags) {
    const bool ipc_ok = !(flags & EVENT_INTERPROCESS) || (flags & EVENT_DISABLE_TIMING);  // as the real driver
    if (CUresult rc = ready(true, pe != nullptr && !(flags & ~0x7u) && ipc_ok)) return rc;
    std::unique_ptr<CUevent_st> ev(new CUevent_st{flags, nullptr, -1});
    if (flags & EVENT_INTERPROCESS) {
        int fd = memfd_create("fakecuda-event", MFD_CLOEXEC);
        if (fd < 0) return E_MEMORY;
        if (ftruncate(fd, (off_t)page_round(sizeof(EvState))) != 0 || !(ev->st = map_event(fd, true))) {
            close(fd);
            return E_MEMORY;
        }
        ev->fd = fd;
    } else {
        ev->st = std::make_shared<EvState>();
    }
    return add_event(std::move(ev), pe);
}

FAKECUDA_API CUresult cuEventRecord(CUevent e, CUstream s) {
    if (CUresult rc = ready(false)) return rc;
    std::shared_ptr<EvState> st = event_state(e);
    if (!st) return E_HANDLE;
    std::shared_ptr<CUstream_st> sp;
    if (CUresult rc = lookup_stream(s, &sp)) return rc;  // before counting a record
    const unsigned long long target = st->recorded.fetch_add(1) + 1;
    bump(counters().events_recorded);
    return submit(s, [st, target] { advance(st->completed, target); });
}

FAKECUDA_API CUresult cuEventQuery(CUevent e) {
    if (CUresult rc = ready(false)) return rc;
    std::shared_ptr<EvState> st = event_state(e);
    if (!st) return E_HANDLE;
    count_poll(e);
    return st->completed.load() >= st->recorded.load() ? OK : E_NOT_READY;
}

FAKECUDA_API CUresult cuEventSynchronize(CUevent e) {
    if (CUresult rc = ready(false)) return rc;
    std::shared_ptr<EvState> st = event_state(e);
    if (!st) return E_HANDLE;
    bump(counters().host_waits);
    wait_reached(*st, st->recorded.load());
    return OK;
}

FAKECUDA_API CUresult cuEventDestroy_v2(CUevent e) {
    if (CUresult rc = ready(false)) return rc;
    std::unique_ptr<CUevent_st> ev;
    {
        std::lock_guard<std::mutex> l(g().mu);
        auto it = g().events.find(e);
        if (it == g().events.end()) return E_HANDLE;
        ev = std::move(it->second);
        g().events.erase(it);
    }
    if (ev->fd >= 0) close(ev->fd);
    return OK;
}

// ---- IPC ------------------------------------------------------------------------------------

// The handle names the whole allocation holding p (p may be interior).
FAKECUDA_API CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr p) {
    if (CUresult rc = ready(true, h != nullptr)) return rc;
    if (fail("ipc_get")) return E_NOT_SUPPORTED;
    std::lock_guard<std::mutex> l(g().mu);
    const Range *r = find(p, nullptr);
    if (r == nullptr || r->kind != Kind::Device) return E_VALUE;  // not Pool nor Vmm: not legacy IPC
    uintptr_t start = 0;
    find(p, &start);
    put_handle(h->reserved, kMemMagic, MemHandle{{}, getpid(), r->fd, r->dev, r->size, r->id, start});
    return OK;
}

// Maps the exporter's memfd again (PROT_NONE + shadow). A second open of the same handle
// returns the same address and counts a reference; the exporting process may not open it,
// unless FAKECUDA_IPC_SELF=1 (read at each open): then it gets a mapping of its own, as
// another process would, so that tests with ranks as threads can share device memory.
FAKECUDA_API CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned flags) {
    if (CUresult rc = ready(true)) return rc;
    MemHandle h;
    std::memcpy(&h, handle.reserved, sizeof h);
    if (pdptr == nullptr || (flags & ~1u) || std::memcmp(h.magic, kMemMagic, 8) != 0) return E_VALUE;
    if (h.pid == (long long)getpid() && env_int("FAKECUDA_IPC_SELF", 0, 0, 1) == 0) return E_CONTEXT;
    if (fail("ipc_open")) return E_MAP_FAILED;
    const auto key = std::make_pair((long)h.pid, h.id);
    std::lock_guard<std::mutex> l(g().mu);
    auto it = g().ipc_open.find(key);
    if (it != g().ipc_open.end()) {
        ++g().ranges[it->second].refs;
        *pdptr = it->second;
        return OK;
    }
    // Another allocation of that exporter still mapped here over the same addresses:
    // it was freed, and the driver still holds its mapping.
    for (auto &kv : g().ipc_open) {
        const Range &old = g().ranges[kv.second];
        if (kv.first.first == (long)h.pid && old.peer_start < h.start + h.size && h.start < old.peer_start + old.size) {
            if (env_int("FAKECUDA_VERBOSE", 0, 0, 2))
                std::fprintf(stderr, "fakecuda: cuIpcOpenMemHandle of buffer %llu [%#llx, +%llu): buffer %llu "
                             "[%#lx, +%zu) of that process is still mapped here\n", h.id, h.start, h.size,
                             kv.first.second, (unsigned long)old.peer_start, old.size);
            return E_ALREADY_MAPPED;
        }
    }
    int fd = open_peer_fd(h.pid, h.fd);
    if (fd < 0) return E_MAP_FAILED;
    const size_t ms = page_round(h.size);
    struct stat sb;
    char *va = nullptr, *shadow = nullptr;
    const bool ok = is_memfd_named(fd, mem_name(h.id)) && fstat(fd, &sb) == 0 && (size_t)sb.st_size == ms &&
                    map_pair(fd, ms, &va, &shadow) == OK;
    close(fd);
    if (!ok) return E_MAP_FAILED;
    g().ranges[(uintptr_t)va] = Range{Kind::Ipc, h.size, ms, shadow, -1, g().next_id++, tl_ctx->dev, 1, key,
                                      (uintptr_t)h.start};
    g().ranges[(uintptr_t)va].ctx = tl_ctx;
    g().ipc_open[key] = (uintptr_t)va;
    if (env_int("FAKECUDA_VERBOSE", 0, 0, 2) == 2)
        std::fprintf(stderr, "fakecuda: mapped buffer %llu [%#llx, +%llu) of pid %lld\n", h.id, h.start, h.size, h.pid);
    *pdptr = (CUdeviceptr)va;
    return OK;
}

FAKECUDA_API CUresult cuIpcCloseMemHandle(CUdeviceptr p) {
    return free_range(p, Kind::Ipc, Kind::Ipc, E_VALUE);
}

FAKECUDA_API CUresult cuIpcGetEventHandle(CUipcEventHandle *h, CUevent e) {
    if (CUresult rc = ready(true, h != nullptr)) return rc;
    std::lock_guard<std::mutex> l(g().mu);
    auto it = g().events.find(e);
    if (it == g().events.end()) return E_HANDLE;
    if (it->second->fd < 0) return E_VALUE;  // not CU_EVENT_INTERPROCESS, or itself imported
    put_handle(h->reserved, kEventMagic, EventHandle{{}, getpid(), it->second->fd});
    return OK;
}

FAKECUDA_API CUresult cuIpcOpenEventHandle(CUevent *pe, CUipcEventHandle handle) {
    if (CUresult rc = ready(true)) return rc;
    EventHandle h;
    std::memcpy(&h, handle.reserved, sizeof h);
    if (pe == nullptr || std::memcmp(h.magic, kEventMagic, 8) != 0) return E_VALUE;
    if (h.pid == (long long)getpid()) return E_CONTEXT;
    int fd = open_peer_fd(h.pid, h.fd);
    if (fd < 0) return E_MAP_FAILED;
    std::shared_ptr<EvState> st = map_event(fd, false);
    close(fd);
    if (!st) return E_MAP_FAILED;
    std::unique_ptr<CUevent_st> ev(new CUevent_st{EVENT_INTERPROCESS | EVENT_DISABLE_TIMING, st, -1});
    return add_event(std::move(ev), pe);
}

// ---- modules and kernels --------------------------------------------------------------
// The kernels of src/mem/cuda_kernels.cu, run by the stream's worker: the same left fold
// over the host functors, reading every source of an element before writing it into
// every destination.

namespace {

template <class T, class Op>
void fold_as(char *const *dsts, int ndst, char *const *srcs, int nsrc, unsigned long long count) {
    const Op op{};
    for (unsigned long long i = 0; i < count; ++i) {
        T acc = reinterpret_cast<const T *>(srcs[0])[i];
        for (int k = 1; k < nsrc; ++k) acc = op(acc, reinterpret_cast<const T *>(srcs[k])[i]);
        for (int d = 0; d < ndst; ++d) reinterpret_cast<T *>(dsts[d])[i] = acc;
    }
}

// Fills in how to run kKernels[k] (a pair the list holds, so the functor applies).
void describe(CUfunc_st *f) {
    const strata::kern::Kernel &kn = strata::kern::kKernels[f->kernel];
    strata::dispatch_type(kn.dtype, [&](auto *tp) {
        using T = std::remove_pointer_t<decltype(tp)>;
        if constexpr (!std::is_void<T>::value) {
            f->elem_size = sizeof(T);
            f->elem_align = alignof(T);
            strata::dispatch_op(kn.op, [&](auto opv) {
                using Op = decltype(opv);
                if constexpr (!std::is_same<Op, std::nullptr_t>::value) {
                    if constexpr (strata::ops::applies<T, Op>::value) f->fold = &fold_as<T, Op>;
                }
            });
        }
    });
}

}  // namespace

FAKECUDA_API CUresult cuModuleLoadData(CUmodule *pm, const void *image) {
    if (CUresult rc = ready(true, pm != nullptr && image != nullptr)) return rc;
    std::string why;
    if (CUresult rc = fakecuda::image_loadable(image, kComputeCapability, driver_version(), &why)) {
        if (env_int("FAKECUDA_VERBOSE", 0, 0, 2)) std::fprintf(stderr, "fakecuda: cuModuleLoadData: %s\n", why.c_str());
        return rc;
    }
    std::unique_ptr<CUmod_st> m(new CUmod_st{tl_ctx, {}});
    std::lock_guard<std::mutex> l(g().mu);
    *pm = m.get();
    g().modules[m.get()] = std::move(m);
    return OK;
}

// Work already queued keeps what it needs, so unloading never races it.
FAKECUDA_API CUresult cuModuleUnload(CUmodule m) {
    if (CUresult rc = ready(false)) return rc;
    std::lock_guard<std::mutex> l(g().mu);
    return g().modules.erase(m) ? OK : E_HANDLE;
}

FAKECUDA_API CUresult cuModuleGetFunction(CUfunction *pf, CUmodule m, const char *name) {
    if (CUresult rc = ready(true, pf != nullptr && name != nullptr)) return rc;
    std::lock_guard<std::mutex> l(g().mu);
    if (g().modules.count(m) == 0) return E_HANDLE;
    const int k = strata::kern::kernel_by_name(name);
    if (k < 0) return E_NOT_FOUND;
    std::unique_ptr<CUfunc_st> &f = m->fns[k];
    if (!f) {
        f.reset(new CUfunc_st{m, k, 0, 0, nullptr});
        describe(f.get());
        if (f->fold == nullptr) {
            f.reset();
            return E_NOT_FOUND;
        }
    }
    return put(pf, f.get());
}

// The checks a real launch makes (limits of the H100-like part), then the parameters of
// strata's kernels, (Dsts d, int ndst, Srcs s, int nsrc, unsigned long long count):
// 1 <= ndst <= kMaxDsts, 1 <= nsrc <= kMaxSrcs, every operand memory the driver knows (as a device address; plain host
// memory would fault on a GPU) with count elements in range. An operand not aligned
// for the type is accepted, and faults when the kernel runs: the error is sticky
// (ready()), as a GPU's misaligned load kills the context. The `extra` way of passing
// parameters is not supported.
FAKECUDA_API CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                     unsigned bz, unsigned shared, CUstream s, void **params, void **extra) {
    bump(counters().launches);
    if (CUresult rc = ready(true)) return rc;
    if (extra != nullptr) return E_NOT_SUPPORTED;
    const bool shape_ok = gx >= 1 && gy >= 1 && gz >= 1 && gx <= 2147483647u && gy <= 65535 && gz <= 65535 &&
                          bx >= 1 && by >= 1 && bz >= 1 && bx <= 1024 && by <= 1024 && bz <= 64 &&
                          (unsigned long long)bx * by * bz <= 1024 && shared <= 49152;
    if (!shape_ok || params == nullptr) return E_VALUE;
    for (int i = 0; i < 5; ++i)
        if (params[i] == nullptr) return E_VALUE;
    const strata::kern::Dsts dsts = *static_cast<const strata::kern::Dsts *>(params[0]);
    const int ndst = *static_cast<const int *>(params[1]);
    const strata::kern::Srcs srcs = *static_cast<const strata::kern::Srcs *>(params[2]);
    const int nsrc = *static_cast<const int *>(params[3]);
    const unsigned long long count = *static_cast<const unsigned long long *>(params[4]);
    if (nsrc < 1 || nsrc > strata::kern::kMaxSrcs || ndst < 1 || ndst > strata::kern::kMaxDsts) return E_VALUE;
    CUfunc_st fn;
    std::vector<char *> to((size_t)ndst), from((size_t)nsrc);
    bool misaligned = false, foreign = false;
    {
        std::lock_guard<std::mutex> l(g().mu);
        bool live = false;  // without touching *f, which may be gone with its module
        for (auto &kv : g().modules)
            for (const auto &known : kv.second->fns) live = live || (f != nullptr && known.get() == f);
        if (!live) return E_HANDLE;
        if (f->mod->ctx != tl_ctx) return E_CONTEXT;
        fn = *f;
        if (count > SIZE_MAX / fn.elem_size) return E_VALUE;
        const size_t bytes = count * fn.elem_size;
        auto operand = [&](const void *p, char **out) -> CUresult {
            misaligned = misaligned || (uintptr_t)p % fn.elem_align != 0;
            const Range *r = find((uintptr_t)p, nullptr);
            foreign = foreign || (r != nullptr && r->ctx != nullptr && r->ctx != tl_ctx);
            if (bytes == 0) return OK;
            return xlate((CUdeviceptr)(uintptr_t)p, bytes, true, out);
        };
        for (int i = 0; i < ndst; ++i)
            if (CUresult rc = operand(dsts.p[i], &to[(size_t)i])) return rc;
        for (int i = 0; i < nsrc; ++i)
            if (CUresult rc = operand(srcs.p[i], &from[(size_t)i])) return rc;
    }
    count_bytes((unsigned long long)nsrc * count * fn.elem_size, (unsigned long long)ndst * count * fn.elem_size);
    if (count == 0) return submit(s, [] {});
    if (misaligned || foreign) {  // another context's memory is not mapped in this one
        const int fault = misaligned ? E_MISALIGNED : E_ILLEGAL_ADDRESS;
        return submit(s, [fault] {
            int none = 0;
            g().sticky.compare_exchange_strong(none, fault);
        });
    }
    return submit(s, [fn, to, ndst, from, nsrc, count] { fn.fold(to.data(), ndst, from.data(), nsrc, count); });
}

// ---- stream-ordered and virtual-memory allocations --------------------------------------
// Device memory like cuMemAlloc's, but not shareable through legacy CUDA IPC. The fake
// frees stream-ordered memory once the stream has drained (the real one when the
// stream reaches the free); either way nothing queued later may use it.

FAKECUDA_API CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytes, CUstream s) {
    if (CUresult rc = ready(true, dptr != nullptr && bytes != 0)) return rc;
    std::shared_ptr<CUstream_st> sp;
    if (CUresult rc = lookup_stream(s, &sp)) return rc;
    std::lock_guard<std::mutex> l(g().mu);
    return dev_alloc(dptr, bytes, page_round(bytes), Kind::Pool);
}

FAKECUDA_API CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) {
    if (CUresult rc = ready(true)) return rc;
    std::shared_ptr<CUstream_st> sp;
    if (CUresult rc = lookup_stream(s, &sp)) return rc;
    if (sp) drain(sp.get());
    return free_range(p, Kind::Pool, Kind::Pool, E_VALUE);
}

FAKECUDA_API CUresult cuMemGetAllocationGranularity(size_t *gran, const void *prop, int option) {
    if (CUresult rc = ready(false, gran != nullptr && prop != nullptr && (option == 0 || option == 1))) return rc;
    return put(gran, kVmmGranularity);
}

// prop (a CUmemAllocationProp) is taken as "pinned device memory of the current GPU".
FAKECUDA_API CUresult cuMemCreate(unsigned long long *handle, size_t size, const void *prop,
                                  unsigned long long flags) {
    const bool ok = handle != nullptr && prop != nullptr && flags == 0 && size != 0 && size % kVmmGranularity == 0;
    if (CUresult rc = ready(true, ok)) return rc;
    std::lock_guard<std::mutex> l(g().mu);
    if (size > kTotalMem - live_dev_bytes()) return E_MEMORY;
    const unsigned long long id = g().next_id++;
    const int fd = memfd_create(mem_name(id).c_str(), MFD_CLOEXEC);
    if (fd < 0) return E_MEMORY;
    if (ftruncate(fd, (off_t)size) != 0) {
        close(fd);
        return E_MEMORY;
    }
    g().vmm[id] = VmmAlloc{fd, tl_ctx->dev, size, 0, false};
    ++g().total_dev;
    fakecuda::devmem_add(tl_ctx->dev, dev_pages(size));
    return put(handle, id);
}

namespace {

// Drops a released, unmapped cuMemCreate allocation. Caller holds g().mu.
void vmm_maybe_drop(std::map<unsigned long long, VmmAlloc>::iterator it) {
    if (!it->second.released || it->second.maps > 0) return;
    close(it->second.fd);
    fakecuda::devmem_add(it->second.dev, -dev_pages(it->second.size));
    g().vmm.erase(it);
}

}  // namespace

FAKECUDA_API CUresult cuMemRelease(unsigned long long handle) {
    if (CUresult rc = ready(false)) return rc;
    std::lock_guard<std::mutex> l(g().mu);
    auto it = g().vmm.find(handle);
    if (it == g().vmm.end() || it->second.released) return E_VALUE;
    it->second.released = true;
    vmm_maybe_drop(it);
    return OK;
}

FAKECUDA_API CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t align, CUdeviceptr addr,
                                          unsigned long long flags) {
    const bool ok = ptr != nullptr && size != 0 && size % kVmmGranularity == 0 && flags == 0 &&
                    (align == 0 || align <= kVmmGranularity);
    if (CUresult rc = ready(false, ok)) return rc;
    (void)addr;  // a hint
    std::lock_guard<std::mutex> l(g().mu);
    char *p = arena_take(size);
    if (p == nullptr) return E_MEMORY;
    g().reserved[(uintptr_t)p] = size;
    return put(ptr, (CUdeviceptr)p);
}

FAKECUDA_API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
    if (CUresult rc = ready(false)) return rc;
    std::lock_guard<std::mutex> l(g().mu);
    auto it = g().reserved.find((uintptr_t)ptr);
    if (it == g().reserved.end() || it->second != size) return E_VALUE;
    for (auto &kv : g().ranges)  // still mapped inside
        if (kv.first >= ptr && kv.first < ptr + size) return E_VALUE;
    arena_give(reinterpret_cast<char *>(ptr));
    g().reserved.erase(it);
    return OK;
}

// The whole allocation at offset 0, inside a reserved range.
FAKECUDA_API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, unsigned long long handle,
                               unsigned long long flags) {
    if (CUresult rc = ready(false, flags == 0 && offset == 0)) return rc;
    std::lock_guard<std::mutex> l(g().mu);
    auto h = g().vmm.find(handle);
    if (h == g().vmm.end() || h->second.released || h->second.size != size) return E_VALUE;
    auto r = g().reserved.upper_bound((uintptr_t)ptr);
    if (r == g().reserved.begin() || (--r, ptr + size > r->first + r->second)) return E_VALUE;
    if (find((uintptr_t)ptr, nullptr) != nullptr || find((uintptr_t)ptr + size - 1, nullptr) != nullptr)
        return E_VALUE;  // already mapped there
    char *va = nullptr, *shadow = nullptr;
    if (map_pair(h->second.fd, size, &va, &shadow, reinterpret_cast<char *>(ptr)) != OK) return E_MEMORY;
    Range rg{Kind::Vmm, size, size, shadow, -1, g().next_id++, h->second.dev, 1, {}};
    rg.vmm = handle;
    g().ranges[(uintptr_t)va] = rg;
    ++h->second.maps;
    return OK;
}

FAKECUDA_API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const void *desc, size_t count) {
    if (CUresult rc = ready(false, desc != nullptr && count >= 1)) return rc;
    std::lock_guard<std::mutex> l(g().mu);
    uintptr_t start = 0;
    const Range *r = find((uintptr_t)ptr, &start);
    return r != nullptr && r->kind == Kind::Vmm && start == ptr && r->size == size ? OK : E_VALUE;
}

FAKECUDA_API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
    if (CUresult rc = ready(false)) return rc;
    drain_all(false);
    std::lock_guard<std::mutex> l(g().mu);
    auto it = g().ranges.find((uintptr_t)ptr);
    if (it == g().ranges.end() || it->second.kind != Kind::Vmm || it->second.size != size) return E_VALUE;
    const Range r = it->second;
    g().ranges.erase(it);
    // Back to reserved address space (the reservation stays).
    mmap(reinterpret_cast<void *>(ptr), size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1,
         0);
    munmap(r.shadow, r.map_size);
    auto h = g().vmm.find(r.vmm);
    if (h != g().vmm.end()) {
        --h->second.maps;
        vmm_maybe_drop(h);
    }
    return OK;
}
