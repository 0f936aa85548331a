/* SPDX-License-Identifier: BSD-3-Clause */
// src/mem/kernel_body.h - what one GPU thread of a reduction launch does, written once
// for the kernel (src/mem/cuda_kernels.cu) and for the host, where a unit test runs
// every thread of a launch in turn (test/unit/kernel_body_test.cc): the split of the
// elements between threads is what a GPU run would get wrong silently, so it is
// checked here without one.
//
// dst[i] = src[0][i] op src[1][i] op ... op src[nsrc-1][i], left to right as MPI folds,
// for i < count, by threads 0 .. nthreads-1 of a launch (thread = its index in the
// grid), stored into one destination or into several (reduce_part_multi). Every
// element is read from every source, then written once by one thread, so
// dst may alias a source.
//
// Speed: a thread moves 16 bytes per operand at a time (one 128-bit load or store) where
// every operand has the same address modulo 16: elements before the first 16-byte
// boundary (the head) and after the last whole vector (the tail) go one at a time,
// the vectors in between kUnroll at a time, their loads issued before any of them is
// folded, so each thread keeps several loads in flight. Operands of different
// alignment go one element at a time. The launch is sized by vectors
// (launch_threads), not by elements.
#ifndef STRATA_MEM_KERNEL_BODY_H
#define STRATA_MEM_KERNEL_BODY_H

#include <stddef.h>
#include <stdint.h>

#include "strata.h"
#include "mem/ops.h"

// Unrolls the loop it precedes in device code; the host compiler decides for itself.
#ifdef __CUDACC__
#define STRATA_UNROLL _Pragma("unroll")
#else
#define STRATA_UNROLL
#endif

namespace strata {
namespace kern {

constexpr int kUnroll = 4;

// Elements per 16-byte vector of T (1: T is not a divisor of 16 bytes, no vectors). A
// constant, not a function: device code may read it without calling host code.
template <class T>
constexpr unsigned kPerVector = sizeof(T) <= 16 && 16 % sizeof(T) == 0 ? unsigned(16 / sizeof(T)) : 1u;

// Threads worth launching for count elements of es bytes: one per vector (per element
// for a type that does not divide 16 bytes), so no thread idles in the vector body.
inline unsigned long long launch_threads(unsigned long long count, size_t es) {
    const unsigned long long per = es != 0 && es <= 16 && 16 % es == 0 ? 16 / es : 1;
    return count / per + (count % per != 0 ? 1 : 0);
}

template <class T>
struct alignas(16) Vec16 {
    T v[kPerVector<T>];
};

// Element i, folded over every source, stored in dst[i].
template <class T, class Op>
STRATA_HD void fold_one(T *const *dst, int ndst, const T *const *src, int nsrc, unsigned long long i) {
    const Op op{};
    T acc = src[0][i];
    for (int k = 1; k < nsrc; ++k) acc = op(acc, src[k][i]);
    for (int d = 0; d < ndst; ++d) dst[d][i] = acc;
}

// Elements [first, end) one at a time, thread t of n taking t, t + n, ...: the head
// and tail around the vectors, or every element where the operands' alignments differ
// (rare: a buffer offset by a few elements against another).
template <class T, class Op>
STRATA_HD void fold_scalar(T *const *dst, int ndst, const T *const *src, int nsrc, unsigned long long first,
                           unsigned long long end, unsigned long long t, unsigned long long n) {
    for (unsigned long long i = first + t; i < end; i += n) fold_one<T, Op>(dst, ndst, src, nsrc, i);
}

// Vector i of 16 bytes from element `at` of every destination: the folded value.
template <class T>
STRATA_HD void store_all(T *const *dst, int ndst, unsigned long long at, unsigned long long i, const Vec16<T> &v) {
    for (int d = 0; d < ndst; ++d) reinterpret_cast<Vec16<T> *>(dst[d] + at)[i] = v;
}

// Vectors [0, nvec) of 16 bytes starting at element `at` of every operand (all
// 16-byte aligned there), thread t of n taking t, t + n, ..., kUnroll per round.
template <class T, class Op>
STRATA_HD void fold_vectors(T *const *dst, int ndst, const T *const *src, int nsrc, unsigned long long at,
                            unsigned long long nvec, unsigned long long t, unsigned long long n) {
    using V = Vec16<T>;
    constexpr unsigned kPer = kPerVector<T>;
    const Op op{};
    unsigned long long i = t;
    for (; i + (kUnroll - 1) * n < nvec; i += kUnroll * n) {
        V acc[kUnroll];
STRATA_UNROLL
        for (int u = 0; u < kUnroll; ++u) acc[u] = reinterpret_cast<const V *>(src[0] + at)[i + u * n];
        for (int k = 1; k < nsrc; ++k) {
            V b[kUnroll];
STRATA_UNROLL
            for (int u = 0; u < kUnroll; ++u) b[u] = reinterpret_cast<const V *>(src[k] + at)[i + u * n];
STRATA_UNROLL
            for (int u = 0; u < kUnroll; ++u)
STRATA_UNROLL
                for (unsigned e = 0; e < kPer; ++e) acc[u].v[e] = op(acc[u].v[e], b[u].v[e]);
        }
STRATA_UNROLL
        for (int u = 0; u < kUnroll; ++u) store_all(dst, ndst, at, i + u * n, acc[u]);
    }
    for (; i < nvec; i += n) {
        V acc = reinterpret_cast<const V *>(src[0] + at)[i];
        for (int k = 1; k < nsrc; ++k) {
            const V b = reinterpret_cast<const V *>(src[k] + at)[i];
STRATA_UNROLL
            for (unsigned e = 0; e < kPer; ++e) acc.v[e] = op(acc.v[e], b.v[e]);
        }
        store_all(dst, ndst, at, i, acc);
    }
}

// Thread t of a launch of n threads: its share of the whole reduction, whose result
// goes to every one of dst[0 .. ndst-1] (a node's reduced slice stored once into every
// peer's output). Each element is read from every source before any destination is
// written, so a destination may alias a source.
template <class T, class Op>
STRATA_HD void reduce_part_multi(T *const *dst, int ndst, const T *const *src, int nsrc, unsigned long long count,
                                 unsigned long long t, unsigned long long n) {
    constexpr unsigned kPer = kPerVector<T>;
    const uintptr_t phase = reinterpret_cast<uintptr_t>(dst[0]) % 16;
    bool same = kPer > 1;
    for (int d = 1; d < ndst && same; ++d) same = reinterpret_cast<uintptr_t>(dst[d]) % 16 == phase;
    for (int k = 0; k < nsrc && same; ++k) same = reinterpret_cast<uintptr_t>(src[k]) % 16 == phase;
    // Operands aligned only for T have a phase that is a multiple of sizeof(T), so
    // the head is a whole number of elements.
    if (!same || phase % sizeof(T) != 0) {
        fold_scalar<T, Op>(dst, ndst, src, nsrc, 0, count, t, n);
        return;
    }
    unsigned long long head = phase == 0 ? 0 : (16 - phase) / sizeof(T);
    if (head > count) head = count;
    const unsigned long long nvec = (count - head) / kPer, tail = head + nvec * kPer;
    fold_scalar<T, Op>(dst, ndst, src, nsrc, 0, head, t, n);
    fold_vectors<T, Op>(dst, ndst, src, nsrc, head, nvec, t, n);
    fold_scalar<T, Op>(dst, ndst, src, nsrc, tail, count, t, n);
}

// The same with one destination.
template <class T, class Op>
STRATA_HD void reduce_part(T *dst, const T *const *src, int nsrc, unsigned long long count, unsigned long long t,
                           unsigned long long n) {
    reduce_part_multi<T, Op>(&dst, 1, src, nsrc, count, t, n);
}

}  // namespace kern
}  // namespace strata

#endif
