// SPDX-License-Identifier: BSD-3-Clause
// test/unit/fakecuda_counters_test.cc - the fake driver's counters (fakecuda_counters,
// test/fakecuda/fakecuda.h), which the count tests of strata's collectives rest on
// (test/mpi/run-device-tests -s counts): each operation, issued through the raw driver,
// moves exactly the counters it should by exactly what it should, and nothing else.
// Needs the fake (LD_LIBRARY_PATH=test/fakecuda) and a CUDA build (the kernel image);
// skips otherwise.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdint>
#include <string>
#include <vector>

#include "mem/classify.h"
#include "mem/cuda_domain.h"
#include "mem/cuda_kernels.h"
#include "strata.h"
#include "test/fakecuda/fakecuda.h"
#include "topo/cuda_api.h"

namespace {

namespace cu = strata::topo::cu;
using CountersFn = int (*)(struct fakecuda_counters *);
using ValueFn = cu::CUresult (*)(cu::CUstream, cu::CUdeviceptr, unsigned, unsigned);

// What an operation moved: after - before, field by field.
struct Delta {
    unsigned long long launches, copies, events_recorded, stream_waits, stream_writes, host_waits, dev_read,
        dev_written;
};

std::string show(const Delta &d) {
    return "launches " + std::to_string(d.launches) + ", copies " + std::to_string(d.copies) + ", events_recorded " +
           std::to_string(d.events_recorded) + ", stream_waits " + std::to_string(d.stream_waits) +
           ", stream_writes " + std::to_string(d.stream_writes) + ", host_waits " + std::to_string(d.host_waits) +
           ", dev_read " + std::to_string(d.dev_read) + ", dev_written " + std::to_string(d.dev_written);
}

bool operator==(const Delta &a, const Delta &b) { return show(a) == show(b); }
std::ostream &operator<<(std::ostream &o, const Delta &d) { return o << show(d); }

class FakeCountersTest : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string why;
        if ((d_ = strata::cuda_driver(&why)) == nullptr) GTEST_SKIP() << "needs a CUDA driver: " << why;
        void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        if (lib != nullptr) {
            counters_ = reinterpret_cast<CountersFn>(dlsym(lib, "fakecuda_counters"));
            write32_ = reinterpret_cast<ValueFn>(dlsym(lib, "cuStreamWriteValue32_v2"));
        }
        if (counters_ == nullptr) GTEST_SKIP() << "needs the fake driver (fakecuda_counters)";
        cu::CUdevice dev = 0;
        ASSERT_EQ(d_->DeviceGet(&dev, 0), cu::SUCCESS);
        ASSERT_EQ(d_->DevicePrimaryCtxRetain(&ctx_, dev), cu::SUCCESS);
        d_->CtxGetCurrent(&before_ctx_);
        ASSERT_EQ(d_->CtxSetCurrent(ctx_), cu::SUCCESS);
        ASSERT_EQ(d_->StreamCreate(&stream_, cu::STREAM_NON_BLOCKING), cu::SUCCESS);
        for (cu::CUdeviceptr &p : dev_) ASSERT_EQ(d_->MemAlloc(&p, kBytes), cu::SUCCESS);
    }
    void TearDown() override {
        if (counters_ == nullptr || d_ == nullptr) return;
        for (cu::CUdeviceptr p : dev_)
            if (p != 0) d_->MemFree(p);
        if (stream_ != nullptr) d_->StreamDestroy(stream_);
        d_->CtxSetCurrent(before_ctx_);
        d_->DevicePrimaryCtxRelease(0);
    }

    struct fakecuda_counters now() const {
        struct fakecuda_counters c {};
        EXPECT_EQ(counters_(&c), 0);
        return c;
    }
    // What op() moved.
    template <class Op>
    Delta delta(Op op) {
        const struct fakecuda_counters a = now();
        op();
        const struct fakecuda_counters b = now();
        return Delta{b.launches - a.launches, b.copies - a.copies, b.events_recorded - a.events_recorded,
                     b.stream_waits - a.stream_waits, b.stream_writes - a.stream_writes,
                     b.host_waits - a.host_waits, b.dev_read - a.dev_read, b.dev_written - a.dev_written};
    }

    static constexpr size_t kBytes = 4096;
    const cu::Driver *d_ = nullptr;
    CountersFn counters_ = nullptr;
    ValueFn write32_ = nullptr;
    cu::CUcontext ctx_ = nullptr, before_ctx_ = nullptr;
    cu::CUstream stream_ = nullptr;
    cu::CUdeviceptr dev_[4] = {};
};

TEST_F(FakeCountersTest, NullIsRefused) { EXPECT_EQ(counters_(nullptr), -1); }

// A copy counts one copy and its bytes on each side that is device memory: host to
// device writes n, device to device reads and writes n, device to pinned host reads n;
// a memset writes its bytes. Nothing else moves, and a synchronize is one host wait.
TEST_F(FakeCountersTest, CopiesCountTheirDeviceBytes) {
    std::vector<char> host(kBytes, 7);
    EXPECT_EQ(delta([&] { ASSERT_EQ(d_->MemcpyHtoD(dev_[0], host.data(), kBytes), cu::SUCCESS); }),
              (Delta{0, 1, 0, 0, 0, 0, 0, kBytes}));
    EXPECT_EQ(delta([&] { ASSERT_EQ(d_->MemcpyAsync(dev_[1], dev_[0], kBytes, stream_), cu::SUCCESS); }),
              (Delta{0, 1, 0, 0, 0, 0, kBytes, kBytes}));
    void *pinned = nullptr;
    ASSERT_EQ(d_->MemHostAlloc(&pinned, kBytes, 0), cu::SUCCESS);
    EXPECT_EQ(delta([&] { ASSERT_EQ(d_->MemcpyDtoHAsync(pinned, dev_[1], kBytes, stream_), cu::SUCCESS); }),
              (Delta{0, 1, 0, 0, 0, 0, kBytes, 0}));
    EXPECT_EQ(delta([&] { ASSERT_EQ(d_->MemsetD32Async(dev_[2], 5, kBytes / 4, stream_), cu::SUCCESS); }),
              (Delta{0, 1, 0, 0, 0, 0, 0, kBytes}));
    EXPECT_EQ(delta([&] { ASSERT_EQ(d_->StreamSynchronize(stream_), cu::SUCCESS); }),
              (Delta{0, 0, 0, 0, 0, 1, 0, 0}));
    EXPECT_EQ(static_cast<char *>(pinned)[kBytes - 1], 7) << "the copies ran";
    d_->MemFreeHost(pinned);
    EXPECT_EQ(delta([&] { ASSERT_NE(d_->MemcpyAsync(dev_[1], 0, kBytes, stream_), cu::SUCCESS); }), Delta{})
        << "a refused copy counts nothing";
}

// A reduction of 3 sources of n bytes: one launch, 3n read, n written; exact result.
TEST_F(FakeCountersTest, AReduceOfThreeSourcesIsOneLaunchReading3n) {
    size_t image_bytes = 0;
    const void *image = strata::cuda_kernels_image(&image_bytes);
    if (image == nullptr) GTEST_SKIP() << "built without CUDA";
    cu::CUmodule m = nullptr;
    cu::CUfunction f = nullptr;
    ASSERT_EQ(d_->ModuleLoadData(&m, image), cu::SUCCESS);
    const int k = strata::kern::kernel_index(STRATA_UINT32, STRATA_OP_SUM);
    ASSERT_EQ(d_->ModuleGetFunction(&f, m, strata::kern::kKernels[k].name), cu::SUCCESS);
    const unsigned long long n = kBytes / 4;
    std::vector<uint32_t> in(n);
    for (int j = 0; j < 3; ++j) {
        for (size_t i = 0; i < n; ++i) in[i] = uint32_t(i * (j + 1));
        ASSERT_EQ(d_->MemcpyHtoD(dev_[j], in.data(), kBytes), cu::SUCCESS);
    }
    strata::kern::Srcs s{};
    for (int j = 0; j < 3; ++j) s.p[j] = reinterpret_cast<const void *>(dev_[j]);
    // Two destinations (the fused node kernel's form), one of them a source: each
    // source read once, the result written twice.
    strata::kern::Dsts d{};
    d.p[0] = reinterpret_cast<void *>(dev_[3]);
    d.p[1] = reinterpret_cast<void *>(dev_[2]);
    int ndst = 2, nsrc = 3;
    unsigned long long count = n;
    void *params[] = {&d, &ndst, &s, &nsrc, &count};
    EXPECT_EQ(delta([&] {
                  ASSERT_EQ(d_->LaunchKernel(f, 4, 1, 1, 256, 1, 1, 0, stream_, params, nullptr), cu::SUCCESS);
              }),
              (Delta{1, 0, 0, 0, 0, 0, 3 * kBytes, 2 * kBytes}));
    ASSERT_EQ(d_->StreamSynchronize(stream_), cu::SUCCESS);
    std::vector<uint32_t> out(n);
    for (cu::CUdeviceptr p : {dev_[3], dev_[2]}) {
        ASSERT_EQ(d_->MemcpyDtoH(out.data(), p, kBytes), cu::SUCCESS);
        EXPECT_EQ(out[n - 1], uint32_t(6 * (n - 1)));
    }
    d_->ModuleUnload(m);
}

// An event: each record counts; polling one record is one host wait however many polls
// it takes; a new record polled is another; cuEventSynchronize is one each time.
TEST_F(FakeCountersTest, PollingOneRecordIsOneHostWait) {
    cu::CUevent ev = nullptr;
    ASSERT_EQ(d_->EventCreate(&ev, cu::EVENT_DISABLE_TIMING), cu::SUCCESS);
    EXPECT_EQ(delta([&] { ASSERT_EQ(d_->EventQuery(ev), cu::SUCCESS); }), Delta{}) << "never recorded: no wait";
    EXPECT_EQ(delta([&] {
                  ASSERT_EQ(d_->MemcpyAsync(dev_[1], dev_[0], kBytes, stream_), cu::SUCCESS);
                  ASSERT_EQ(d_->EventRecord(ev, stream_), cu::SUCCESS);
              }),
              (Delta{0, 1, 1, 0, 0, 0, kBytes, kBytes}));
    EXPECT_EQ(delta([&] {
                  while (d_->EventQuery(ev) == cu::ERROR_NOT_READY) {
                  }
                  ASSERT_EQ(d_->EventQuery(ev), cu::SUCCESS);
              }),
              (Delta{0, 0, 0, 0, 0, 1, 0, 0}));
    EXPECT_EQ(delta([&] {
                  ASSERT_EQ(d_->EventRecord(ev, stream_), cu::SUCCESS);
                  ASSERT_EQ(d_->EventSynchronize(ev), cu::SUCCESS);
                  ASSERT_EQ(d_->EventQuery(ev), cu::SUCCESS);
              }),
              (Delta{0, 0, 1, 0, 0, 2, 0, 0}));
    d_->EventDestroy(ev);
}

// Stream memory operations: a write and a wait on it count one each, and the wait
// really waits for the value (the stream drains).
TEST_F(FakeCountersTest, StreamWritesAndWaitsCountOneEach) {
    ASSERT_NE(write32_, nullptr) << "the fake exports cuStreamWriteValue32_v2";
    ASSERT_NE(d_->StreamWaitValue32, nullptr);
    ASSERT_EQ(d_->MemsetD32Async(dev_[0], 0, 1, stream_), cu::SUCCESS);
    EXPECT_EQ(delta([&] {
                  ASSERT_EQ(write32_(stream_, dev_[0], 3, 0), cu::SUCCESS);
                  ASSERT_EQ(d_->StreamWaitValue32(stream_, dev_[0], 3, cu::STREAM_WAIT_VALUE_GEQ), cu::SUCCESS);
              }),
              (Delta{0, 0, 0, 1, 1, 0, 0, 0}));
    ASSERT_EQ(d_->StreamSynchronize(stream_), cu::SUCCESS);
    uint32_t v = 0;
    ASSERT_EQ(d_->MemcpyDtoH(&v, dev_[0], 4), cu::SUCCESS);
    EXPECT_EQ(v, 3u);
}

}  // namespace
