// SPDX-License-Identifier: BSD-3-Clause
// test/unit/kernel_body_test.cc - the GPU reduction's split of work between threads
// (src/mem/kernel_body.h), run on the host: every thread of a launch in turn.
//
// The element arithmetic is tested elsewhere (ops_test.cc); here what a GPU run would
// get wrong silently: an element no thread folds, one folded twice (in place, that is
// a wrong value, not just wasted work), a write past the end, or a result that depends
// on the operands' alignment or the launch's size.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "mem/kernel_body.h"
#include "mem/ops.h"

namespace {

using namespace strata;

constexpr size_t kGuard = 64;  // bytes around each operand that nothing may write

// An operand placed `shift` bytes past a 16-byte boundary of its own storage.
template <class T>
struct Operand {
    std::vector<unsigned char> store;
    T *p;
    Operand(size_t count, size_t shift) : store(count * sizeof(T) + 2 * kGuard + 16, 0xA5) {
        uintptr_t a = reinterpret_cast<uintptr_t>(store.data()) + kGuard;
        a = (a + 15) / 16 * 16 + shift;
        p = reinterpret_cast<T *>(a);
    }
    bool guards_intact(size_t count) const {
        const unsigned char *b = reinterpret_cast<const unsigned char *>(p);
        for (const unsigned char *q = store.data(); q < b; ++q)
            if (*q != 0xA5) return false;
        for (const unsigned char *q = b + count * sizeof(T); q < store.data() + store.size(); ++q)
            if (*q != 0xA5) return false;
        return true;
    }
};

template <class T> T value(int k, size_t i);
template <> uint8_t value<uint8_t>(int k, size_t i) { return uint8_t(i * 7 + k * 13 + 1); }
template <> int32_t value<int32_t>(int k, size_t i) { return int32_t(i * 2654435761u) ^ (k * 977); }
template <> double value<double>(int k, size_t i) { return double(i % 1000) + 0.25 * k; }
template <> ops::ValueIndex<float> value<ops::ValueIndex<float>>(int k, size_t i) {
    return {float((i * 31 + k * 7) % 50), int(i) + k};
}
template <> ops::Complex<double> value<ops::Complex<double>>(int k, size_t i) {
    return {double(i % 17) + k, double(k) - double(i % 5)};
}

// Runs every thread of a launch of n threads, then checks dst against a serial fold.
template <class T, class Op>
void check(size_t count, int nsrc, size_t dst_shift, size_t src_shift, bool in_place, unsigned long long n) {
    std::vector<Operand<T>> srcs;
    for (int k = 0; k < nsrc; ++k) {
        srcs.emplace_back(count, src_shift);
        for (size_t i = 0; i < count; ++i) srcs.back().p[i] = value<T>(k, i);
    }
    Operand<T> out(count, dst_shift);
    T *dst = in_place ? srcs[0].p : out.p;
    std::vector<T> expect(count);
    const Op op{};
    for (size_t i = 0; i < count; ++i) {
        T acc = srcs[0].p[i];
        for (int k = 1; k < nsrc; ++k) acc = op(acc, srcs[size_t(k)].p[i]);
        expect[i] = acc;
    }
    std::vector<const T *> sp;
    for (auto &s : srcs) sp.push_back(s.p);
    for (unsigned long long t = 0; t < n; ++t) kern::reduce_part<T, Op>(dst, sp.data(), nsrc, count, t, n);
    ASSERT_EQ(memcmp(dst, expect.data(), count * sizeof(T)), 0)
        << "count " << count << " nsrc " << nsrc << " dst+" << dst_shift << " src+" << src_shift
        << (in_place ? " in place" : "") << " threads " << n;
    for (auto &s : srcs) ASSERT_TRUE(s.guards_intact(count));
    ASSERT_TRUE(out.guards_intact(in_place ? 0 : count));
}

template <class T, class Op>
void sweep() {
    for (size_t count : {size_t(0), size_t(1), size_t(3), size_t(15), size_t(16), size_t(17), size_t(64),
                         size_t(100), size_t(1000), size_t(4099)})
        for (size_t shift = 0; shift < 16; shift += sizeof(T) < 16 ? sizeof(T) : 16)
            for (int nsrc : {1, 2, 3, 8})
                for (unsigned long long n :
                     {1ull, 3ull, 64ull, kern::launch_threads(count, sizeof(T)) + 1, 1000ull}) {
                    check<T, Op>(count, nsrc, shift, shift, false, n);  // one phase: vectors
                    check<T, Op>(count, nsrc, shift, shift, true, n);
                    if (sizeof(T) < 16)  // phases differ: one element at a time
                        check<T, Op>(count, nsrc, shift, (shift + sizeof(T)) % 16, false, n);
                }
}

TEST(KernelBody, EveryElementFoldedOnceByOneThreadUint8) { sweep<uint8_t, ops::Sum>(); }
TEST(KernelBody, EveryElementFoldedOnceByOneThreadInt32) { sweep<int32_t, ops::Max>(); }
TEST(KernelBody, EveryElementFoldedOnceByOneThreadDouble) { sweep<double, ops::Sum>(); }
TEST(KernelBody, EveryElementFoldedOnceByOneThreadFloatInt) { sweep<ops::ValueIndex<float>, ops::Maxloc>(); }
TEST(KernelBody, EveryElementFoldedOnceByOneThreadComplexDouble) { sweep<ops::Complex<double>, ops::Sum>(); }

// The fused node kernel's body: one fold stored into several destinations (a node's
// outputs), one of which may be a source (MPI_IN_PLACE on the owner's rank). Every
// destination must hold the serial fold, every guard stay intact, whatever the phases.
template <class T, class Op>
void check_multi(size_t count, int nsrc, int ndst, size_t shift, size_t other_shift, bool in_place,
                 unsigned long long n) {
    std::vector<Operand<T>> srcs, outs;
    for (int k = 0; k < nsrc; ++k) {
        srcs.emplace_back(count, shift);
        for (size_t i = 0; i < count; ++i) srcs.back().p[i] = value<T>(k, i);
    }
    // The last destination takes other_shift: where it differs, one element at a time.
    for (int d = 0; d < ndst; ++d) outs.emplace_back(count, d == ndst - 1 ? other_shift : shift);
    std::vector<T *> dp;
    for (auto &o : outs) dp.push_back(o.p);
    if (in_place) dp[0] = srcs[size_t(nsrc - 1)].p;
    std::vector<T> expect(count);
    const Op op{};
    for (size_t i = 0; i < count; ++i) {
        T acc = srcs[0].p[i];
        for (int k = 1; k < nsrc; ++k) acc = op(acc, srcs[size_t(k)].p[i]);
        expect[i] = acc;
    }
    std::vector<const T *> sp;
    for (auto &s : srcs) sp.push_back(s.p);
    for (unsigned long long t = 0; t < n; ++t)
        kern::reduce_part_multi<T, Op>(dp.data(), ndst, sp.data(), nsrc, count, t, n);
    for (int d = 0; d < ndst; ++d)
        ASSERT_EQ(memcmp(dp[size_t(d)], expect.data(), count * sizeof(T)), 0)
            << "destination " << d << " of " << ndst << ", count " << count << " nsrc " << nsrc << " shift "
            << shift << "/" << other_shift << (in_place ? " in place" : "") << " threads " << n;
    for (int k = 0; k < nsrc; ++k) ASSERT_TRUE(srcs[size_t(k)].guards_intact(count));
    for (int d = 0; d < ndst; ++d) ASSERT_TRUE(outs[size_t(d)].guards_intact(in_place && d == 0 ? 0 : count));
}

template <class T, class Op>
void sweep_multi() {
    for (size_t count : {size_t(0), size_t(1), size_t(15), size_t(17), size_t(100), size_t(4099)})
        for (size_t shift = 0; shift < 16; shift += sizeof(T) < 16 ? sizeof(T) : 16)
            for (int ndst : {1, 2, 4, 8})
                for (unsigned long long n : {1ull, 3ull, kern::launch_threads(count, sizeof(T)) + 1}) {
                    check_multi<T, Op>(count, ndst, ndst, shift, shift, false, n);
                    check_multi<T, Op>(count, ndst, ndst, shift, shift, true, n);
                    if (sizeof(T) < 16) check_multi<T, Op>(count, 2, ndst, shift, (shift + sizeof(T)) % 16, false, n);
                }
}

TEST(KernelBody, FoldStoredIntoEveryDestinationUint8) { sweep_multi<uint8_t, ops::Sum>(); }
TEST(KernelBody, FoldStoredIntoEveryDestinationDouble) { sweep_multi<double, ops::Sum>(); }
TEST(KernelBody, FoldStoredIntoEveryDestinationComplexDouble) { sweep_multi<ops::Complex<double>, ops::Prod>(); }

// The launch is sized by 16-byte vectors: one thread per vector, one per element for
// a type that does not divide 16 bytes.
TEST(KernelBody, LaunchSizedByVectors) {
    EXPECT_EQ(kern::launch_threads(0, 4), 0u);
    EXPECT_EQ(kern::launch_threads(1, 4), 1u);
    EXPECT_EQ(kern::launch_threads(1024, 4), 256u);
    EXPECT_EQ(kern::launch_threads(1025, 4), 257u);
    EXPECT_EQ(kern::launch_threads(1024, 1), 64u);
    EXPECT_EQ(kern::launch_threads(10, 16), 10u);
    EXPECT_EQ(kern::launch_threads(10, 12), 10u);
}

}  // namespace
