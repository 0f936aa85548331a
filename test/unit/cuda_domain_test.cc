// SPDX-License-Identifier: BSD-3-Clause
// test/unit/cuda_domain_test.cc - buffer classification and the CUDA memory domain.
//
// ClassifyTest and CudaKernelListTest run everywhere (no driver, no GPU, builds without
// CUDA): host memory must come back Host without crashing, and the kernel list must
// cover every pair MPI defines. CudaDomainTest needs a GPU, or the fake driver
// (LD_LIBRARY_PATH=test/fakecuda, which runs the same launches with the host functors),
// and skips with the reason otherwise; it checks every (type, op) the device supports
// against the host domain bit for bit (the host kernels are checked against an
// independent model in ops_test.cc), with sources that are small integers so every
// result is exact.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <algorithm>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "mem/classify.h"
#include "mem/cuda_domain.h"
#include "mem/cuda_kernels.h"
#include "mem/domain.h"
#include "mem/ops.h"
#include "strata.h"
#include "copies.h"
#include "strata_device.h"
#include "test/fakecuda/fakecuda.h"

namespace {

using strata::MemKind;

TEST(ClassifyTest, HostMemoryIsHost) {
    static int in_data = 1;
    int on_stack = 2;
    std::vector<double> heap(1000);
    void *big = malloc(64 << 20);  // large enough to be mmap'ed
    ASSERT_NE(big, nullptr);
    for (const void *p : {static_cast<const void *>(&in_data), static_cast<const void *>(&on_stack),
                          static_cast<const void *>(heap.data()), static_cast<const void *>(big)}) {
        int dev = 7;
        EXPECT_EQ(strata::classify(p, &dev), MemKind::Host) << p;
        EXPECT_EQ(dev, -1);
        EXPECT_EQ(strata_buffer_kind(p), STRATA_MEM_HOST);
    }
    free(big);
    EXPECT_EQ(strata::classify(nullptr), MemKind::Host);
    EXPECT_STREQ(strata::mem_kind_name(MemKind::PinnedHost), "pinned-host");
}

TEST(ClassifyTest, NoDriverMeansNoDomain) {
    std::string why;
    strata::MemDomain *d = strata::cuda_domain(0, &why);
    if (!strata::cuda_available()) {
        EXPECT_EQ(d, nullptr);
        EXPECT_FALSE(why.empty());
    }
    EXPECT_EQ(strata::cuda_domain(-1, &why), nullptr);
    EXPECT_FALSE(strata::cuda_reduce_supported(STRATA_LONG_DOUBLE, STRATA_OP_SUM));
}

// Every pair MPI defines has a kernel but long double ones; the names are the ones the
// library spells (strata_reduce_<strata_dtype_name>_<strata_op_name>), each once.
TEST(CudaKernelListTest, CoversEveryPairButLongDouble) {
    namespace kern = strata::kern;
    for (int ti = 0; ti < STRATA_DTYPE_COUNT; ++ti) {
        for (int oi = 0; oi < STRATA_OP_COUNT; ++oi) {
            const auto dtype = static_cast<strata_dtype_t>(ti);
            const auto op = static_cast<strata_op_t>(oi);
            const bool mpi = strata::host_reduce_fn(dtype, op) != nullptr;
            const bool long_double = dtype == STRATA_LONG_DOUBLE || dtype == STRATA_C_LONG_DOUBLE_COMPLEX;
            const int k = kern::kernel_index(dtype, op);
            EXPECT_EQ(k >= 0, mpi && !long_double) << strata_dtype_name(dtype) << " " << strata_op_name(op);
            if (k < 0) continue;
            EXPECT_EQ(kern::kKernels[k].op, op);
            EXPECT_EQ(strata_dtype_size(kern::kKernels[k].dtype), strata_dtype_size(dtype));
        }
    }
    for (int k = 0; k < kern::kNumKernels; ++k) {
        const kern::Kernel &kn = kern::kKernels[k];
        EXPECT_EQ(std::string(kn.name),
                  std::string("strata_reduce_") + strata_dtype_name(kn.dtype) + "_" + strata_op_name(kn.op));
        EXPECT_EQ(kern::kernel_by_name(kn.name), k) << kn.name;  // also: no name twice
        EXPECT_EQ(kern::kernel_index(kn.dtype, kn.op), k) << kn.name;
    }
    EXPECT_EQ(kern::kNumKernels, 70);
    EXPECT_EQ(kern::kernel_by_name("strata_reduce_int32_sum"), -1);  // runs as uint32
    EXPECT_EQ(kern::kernel_by_name("strata_reduce_uint32_su"), -1);
}

class CudaDomainTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::string why;
        dom_ = strata::cuda_domain(0, &why);
        if (dom_ == nullptr) GTEST_SKIP() << "no CUDA device domain: " << why;
    }
    void wait(strata::Ticket *t) {
        bool done = false;
        while (!done) ASSERT_EQ(dom_->poll(t, &done), STRATA_OK);
    }
    void *dev_alloc(size_t bytes) {
        void *p = nullptr;
        EXPECT_EQ(dom_->alloc(bytes, &p), STRATA_OK);
        if (p) bufs_.push_back(p);
        return p;
    }
    void put(void *dst, const void *src, size_t bytes) {
        strata::Ticket t;
        ASSERT_EQ(dom_->copy(dst, src, bytes, &t), STRATA_OK);
        wait(&t);
    }
    void TearDown() override {
        for (void *p : bufs_) dom_->release(p);
    }
    strata::MemDomain *dom_ = nullptr;
    std::vector<void *> bufs_;
};

TEST_F(CudaDomainTest, ClassifiesDeviceMemory) {
    void *p = dev_alloc(4096);
    ASSERT_NE(p, nullptr);
    int dev = -1;
    EXPECT_EQ(strata::classify(p, &dev), MemKind::Device);
    EXPECT_EQ(dev, 0);
    EXPECT_EQ(strata::classify(static_cast<char *>(p) + 100), MemKind::Device);
    EXPECT_EQ(strata_buffer_kind(p), STRATA_MEM_DEVICE);
    EXPECT_STREQ(dom_->name(), "cuda:0");
}

// What a peer needs to map a buffer: the allocation's start and size, the buffer's
// offset in it, an id that a re-allocation at the same address does not repeat, and the handle.
TEST_F(CudaDomainTest, DescribesBuffersForIpc) {
    char *p = static_cast<char *>(dev_alloc(1 << 20));
    ASSERT_NE(p, nullptr);
    strata::IpcRef a{}, b{};
    ASSERT_EQ(dom_->ipc_describe(p + 4100, &a), STRATA_OK);
    EXPECT_EQ(a.base, reinterpret_cast<uintptr_t>(p));
    EXPECT_EQ(a.offset, 4100u);
    EXPECT_NE(a.buffer_id, 0u);
    EXPECT_EQ(a.bytes, uint64_t(1) << 20);  // what a mapping of it holds (the cache's byte bound)
    // The base a peer is given exports the allocation itself.
    strata::IpcHandle direct{};
    ASSERT_EQ(dom_->ipc_export(p, &direct), STRATA_OK);
    ASSERT_EQ(dom_->ipc_export(reinterpret_cast<void *>(a.base), &a.handle), STRATA_OK);
    EXPECT_EQ(memcmp(a.handle.bytes, direct.bytes, sizeof direct.bytes), 0);
    ASSERT_EQ(dom_->ipc_describe(p, &b), STRATA_OK);
    EXPECT_EQ(b.buffer_id, a.buffer_id);
    EXPECT_EQ(b.offset, 0u);

    char *q = static_cast<char *>(dev_alloc(1 << 20));
    ASSERT_NE(q, nullptr);
    ASSERT_EQ(dom_->ipc_describe(q, &b), STRATA_OK);
    EXPECT_NE(b.buffer_id, a.buffer_id);

    // Freed and allocated again (often at the same address): a new id all the same.
    dom_->release(p);
    bufs_.erase(std::find(bufs_.begin(), bufs_.end(), static_cast<void *>(p)));
    char *p2 = static_cast<char *>(dev_alloc(1 << 20));
    ASSERT_NE(p2, nullptr);
    ASSERT_EQ(dom_->ipc_describe(p2, &b), STRATA_OK);
    EXPECT_NE(b.buffer_id, a.buffer_id) << (p2 == p ? "same address" : "new address");
    EXPECT_EQ(dom_->ipc_describe(nullptr, &b), STRATA_ERR_UNSUPPORTED);

    std::vector<char> host(64);
    EXPECT_EQ(dom_->ipc_describe(host.data(), &b), STRATA_ERR_UNSUPPORTED);
    void *pinned = nullptr;
    ASSERT_EQ(dom_->alloc_host(4096, &pinned), STRATA_OK);
    EXPECT_EQ(dom_->ipc_describe(pinned, &b), STRATA_ERR_UNSUPPORTED);
    dom_->release_host(pinned);
}

TEST_F(CudaDomainTest, CopyRoundTrip) {
    for (size_t bytes : {size_t(0), size_t(1), size_t(4099), size_t(3) << 20}) {
        std::vector<unsigned char> in(bytes + 1), out(bytes + 1, 0);
        for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<unsigned char>(i * 131 + 7);
        char *a = static_cast<char *>(dev_alloc(bytes + 1));
        char *b = static_cast<char *>(dev_alloc(bytes + 1));
        ASSERT_TRUE(a && b);
        put(a, in.data(), bytes + 1);      // host -> device
        put(b + 1, a, bytes);              // device -> device, unaligned
        put(out.data(), b + 1, bytes);     // device -> host
        EXPECT_EQ(memcmp(out.data(), in.data(), bytes), 0) << bytes << " bytes";
    }
}

// Small integers (some negative, some zero) in whatever T is, so products of up to
// nine sources stay exact in float and every reduction order agrees.
template <class T>
void fill(T *v, size_t n, int s) {
    using namespace strata::ops;
    for (size_t i = 0; i < n; ++i) {
        const int k = static_cast<int>((i * 7 + s * 13) % 9) - 4;  // -4..4
        if constexpr (std::is_same<T, Byte>::value) {
            v[i].v = static_cast<uint8_t>(i * 31 + s * 17);
        } else if constexpr (std::is_same<T, Bool8>::value) {
            v[i].v = static_cast<uint8_t>((i + s) % 3 != 0);
        } else if constexpr (std::is_same<T, Logical4>::value) {
            v[i].v = static_cast<int32_t>((i * (s + 1)) % 3);  // 2 is true too
        } else if constexpr (is_complex<T>::value) {
            v[i].re = static_cast<decltype(v[i].re)>(k % 3);
            v[i].im = static_cast<decltype(v[i].im)>((k + s) % 2);
        } else if constexpr (is_pair<T>::value) {
            v[i].value = static_cast<decltype(v[i].value)>((i + s * 5) % 4);
            v[i].index = static_cast<int>((s * 3 + i) % 7);
        } else if constexpr (std::is_signed<T>::value) {
            v[i] = static_cast<T>(k);
        } else {
            v[i] = static_cast<T>(k + 4);
        }
    }
}

size_t type_size(strata_dtype_t t) {
    return strata::dispatch_type(t, [](auto *tp) -> size_t {
        using T = std::remove_pointer_t<decltype(tp)>;
        if constexpr (std::is_void<T>::value) return 0; else return sizeof(T);
    });
}

void fill_any(strata_dtype_t t, void *v, size_t n, int s) {
    strata::dispatch_type(t, [&](auto *tp) {
        using T = std::remove_pointer_t<decltype(tp)>;
        if constexpr (!std::is_void<T>::value) fill(static_cast<T *>(v), n, s);
    });
}

TEST_F(CudaDomainTest, ReduceMatchesHostEveryTypeAndOp) {
    strata::MemDomain &host = strata::host_domain();
    const size_t kMaxCount = 100003, kMaxSrc = 9;
    std::vector<void *> pool(kMaxSrc + 1);  // sources, then a separate destination
    for (void *&p : pool) ASSERT_NE(p = dev_alloc(kMaxCount * 16), nullptr);
    int checked = 0, unsupported = 0;
    for (int ti = 0; ti < STRATA_DTYPE_COUNT; ++ti) {
        for (int oi = 0; oi < STRATA_OP_COUNT; ++oi) {
            const auto dtype = static_cast<strata_dtype_t>(ti);
            const auto op = static_cast<strata_op_t>(oi);
            if (strata::host_reduce_fn(dtype, op) == nullptr) continue;  // MPI defines no such pair
            const size_t es = type_size(dtype);
            if (!strata::cuda_reduce_supported(dtype, op)) {
                // Only long double lacks a device kernel; reduce() says so, strata falls back.
                EXPECT_TRUE(dtype == STRATA_LONG_DOUBLE || dtype == STRATA_C_LONG_DOUBLE_COMPLEX) << ti << "/" << oi;
                void *d = pool[0];
                const void *srcs[2] = {d, d};
                strata::Ticket t;
                EXPECT_EQ(dom_->reduce(d, srcs, 2, 1, dtype, op, &t), STRATA_ERR_UNSUPPORTED);
                ++unsupported;
                continue;
            }
            for (size_t count : {size_t(1), size_t(257), kMaxCount}) {
                for (int nsrc : {1, 2, 3, int(kMaxSrc)}) {
                    for (bool in_place : {false, true}) {
                        const size_t bytes = count * es;
                        std::vector<std::vector<char>> hsrc(nsrc, std::vector<char>(bytes));
                        std::vector<const void *> hp(nsrc), dp(nsrc);
                        for (int s = 0; s < nsrc; ++s) {
                            fill_any(dtype, hsrc[s].data(), count, s);
                            hp[s] = hsrc[s].data();
                            void *d = pool[s];
                            put(d, hsrc[s].data(), bytes);
                            dp[s] = d;
                        }
                        std::vector<char> want(bytes), got(bytes);
                        strata::Ticket t;
                        ASSERT_EQ(host.reduce(want.data(), hp.data(), nsrc, count, dtype, op, &t), STRATA_OK);
                        void *ddst = in_place ? const_cast<void *>(dp[0]) : pool[kMaxSrc];
                        ASSERT_EQ(dom_->reduce(ddst, dp.data(), nsrc, count, dtype, op, &t), STRATA_OK);
                        wait(&t);
                        put(got.data(), ddst, bytes);
                        if (memcmp(got.data(), want.data(), bytes) != 0) {
                            size_t i = 0;
                            while (i < count && memcmp(&got[i * es], &want[i * es], es) == 0) ++i;
                            ADD_FAILURE() << "type " << ti << " op " << oi << " count " << count << " nsrc "
                                          << nsrc << (in_place ? " in place" : "") << ": first wrong element " << i;
                        }
                    }
                }
            }
            ++checked;
        }
    }
    EXPECT_GT(checked, 60);
    EXPECT_EQ(unsupported, 6);  // long double and its complex: sum, prod, max, min / sum, prod
}

// More sources than one launch takes (kern::kMaxSrcs): the domain folds the rest in
// with a second launch, in MPI's order. Float sum tells the orders apart: 2^24 (or
// 2 * 2^24, 3 * 2^24) + 1 rounds back down in float, so folding s0 + 1 + 1 + ...
// left to right gives s0 exactly, while adding any of the ones together first does not.
// Also an exact int64 sum. dst is a separate buffer, the first source, or a source only
// the second launch reads (which must not be overwritten by the first).
TEST_F(CudaDomainTest, FoldsElevenSourcesInMpiOrder) {
    constexpr int kSrcs = 11;
    constexpr size_t kCount = 1000;  // not a multiple of the block size
    static_assert(kSrcs > strata::kern::kMaxSrcs, "two launches");
    std::vector<void *> bufs(kSrcs + 1);
    for (void *&p : bufs) ASSERT_NE(p = dev_alloc(kCount * 8), nullptr);
    for (int where : {kSrcs, 0, 9}) {  // dst: separate, srcs[0], srcs[9]
        std::vector<std::vector<float>> f(kSrcs, std::vector<float>(kCount, 1.0f));
        std::vector<std::vector<int64_t>> n(kSrcs, std::vector<int64_t>(kCount));
        for (size_t i = 0; i < kCount; ++i) {
            f[0][i] = 16777216.0f * static_cast<float>(1 + i % 3);
            for (int s = 0; s < kSrcs; ++s) n[s][i] = (int64_t(s) << 40) - int64_t(i) * (s + 1);
        }
        std::vector<const void *> dp(bufs.begin(), bufs.begin() + kSrcs);
        void *dst = bufs[size_t(where)];
        strata::Ticket t;

        for (int s = 0; s < kSrcs; ++s) put(bufs[size_t(s)], f[size_t(s)].data(), kCount * sizeof(float));
        ASSERT_EQ(dom_->reduce(dst, dp.data(), kSrcs, kCount, STRATA_FLOAT, STRATA_OP_SUM, &t), STRATA_OK);
        wait(&t);
        std::vector<float> got(kCount);
        put(got.data(), dst, kCount * sizeof(float));
        for (size_t i = 0; i < kCount; ++i) {
            if (got[i] != f[0][i]) {
                ADD_FAILURE() << "float sum, dst " << where << ": element " << i << " is " << got[i] << ", not "
                              << f[0][i] << " (not folded left to right)";
                break;
            }
        }

        for (int s = 0; s < kSrcs; ++s) put(bufs[size_t(s)], n[size_t(s)].data(), kCount * sizeof(int64_t));
        ASSERT_EQ(dom_->reduce(dst, dp.data(), kSrcs, kCount, STRATA_INT64, STRATA_OP_SUM, &t), STRATA_OK);
        wait(&t);
        std::vector<int64_t> sum(kCount);
        put(sum.data(), dst, kCount * sizeof(int64_t));
        for (size_t i = 0; i < kCount; ++i) {
            const int64_t want = (int64_t(55) << 40) - int64_t(i) * 66;  // sum of s and of s + 1, s < 11
            if (sum[i] != want) {
                ADD_FAILURE() << "int64 sum, dst " << where << ": element " << i << " is " << sum[i] << ", not "
                              << want;
                break;
            }
        }
    }
}

TEST_F(CudaDomainTest, TicketsCompleteOutOfOrderPolls) {
    const size_t n = 1 << 20;
    std::vector<float> in(n, 1.0f), out(n, 0.0f);
    float *a = static_cast<float *>(dev_alloc(n * sizeof(float)));
    float *b = static_cast<float *>(dev_alloc(n * sizeof(float)));
    ASSERT_TRUE(a && b);
    strata::Ticket t1, t2, t3;
    ASSERT_EQ(dom_->copy(a, in.data(), n * sizeof(float), &t1), STRATA_OK);
    const void *srcs[2] = {a, a};
    ASSERT_EQ(dom_->reduce(b, srcs, 2, n, STRATA_FLOAT, STRATA_OP_SUM, &t2), STRATA_OK);
    ASSERT_EQ(dom_->copy(out.data(), b, n * sizeof(float), &t3), STRATA_OK);
    wait(&t3);  // stream order: t3 done means t1 and t2 are too
    bool done = false;
    EXPECT_EQ(dom_->poll(&t1, &done), STRATA_OK);
    EXPECT_TRUE(done);
    wait(&t2);
    EXPECT_EQ(out[0], 2.0f);
    EXPECT_EQ(out[n - 1], 2.0f);
}

// The fake driver's counts (test/fakecuda/fakecuda.h), or false on a real driver.
bool fake_counts(struct fakecuda_stats *s);

// A CPU-only job on a GPU node: classifying buffers and asking whether a GPU context
// is current never initialise the driver (cuInit) themselves. In a fresh process.
TEST(ClassifyTest, NeverInitialisesTheDriverItself) {
    struct fakecuda_stats s {};
    if (!fake_counts(&s)) {
        void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (lib == nullptr || dlsym(lib, "fakecuda_stats") == nullptr) GTEST_SKIP() << "needs the fake driver";
    }
    ::testing::FLAGS_gtest_death_test_style = "threadsafe";
    EXPECT_EXIT(
        {
            int on_stack = 0;
            const bool host = strata::classify(&on_stack) == MemKind::Host;
            const bool avail = strata::cuda_available();
            const bool ctx = strata::cuda_context_current();
            struct fakecuda_stats c {};
            const bool counted = fake_counts(&c);
            fprintf(stderr, "host %d available %d context %d inited %llu\n", host, avail, ctx, c.inited);
            exit(host && avail && !ctx && counted && c.inited == 0 ? 0 : 1);
        },
        ::testing::ExitedWithCode(0), "inited 0");
}

bool fake_counts(struct fakecuda_stats *s) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    auto fn = lib ? reinterpret_cast<int (*)(struct fakecuda_stats *)>(dlsym(lib, "fakecuda_stats")) : nullptr;
    return fn != nullptr && fn(s) == 0;
}

// MPI lets a double buffer start at any address; a kernel's misaligned load faults on
// the GPU and poisons the context for good (the fake does the same). Operands not
// aligned for their type go through aligned scratch: the result is right, and the
// domain works afterwards.
TEST_F(CudaDomainTest, MisalignedOperandsNeverReachAKernel) {
    constexpr size_t kCount = 1000;
    char *a = static_cast<char *>(dev_alloc(kCount * 8 + 16));
    char *b = static_cast<char *>(dev_alloc(kCount * 8 + 16));
    ASSERT_TRUE(a && b);
    std::vector<double> x(kCount), y(kCount), got(kCount);
    for (size_t i = 0; i < kCount; ++i) {
        x[i] = double(i);
        y[i] = 3.0 * double(i) + 1.0;
    }
    put(a + 4, x.data(), kCount * 8);  // 4 bytes off: misaligned for double
    put(b + 12, y.data(), kCount * 8);
    const void *srcs[2] = {a + 4, b + 12};
    strata::Ticket t;
    ASSERT_EQ(dom_->reduce(a + 4, srcs, 2, kCount, STRATA_DOUBLE, STRATA_OP_SUM, &t), STRATA_OK);
    bool done = false;
    strata::Status st = STRATA_OK;
    while (!done && (st = dom_->poll(&t, &done)) == STRATA_OK) {
    }
    ASSERT_EQ(st, STRATA_OK) << "the reduction faulted (a misaligned operand reached the kernel)";
    put(got.data(), a + 4, kCount * 8);
    for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(got[i], 4.0 * double(i) + 1.0) << "element " << i;
    float one = 1.0f, back = 0.0f;  // and the context still works
    put(a, &one, sizeof one);
    put(&back, a, sizeof back);
    EXPECT_EQ(back, 1.0f);
}

// No device allocation or free on the steady-state path: after a first call, the same
// reductions (misaligned operands, dst among the sources of a second launch) make no
// new allocation.
TEST_F(CudaDomainTest, SteadyStateReductionsAllocateNothing) {
    constexpr int kSrcs = 11;
    constexpr size_t kCount = 777;
    std::vector<void *> bufs(kSrcs);
    for (void *&p : bufs) ASSERT_NE(p = dev_alloc(kCount * 4 + 8), nullptr);
    std::vector<const void *> srcs(bufs.begin(), bufs.end());
    struct fakecuda_stats before {}, after {};
    for (int round = 0; round < 6; ++round) {
        if (round == 1 && !fake_counts(&before)) GTEST_SKIP() << "needs the fake driver's counts";
        strata::Ticket t;
        ASSERT_EQ(dom_->reduce(bufs[10], srcs.data(), kSrcs, kCount, STRATA_INT32, STRATA_OP_SUM, &t), STRATA_OK);
        wait(&t);
        const void *odd[2] = {static_cast<char *>(bufs[0]) + 2, bufs[1]};
        ASSERT_EQ(dom_->reduce(bufs[2], odd, 2, kCount, STRATA_INT32, STRATA_OP_MAX, &t), STRATA_OK);
        wait(&t);
    }
    ASSERT_TRUE(fake_counts(&after));
    EXPECT_EQ(after.total_dev_allocs, before.total_dev_allocs) << "device memory allocated on every call";
}

// The glue's fallback staging gets page-locked host memory, reused between calls.
TEST_F(CudaDomainTest, HostStagingIsPinnedAndReused) {
    void *dev = dev_alloc(4096);
    ASSERT_NE(dev, nullptr);
    void *a = strata_host_copy_get(dev, 1000);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(strata::classify(a), MemKind::PinnedHost);
    strata_host_copy_put(a);
    EXPECT_EQ(strata_host_copy_get(dev, 3000), a) << "not reused";
    void *b = strata_host_copy_get(dev, 100);  // a is taken: another one
    EXPECT_NE(b, a);
    strata_host_copy_put(a);
    strata_host_copy_put(b);
    int on_stack = 0;
    EXPECT_EQ(strata_host_copy_get(&on_stack, 100), nullptr) << "host memory needs no staging";
}

// The domain's driver errors on a thread go to a DeviceErrors that lives there (the
// first one), for the caller's own line; without one nothing is kept.
TEST(DeviceErrorsTest, KeepsTheFirstErrorOfItsThreadWhileItLives) {
    EXPECT_FALSE(strata::DeviceErrors::keep("nobody keeps this"));
    {
        strata::DeviceErrors outer;
        EXPECT_TRUE(strata::DeviceErrors::keep("first"));
        EXPECT_TRUE(strata::DeviceErrors::keep("second"));
        {
            strata::DeviceErrors inner;
            EXPECT_TRUE(strata::DeviceErrors::keep("inner"));
            EXPECT_EQ(inner.text(), "inner");
        }
        EXPECT_EQ(outer.text(), "first");
        bool kept_elsewhere = true;
        std::thread([&] { kept_elsewhere = strata::DeviceErrors::keep("another thread"); }).join();
        EXPECT_FALSE(kept_elsewhere);
    }
    EXPECT_FALSE(strata::DeviceErrors::keep("after"));
}

// An IPC export the driver refuses (the fake, FAKECUDA_FAIL=ipc_get) fails with the
// driver's words kept for the caller (team setup says them in its one line).
TEST_F(CudaDomainTest, RefusedIpcExportIsKeptForTheCaller) {
    struct fakecuda_stats st {};
    if (!fake_counts(&st)) GTEST_SKIP() << "needs the fake driver (FAKECUDA_FAIL)";
    void *p = dev_alloc(4096);
    ASSERT_NE(p, nullptr);
    strata::IpcHandle h;
    {
        strata::DeviceErrors errors;
        setenv("FAKECUDA_FAIL", "ipc_get", 1);
        EXPECT_EQ(dom_->ipc_export(p, &h), STRATA_ERR_DEVICE);
        unsetenv("FAKECUDA_FAIL");
        EXPECT_NE(errors.text().find("cuIpcGetMemHandle"), std::string::npos) << errors.text();
    }
    EXPECT_EQ(dom_->ipc_export(p, &h), STRATA_OK);
}

// Device memory of a context the application made itself (cuCtxCreate) is not the
// domain's (whose kernels cannot read it): a call on a device team copies it, and the
// copy works across the two contexts. The domain's own memory is used in place.
TEST_F(CudaDomainTest, BuffersOfAnotherContextAreStaged) {
    typedef int (*CtxCreate)(void **, unsigned, int);
    typedef int (*CtxPtr)(void *);
    typedef int (*CtxGet)(void **);
    typedef int (*Alloc)(unsigned long long *, size_t);
    typedef int (*Free)(unsigned long long);
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(lib, nullptr);
    auto create = reinterpret_cast<CtxCreate>(dlsym(lib, "cuCtxCreate_v2"));
    auto destroy = reinterpret_cast<CtxPtr>(dlsym(lib, "cuCtxDestroy_v2"));
    auto set = reinterpret_cast<CtxPtr>(dlsym(lib, "cuCtxSetCurrent"));
    auto get = reinterpret_cast<CtxGet>(dlsym(lib, "cuCtxGetCurrent"));
    auto alloc = reinterpret_cast<Alloc>(dlsym(lib, "cuMemAlloc_v2"));
    auto release = reinterpret_cast<Free>(dlsym(lib, "cuMemFree_v2"));
    if (!create || !destroy || !set || !get || !alloc || !release) GTEST_SKIP() << "driver lacks cuCtxCreate_v2";
    void *before = nullptr, *own = nullptr;
    ASSERT_EQ(get(&before), 0);
    ASSERT_EQ(create(&own, 0, 0), 0);  // current now
    unsigned long long theirs = 0;
    ASSERT_EQ(alloc(&theirs, 4096), 0);
    ASSERT_EQ(set(before), 0);
    void *foreign = reinterpret_cast<void *>(theirs);
    void *mine = dev_alloc(4096);
    ASSERT_NE(mine, nullptr);
    EXPECT_TRUE(strata::cuda_foreign_context(foreign, 0));
    EXPECT_FALSE(strata::cuda_foreign_context(mine, 0));
    EXPECT_EQ(strata::BufferCopies::plan_key(foreign, dom_), reinterpret_cast<uintptr_t>(dom_));
    EXPECT_EQ(strata::BufferCopies::plan_key(mine, dom_), 0u);
    std::vector<int> in(1024), out(1024, 0);
    for (size_t i = 0; i < in.size(); ++i) in[i] = int(i * 7 + 1);
    put(foreign, in.data(), 4096);
    put(mine, foreign, 4096);
    put(out.data(), mine, 4096);
    EXPECT_EQ(out, in);
    ASSERT_EQ(set(own), 0);
    EXPECT_EQ(release(theirs), 0);
    EXPECT_EQ(destroy(own), 0);
    EXPECT_EQ(set(before), 0);
}

}  // namespace
