// SPDX-License-Identifier: BSD-3-Clause
// src/mem/host_domain.cc - copy and reduce on host memory, vectorised loops.
#include <sched.h>

#include <cstdlib>
#include <cstring>

#include "mem/domain.h"
#include "mem/ops.h"

namespace strata {
namespace {

// Blocked so that dst stays in cache while each further source is folded in;
// the inner loops are plain element loops the compiler vectorises. Where dst is a
// source other than the first, each block folds into a local block first (writing
// dst early would change a source before it is read).
template <class T, class Op>
void reduce_kernel(void *dst_v, const void *const *srcs_v, int nsrc, size_t count) {
    constexpr size_t kBlock = 4096 / sizeof(T) > 0 ? 4096 / sizeof(T) : 1;
    T *dst = static_cast<T *>(dst_v);
    const Op op{};
    bool later_alias = false;
    for (int s = 1; s < nsrc; ++s) later_alias = later_alias || srcs_v[s] == dst_v;
    T local[kBlock];
    for (size_t b = 0; b < count; b += kBlock) {
        const size_t n = count - b < kBlock ? count - b : kBlock;
        const T *s0 = static_cast<const T *>(srcs_v[0]) + b;
        T *d = later_alias ? local : dst + b;
        if (nsrc == 1) {
            if (d != s0) memmove(d, s0, n * sizeof(T));
            continue;
        }
        const T *s1 = static_cast<const T *>(srcs_v[1]) + b;
        for (size_t i = 0; i < n; ++i) d[i] = op(s0[i], s1[i]);
        for (int s = 2; s < nsrc; ++s) {
            const T *sk = static_cast<const T *>(srcs_v[s]) + b;
            for (size_t i = 0; i < n; ++i) d[i] = op(d[i], sk[i]);
        }
        if (later_alias) memcpy(dst + b, local, n * sizeof(T));
    }
}

template <class T, class Op>
ReduceFn pick_kernel() {
    if constexpr (std::is_same<T, ops::Byte>::value) {
        // MPI_BYTE: the bitwise ops only, as bytes.
        if constexpr (std::is_same<Op, ops::Band>::value || std::is_same<Op, ops::Bor>::value ||
                      std::is_same<Op, ops::Bxor>::value) {
            return &reduce_kernel<uint8_t, Op>;
        } else {
            return nullptr;
        }
    } else if constexpr (ops::applies<T, Op>::value) {
        return &reduce_kernel<T, Op>;
    } else {
        return nullptr;
    }
}

class HostDomain final : public MemDomain {
public:
    const char *name() const override { return "host"; }
    Status copy(void *dst, const void *src, size_t bytes, Ticket *t) override {
        if (dst != src && bytes) memcpy(dst, src, bytes);
        if (t != nullptr) t->pending = nullptr;  // done at once: no ticket needed
        return STRATA_OK;
    }
    Status reduce(void *dst, const void *const *srcs, int nsrc, size_t count, strata_dtype_t dtype,
                  strata_op_t op, Ticket *t) override {
        t->pending = nullptr;
        ReduceFn fn = host_reduce_fn(dtype, op);
        if (!fn) return fail(STRATA_ERR_UNSUPPORTED, "host reduce: no kernel for type/op");
        if (count) fn(dst, srcs, nsrc, count);
        return STRATA_OK;
    }
    // Folded once into dsts[0], which every other destination then copies: every
    // source is read before any destination but the first is written.
    Status reduce_multi(void *const *dsts, int ndst, const void *const *srcs, int nsrc, size_t count,
                        strata_dtype_t dtype, strata_op_t op, Ticket *t) override {
        if (ndst < 1) return fail(STRATA_ERR_ARG, "host reduce: no destination");
        STRATA_CHECK(reduce(dsts[0], srcs, nsrc, count, dtype, op, t));
        for (int d = 1; d < ndst; ++d) copy(dsts[d], dsts[0], count * strata_dtype_size(dtype), t);
        return STRATA_OK;
    }
    Status poll(Ticket *t, bool *done) override {
        *done = t->pending == nullptr;
        return STRATA_OK;
    }
    Status alloc(size_t bytes, void **p) override {
        *p = nullptr;
        if (posix_memalign(p, 64, bytes ? bytes : 64) != 0) return STRATA_ERR_NOMEM;
        return STRATA_OK;
    }
    void release(void *p) override { free(p); }
    Status alloc_host(size_t bytes, void **p) override { return alloc(bytes, p); }
    void release_host(void *p) override { free(p); }
};

}  // namespace

Status wait_ticket(MemDomain &dom, Ticket *t) {
    for (;;) {
        bool done = false;
        STRATA_CHECK(dom.poll(t, &done));
        if (done) return STRATA_OK;
        sched_yield();
    }
}

ReduceFn host_reduce_fn(strata_dtype_t dtype, strata_op_t op) {
    return dispatch_type(dtype, [op](auto *tp) -> ReduceFn {
        using T = std::remove_pointer_t<decltype(tp)>;
        if constexpr (std::is_void<T>::value) {
            return nullptr;
        } else {
            return dispatch_op(op, [](auto opv) -> ReduceFn {
                using Op = decltype(opv);
                if constexpr (std::is_same<Op, std::nullptr_t>::value) {
                    return nullptr;
                } else {
                    return pick_kernel<T, Op>();
                }
            });
        }
    });
}

MemDomain &host_domain() {
    static HostDomain d;
    return d;
}

}  // namespace strata
