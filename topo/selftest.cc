// SPDX-License-Identifier: BSD-3-Clause
// selftest.cc - two-process checks of shared memory and CUDA IPC; see selftest.h.
//
//   parent ── fork ──> exporter (A) ── socketpair ── importer (B) <── fork ── parent
//                          └──────── result pipe (one line per check) ────────┘
// A creates (segment, device buffer, IPC event); B opens and verifies. Every
// receive has a timeout and the parent kills both children at the deadline.
#include "topo/selftest.h"

#include "topo/cuda_api.h"
#include "topo/shm_segment.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace strata {
namespace topo {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

const int kMsgTimeoutMs = 20000;

enum MsgKind : int32_t { MSG_OK = 1, MSG_ERR = 2 };

struct Msg {
    int32_t kind = MSG_OK;
    int32_t value = 0;
    uint64_t size = 0;
    char text[256] = {0};
    shm::Locator where;  // an unnamed segment (text empty)
    cu::CUipcMemHandle mem;
    cu::CUipcEventHandle event;
};

// One process's side: the socket to its peer and the result pipe.
struct Side {
    int peer;
    int results;

    void report(const std::string &name, const char *status, double ms, const std::string &reason) {
        std::string r = reason.substr(0, 900);
        for (char &c : r)
            if (c == '\t' || c == '\n') c = ' ';
        char line[1200];
        int n = std::snprintf(line, sizeof line, "%s\t%s\t%.3f\t%s\n", name.c_str(), status, ms, r.c_str());
        // Below PIPE_BUF, so lines from the two children never interleave.
        ssize_t w = ::write(results, line, (size_t)n);
        (void)w;
    }
    bool send(const Msg &m) {
        const char *p = reinterpret_cast<const char *>(&m);
        size_t left = sizeof m;
        while (left > 0) {
            ssize_t n = ::send(peer, p, left, MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return false;
            p += n;
            left -= (size_t)n;
        }
        return true;
    }
    bool send_ok(int32_t value = 0, const std::string &text = "") {
        Msg m;
        m.value = value;
        std::snprintf(m.text, sizeof m.text, "%s", text.c_str());
        return send(m);
    }
    bool send_err(const std::string &why) {
        Msg m;
        m.kind = MSG_ERR;
        std::snprintf(m.text, sizeof m.text, "%s", why.c_str());
        return send(m);
    }
    // false with *why set on timeout, closed peer or an MSG_ERR from the peer.
    bool recv(Msg *m, std::string *why) {
        char *p = reinterpret_cast<char *>(m);
        size_t left = sizeof *m;
        while (left > 0) {
            struct pollfd pfd = {peer, POLLIN, 0};
            int rc = ::poll(&pfd, 1, kMsgTimeoutMs);
            if (rc < 0 && errno == EINTR) continue;
            if (rc == 0) {
                *why = "peer process did not answer within " + std::to_string(kMsgTimeoutMs / 1000) + " s";
                return false;
            }
            ssize_t n = ::recv(peer, p, left, 0);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                *why = "peer process went away";
                return false;
            }
            p += n;
            left -= (size_t)n;
        }
        if (m->kind == MSG_ERR) {
            *why = std::string("peer: ") + m->text;
            return false;
        }
        return true;
    }
};

inline uint8_t pattern_a(size_t i) { return (uint8_t)(i * 131u + 7u); }
inline uint8_t pattern_b(size_t i) { return (uint8_t)(i * 17u + 3u); }

std::string first_wrong(const uint8_t *p, size_t n, uint8_t (*pat)(size_t)) {
    for (size_t i = 0; i < n; ++i)
        if (p[i] != pat(i)) {
            char buf[128];
            std::snprintf(buf, sizeof buf, "byte %zu is 0x%02x, expected 0x%02x", i, p[i], pat(i));
            return buf;
        }
    return "";
}

std::string err_text(const std::string &what, int err) { return what + ": " + std::strerror(err); }

// ---- shared memory ---------------------------------------------------------

// The segment is made as strata makes it: unnamed, opened by the importer through
// the exporter's /proc/<pid>/fd; where /proc is refused (or the directory cannot hold
// unnamed files), named and unlinked as soon as the importer has mapped it.
//
//   exporter                                importer
//   create_unnamed ── locator (or name) ──> open, map   (shm.proc)
//                  <── MSG_ERR "no proc" ── /proc refused:
//   create named   ─────── name ─────────> open, map   (shm.open_map)
//                  <──────── mapped ──────
//   let go (shm.unlink)                     write back, read
const char kNoProc[] = "no proc";

void shm_exporter(Side &s, const SelftestOptions &o) {
    auto t0 = Clock::now();
    std::string name;
    int fd = -1;
    int rc = shm::create_unnamed(o.shm_bytes, &fd, o.shm_dir);
    if (rc == EOPNOTSUPP) rc = shm::create(o.shm_bytes, &name, &fd, o.shm_dir);
    struct stat st;
    void *base = nullptr;
    std::string why;
    if (rc != 0) why = err_text("create", rc);
    else if (::fstat(fd, &st) != 0) why = err_text("fstat", errno);
    else if ((st.st_mode & 0777) != 0600) why = "segment mode is not 0600";
    else if ((size_t)st.st_size != o.shm_bytes) why = "segment has the wrong size";
    else if ((rc = shm::map(fd, o.shm_bytes, &base)) != 0) why = err_text("mmap", rc);
    if (!why.empty()) {
        s.report("shm.create", "FAIL", ms_since(t0), why);
        s.send_err("exporter: " + why);
        if (!name.empty()) shm::unlink(name, o.shm_dir);
        if (fd >= 0) ::close(fd);
        return;
    }
    s.report("shm.create", "OK", ms_since(t0), "");
    uint8_t *p = static_cast<uint8_t *>(base);
    size_t half = o.shm_bytes / 2;
    for (size_t i = 0; i < half; ++i) p[i] = pattern_a(i);
    Msg m;
    if (name.empty()) shm::locate(fd, &m.where);
    std::snprintf(m.text, sizeof m.text, "%s", name.c_str());
    s.send(m);

    bool mapped = s.recv(&m, &why);
    if (!mapped && why == std::string("peer: ") + kNoProc && name.empty()) {
        // As strata does: a named segment with the same contents.
        int named_fd = -1;
        void *copy = nullptr;
        rc = shm::create(o.shm_bytes, &name, &named_fd, o.shm_dir);
        if (rc == 0 && (rc = shm::map(named_fd, o.shm_bytes, &copy)) == 0) {
            std::memcpy(copy, base, o.shm_bytes);
            shm::unmap(base, o.shm_bytes);
            ::close(fd);
            base = copy;
            p = static_cast<uint8_t *>(base);
            fd = named_fd;
            s.send_ok(0, name);
            mapped = s.recv(&m, &why);
        } else {
            why = err_text("create a named segment", rc);
            if (named_fd >= 0) ::close(named_fd);
            if (!name.empty()) shm::unlink(name, o.shm_dir);
            name.clear();
            s.send_err(why);
        }
    }
    // Let go as soon as both have mapped it (or the peer gave up): nothing outlives us.
    t0 = Clock::now();
    ::close(fd);
    if (name.empty()) {
        s.report("shm.unlink", "OK", ms_since(t0), "");  // never had a name
    } else {
        rc = shm::unlink(name, o.shm_dir);
        std::string path = shm::path_of(name, o.shm_dir);
        if (rc != 0) s.report("shm.unlink", "FAIL", ms_since(t0), err_text("unlink", rc));
        else if (::access(path.c_str(), F_OK) == 0 || errno != ENOENT)
            s.report("shm.unlink", "FAIL", ms_since(t0), path + " still exists after unlink");
        else
            s.report("shm.unlink", "OK", ms_since(t0), "");
    }
    if (mapped) {
        t0 = Clock::now();
        std::string wrong = first_wrong(p + half, o.shm_bytes - half, pattern_b);
        s.report("shm.write_back", wrong.empty() ? "OK" : "FAIL", ms_since(t0), wrong);
    } else {
        s.report("shm.write_back", "FAIL", 0.0, why);
    }
    s.send_ok();
    shm::unmap(base, o.shm_bytes);
}

void shm_importer(Side &s, const SelftestOptions &o) {
    Msg m;
    std::string why;
    if (!s.recv(&m, &why)) return;  // the exporter reported its failure
    auto t0 = Clock::now();
    int fd = -1;
    size_t size = 0;
    void *base = nullptr;
    int rc = 0;
    if (m.text[0] == '\0') {
        rc = shm::open_unnamed(m.where, &fd, &size);
        if (rc == 0) {
            s.report("shm.proc", "OK", ms_since(t0), "");
        } else {
            // Not a failure: strata uses a named segment here.
            s.report("shm.proc", "SKIP", ms_since(t0),
                     err_text("/proc/" + std::to_string(m.where.pid) + "/fd refused, strata falls back to a named "
                              "segment", rc));
            s.send_err(kNoProc);
            if (!s.recv(&m, &why)) {
                s.report("shm.open_map", "FAIL", ms_since(t0), why);
                return;
            }
        }
    }
    if (fd < 0) {
        std::string name(m.text);
        rc = shm::open(name, &fd, &size, o.shm_dir);
        if (rc != 0) why = err_text("open " + name, rc);
    }
    if (rc == 0 && size != o.shm_bytes) why = "segment size " + std::to_string(size) + " != " + std::to_string(o.shm_bytes);
    else if (rc == 0 && (rc = shm::map(fd, size, &base)) != 0) why = err_text("mmap", rc);
    if (fd >= 0) ::close(fd);  // the mapping keeps the segment
    if (!why.empty()) {
        s.report("shm.open_map", "FAIL", ms_since(t0), why);
        s.send_err("importer could not map the segment");
        return;
    }
    s.report("shm.open_map", "OK", ms_since(t0), "");
    t0 = Clock::now();
    uint8_t *p = static_cast<uint8_t *>(base);
    size_t half = size / 2;
    std::string wrong = first_wrong(p, half, pattern_a);
    s.report("shm.read", wrong.empty() ? "OK" : "FAIL", ms_since(t0), wrong);
    for (size_t i = half; i < size; ++i) p[i] = pattern_b(i - half);
    s.send_ok();
    s.recv(&m, &why);  // exporter done reading
    shm::unmap(base, size);
}

// ---- CUDA IPC --------------------------------------------------------------

const uint32_t kFinal = 0xC0FFEE01u;

// Both sides return false when the exchange stopped early (an error was sent
// or received); the loop over GPUs then stops too, so messages never go stale.
bool gpu_exporter_one(Side &s, cu::Driver &d, int dev, const SelftestOptions &o) {
    const std::string pre = "gpu" + std::to_string(dev) + ".";
    auto t0 = Clock::now();
    cu::CUdevice cdev = 0;
    cu::CUcontext ctx = nullptr;
    cu::CUdeviceptr buf = 0;
    cu::CUstream stream = nullptr;
    cu::CUevent ev = nullptr;
    void *gate = nullptr;
    cu::CUdeviceptr dgate = 0;
    Msg m;
    m.size = o.gpu_bytes;
    std::string why;
    std::vector<uint8_t> host(o.gpu_bytes);
    for (size_t i = 0; i < host.size(); ++i) host[i] = pattern_a(i);
    cu::CUresult rc;
#define STEP(call, name) if (why.empty() && (rc = (call)) != cu::SUCCESS) why = d.error(name, rc)
    STEP(d.DeviceGet(&cdev, dev), "cuDeviceGet");
    STEP(d.DevicePrimaryCtxRetain(&ctx, cdev), "cuDevicePrimaryCtxRetain");
    STEP(d.CtxSetCurrent(ctx), "cuCtxSetCurrent");
    STEP(d.MemAlloc(&buf, o.gpu_bytes), "cuMemAlloc");
    STEP(d.MemcpyHtoD(buf, host.data(), o.gpu_bytes), "cuMemcpyHtoD");
    // From pageable memory the copy may return once the bytes are staged, before the
    // DMA lands; the importer's stream is not ordered after ours: wait for it.
    STEP(d.StreamSynchronize(nullptr), "cuStreamSynchronize");
    STEP(d.IpcGetMemHandle(&m.mem, buf), "cuIpcGetMemHandle");
    STEP(d.StreamCreate(&stream, cu::STREAM_NON_BLOCKING), "cuStreamCreate");
    STEP(d.EventCreate(&ev, cu::EVENT_INTERPROCESS | cu::EVENT_DISABLE_TIMING), "cuEventCreate");
    STEP(d.IpcGetEventHandle(&m.event, ev), "cuIpcGetEventHandle");
    STEP(d.MemHostAlloc(&gate, 64, cu::MEMHOSTALLOC_DEVICEMAP), "cuMemHostAlloc");
    STEP(d.MemHostGetDevicePointer(&dgate, gate, 0), "cuMemHostGetDevicePointer");
    if (gate != nullptr) *static_cast<volatile uint32_t *>(gate) = 0;
    s.report(pre + "export", why.empty() ? "OK" : "FAIL", ms_since(t0), why);
    bool in_step = false;
    if (!why.empty()) s.send_err(pre + "export failed");
    else if (s.send(m) && s.recv(&m, &why)) {
        // Importer has opened both handles. Hold our stream at a gate, queue the
        // writes and the event behind it, and open the gate only once the
        // importer has queued its read behind the event: a read that ignored the
        // event would then see the old contents, deterministically.
        std::string gate_note;
        bool gated = d.StreamWaitValue32 != nullptr &&
                     d.StreamWaitValue32(stream, dgate, 1, cu::STREAM_WAIT_VALUE_GEQ) == cu::SUCCESS;
        if (!gated) gate_note = "ungated (no stream memory operations): a pass is weaker evidence";
        size_t words = o.gpu_bytes / 4;
        for (int k = 0; k < 16 && why.empty(); ++k)
            STEP(d.MemsetD32Async(buf, k == 15 ? kFinal : 0x1000u + (unsigned)k, words, stream), "cuMemsetD32Async");
        STEP(d.EventRecord(ev, stream), "cuEventRecord");
        if (why.empty()) s.send_ok(gated ? 1 : 0, gate_note);
        else s.send_err(why);
        if (why.empty()) s.recv(&m, &why);  // "read queued" (or an error)
        if (gate != nullptr) {
            std::atomic_thread_fence(std::memory_order_seq_cst);
            *static_cast<volatile uint32_t *>(gate) = 1;
        }
        if (why.empty()) in_step = s.recv(&m, &why);  // "done": importer closed its mappings
    }
#undef STEP
    if (gate != nullptr) *static_cast<volatile uint32_t *>(gate) = 1;  // never leave the stream blocked
    if (stream != nullptr) {
        d.StreamSynchronize(stream);
        d.StreamDestroy(stream);
    }
    if (ev != nullptr) d.EventDestroy(ev);
    if (gate != nullptr) d.MemFreeHost(gate);
    if (buf != 0) d.MemFree(buf);
    if (ctx != nullptr) d.DevicePrimaryCtxRelease(cdev);
    return in_step;
}

bool gpu_importer_one(Side &s, cu::Driver &d, int dev) {
    const std::string pre = "gpu" + std::to_string(dev) + ".";
    Msg m;
    std::string why;
    if (!s.recv(&m, &why)) return false;  // exporter reported it
    bool in_step = false;
    cu::CUdevice cdev = 0;
    cu::CUcontext ctx = nullptr;
    cu::CUdeviceptr peer = 0;
    cu::CUevent ev = nullptr;
    cu::CUstream stream = nullptr;
    void *host = nullptr;
    size_t size = (size_t)m.size;
    cu::CUresult rc;
    auto t0 = Clock::now();
#define STEP(call, name) if (why.empty() && (rc = (call)) != cu::SUCCESS) why = d.error(name, rc)
    STEP(d.DeviceGet(&cdev, dev), "cuDeviceGet");
    STEP(d.DevicePrimaryCtxRetain(&ctx, cdev), "cuDevicePrimaryCtxRetain");
    STEP(d.CtxSetCurrent(ctx), "cuCtxSetCurrent");
    STEP(d.IpcOpenMemHandle(&peer, m.mem, cu::IPC_MEM_LAZY_ENABLE_PEER_ACCESS), "cuIpcOpenMemHandle");
    s.report(pre + "ipc_open", why.empty() ? "OK" : "FAIL", ms_since(t0), why);
    if (why.empty()) {
        t0 = Clock::now();
        // Pinned, so the async copy below never blocks this thread (it must
        // not: the exporter opens its gate only after our next message).
        STEP(d.MemHostAlloc(&host, size, 0), "cuMemHostAlloc");
        STEP(d.MemcpyDtoH(host, peer, size), "cuMemcpyDtoH");
        std::string wrong = why.empty() ? first_wrong(static_cast<uint8_t *>(host), size, pattern_a) : why;
        s.report(pre + "ipc_copy", wrong.empty() ? "OK" : "FAIL", ms_since(t0), wrong);
        if (!wrong.empty() && why.empty()) why = "copy through the IPC mapping was not exact";
    }
    t0 = Clock::now();
    STEP(d.IpcOpenEventHandle(&ev, m.event), "cuIpcOpenEventHandle");
    STEP(d.StreamCreate(&stream, cu::STREAM_NON_BLOCKING), "cuStreamCreate");
    if (why.empty()) {
        std::memset(host, 0, size);
        s.send_ok();
        std::string peer_why;
        bool recorded = s.recv(&m, &peer_why);
        std::string note = recorded ? std::string(m.text) : std::string();
        STEP(d.StreamWaitEvent(stream, ev, 0), "cuStreamWaitEvent");
        STEP(d.MemcpyDtoHAsync(host, peer, size, stream), "cuMemcpyDtoHAsync");
        if (recorded) {
            if (why.empty()) in_step = s.send_ok();
            else s.send_err(why);
        }
        STEP(d.StreamSynchronize(stream), "cuStreamSynchronize");
        if (!recorded) {
            s.report(pre + "ipc_event", "FAIL", ms_since(t0), peer_why);
        } else if (!why.empty()) {
            s.report(pre + "ipc_event", "FAIL", ms_since(t0), why);
        } else {
            const uint32_t *w = static_cast<const uint32_t *>(host);
            std::string wrong;
            for (size_t i = 0; i < size / 4 && wrong.empty(); ++i)
                if (w[i] != kFinal) {
                    char buf[160];
                    std::snprintf(buf, sizeof buf, "read ran before the exporter's writes: word %zu is 0x%08x, expected 0x%08x", i, w[i], kFinal);
                    wrong = buf;
                }
            s.report(pre + "ipc_event", wrong.empty() ? "OK" : "FAIL", ms_since(t0), wrong.empty() ? note : wrong);
        }
    } else {
        s.report(pre + "ipc_event", "FAIL", ms_since(t0), why);
        s.send_err(why);
    }
#undef STEP
    if (stream != nullptr) d.StreamDestroy(stream);
    if (ev != nullptr) d.EventDestroy(ev);
    if (peer != 0) d.IpcCloseMemHandle(peer);
    if (host != nullptr) d.MemFreeHost(host);
    if (ctx != nullptr) d.DevicePrimaryCtxRelease(cdev);
    if (in_step) in_step = s.send_ok();  // done
    return in_step;
}

// Driver in this process, or why not. Count of devices, or -1.
int open_driver(cu::Driver &d, std::string *why) {
    if (!d.load(why)) return -1;
    cu::CUresult rc = d.Init(0);
    if (rc != cu::SUCCESS) {
        *why = d.error("cuInit", rc);
        return -1;
    }
    int n = 0;
    if ((rc = d.DeviceGetCount(&n)) != cu::SUCCESS) {
        *why = d.error("cuDeviceGetCount", rc);
        return -1;
    }
    if (n == 0) *why = "no GPU visible to the CUDA driver";
    return n;
}

void exporter(Side &s, const SelftestOptions &o) {
    if (o.shm) shm_exporter(s, o);
    if (!o.gpu) return;
    cu::Driver d;
    std::string why;
    int n = open_driver(d, &why);
    if (n <= 0) {
        s.report("gpu", "SKIP", 0.0, why);
        s.send_ok(0);
        return;
    }
    s.send_ok(n);
    Msg m;
    if (!s.recv(&m, &why)) {
        s.report("gpu", "FAIL", 0.0, why);
        return;
    }
    for (int dev = 0; dev < n; ++dev)
        if (!gpu_exporter_one(s, d, dev, o)) {
            for (int rest = dev + 1; rest < n; ++rest)
                s.report("gpu" + std::to_string(rest), "SKIP", 0.0, "not run after a failure on gpu" + std::to_string(dev));
            break;
        }
}

void importer(Side &s, const SelftestOptions &o) {
    if (o.shm) shm_importer(s, o);
    if (!o.gpu) return;
    Msg m;
    std::string why;
    if (!s.recv(&m, &why) || m.value <= 0) return;
    cu::Driver d;
    int n = open_driver(d, &why);
    if (n != m.value) {
        if (why.empty()) why = "sees " + std::to_string(n) + " GPUs, exporter sees " + std::to_string(m.value);
        s.send_err("importer: " + why);
        return;
    }
    s.send_ok();
    for (int dev = 0; dev < n; ++dev)
        if (!gpu_importer_one(s, d, dev)) break;
}

bool parse_line(const std::string &line, CheckResult *r) {
    size_t a = line.find('\t'), b = line.find('\t', a + 1), c = line.find('\t', b + 1);
    if (a == std::string::npos || b == std::string::npos || c == std::string::npos) return false;
    r->name = line.substr(0, a);
    r->status = line.substr(a + 1, b - a - 1);
    r->ms = std::atof(line.substr(b + 1, c - b - 1).c_str());
    r->reason = line.substr(c + 1);
    return true;
}

}  // namespace

bool run_selftest(const SelftestOptions &opt, std::vector<CheckResult> *results) {
    results->clear();
    int sv[2], res[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 || ::pipe2(res, O_CLOEXEC) != 0) {
        results->push_back({"selftest", "FAIL", 0.0, err_text("socketpair/pipe", errno)});
        return false;
    }
    std::fflush(nullptr);  // children must not flush our buffered output again
    pid_t pids[2] = {-1, -1};
    for (int role = 0; role < 2; ++role) {
        pid_t pid = ::fork();
        if (pid < 0) {
            results->push_back({"selftest", "FAIL", 0.0, err_text("fork", errno)});
            break;
        }
        if (pid == 0) {
            ::close(sv[1 - role]);
            ::close(res[0]);
            Side s{sv[role], res[1]};
            if (role == 0) exporter(s, opt);
            else importer(s, opt);
            ::_exit(0);
        }
        pids[role] = pid;
    }
    ::close(sv[0]);
    ::close(sv[1]);
    ::close(res[1]);

    std::string pending;
    auto deadline = Clock::now() + std::chrono::seconds(opt.timeout_s);
    bool timed_out = false;
    for (;;) {
        int left = (int)std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        struct pollfd pfd = {res[0], POLLIN, 0};
        int rc = ::poll(&pfd, 1, left);
        if (rc < 0 && errno == EINTR) continue;
        if (rc <= 0) continue;
        char buf[4096];
        ssize_t n = ::read(res[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;  // both children closed the pipe
        pending.append(buf, (size_t)n);
        size_t nl;
        while ((nl = pending.find('\n')) != std::string::npos) {
            CheckResult r;
            if (parse_line(pending.substr(0, nl), &r)) results->push_back(r);
            pending.erase(0, nl + 1);
        }
    }
    ::close(res[0]);
    const char *role_name[2] = {"exporter", "importer"};
    for (int role = 0; role < 2; ++role) {
        if (pids[role] <= 0) continue;
        if (timed_out) ::kill(pids[role], SIGKILL);
        int status = 0;
        while (::waitpid(pids[role], &status, 0) < 0 && errno == EINTR) {}
        if (timed_out) continue;
        if (WIFSIGNALED(status))
            results->push_back({std::string("selftest.") + role_name[role], "FAIL", 0.0,
                                std::string("process killed by signal ") + std::to_string(WTERMSIG(status)) +
                                    " (" + strsignal(WTERMSIG(status)) + ")"});
    }
    if (timed_out)
        results->push_back({"selftest", "FAIL", (double)opt.timeout_s * 1000.0,
                            "timed out after " + std::to_string(opt.timeout_s) + " s; both processes killed"});
    bool ok = true;
    for (const CheckResult &r : *results)
        if (r.status == "FAIL") ok = false;
    return ok;
}

}  // namespace topo
}  // namespace strata
