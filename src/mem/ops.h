/* SPDX-License-Identifier: BSD-3-Clause */
// src/mem/ops.h - element arithmetic, written once for host and device.
//
// Every (type, op) pair that MPI defines for the predefined types is a functor
// here. Under nvcc the same functors compile as __host__ __device__, so the CPU
// unit tests exercise the code the CUDA kernels run.
#ifndef STRATA_MEM_OPS_H
#define STRATA_MEM_OPS_H

#include <cstdint>
#include <type_traits>

#ifdef __CUDACC__
#define STRATA_HD __host__ __device__ __forceinline__
#else
#define STRATA_HD inline
#endif

namespace strata {
namespace ops {

// Layout-compatible with C99 complex types and MPI's pair types.
template <class T>
struct Complex {
    T re, im;
};
template <class V>
struct ValueIndex {
    V value;
    int index;
};
struct Bool8 { uint8_t v; };      // C _Bool: 0 or 1
struct Logical4 { int32_t v; };   // Fortran LOGICAL: 0 is false

template <class T>
STRATA_HD Complex<T> operator+(Complex<T> a, Complex<T> b) { return {a.re + b.re, a.im + b.im}; }
template <class T>
STRATA_HD Complex<T> operator*(Complex<T> a, Complex<T> b) {
    return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}

// Signed overflow wraps (as every MPI does in practice) instead of being UB.
template <class T>
STRATA_HD T wrap_add(T a, T b) {
    if constexpr (std::is_integral<T>::value && std::is_signed<T>::value) {
        using U = typename std::make_unsigned<T>::type;
        return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    } else {
        return static_cast<T>(a + b);
    }
}
template <class T>
STRATA_HD T wrap_mul(T a, T b) {
    if constexpr (std::is_integral<T>::value && std::is_signed<T>::value) {
        using U = typename std::make_unsigned<T>::type;
        return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    } else if constexpr (std::is_integral<T>::value && sizeof(T) < sizeof(int)) {
        // uint8/uint16 promote to int: multiply as unsigned to keep it defined.
        return static_cast<T>(static_cast<unsigned>(a) * static_cast<unsigned>(b));
    } else {
        return static_cast<T>(a * b);
    }
}

struct Sum {
    template <class T> STRATA_HD T operator()(T a, T b) const { return wrap_add(a, b); }
};
struct Prod {
    template <class T> STRATA_HD T operator()(T a, T b) const { return wrap_mul(a, b); }
};
struct Max {
    template <class T> STRATA_HD T operator()(T a, T b) const { return a > b ? a : b; }
};
struct Min {
    template <class T> STRATA_HD T operator()(T a, T b) const { return a < b ? a : b; }
};
struct Band {
    template <class T> STRATA_HD T operator()(T a, T b) const { return static_cast<T>(a & b); }
};
struct Bor {
    template <class T> STRATA_HD T operator()(T a, T b) const { return static_cast<T>(a | b); }
};
struct Bxor {
    template <class T> STRATA_HD T operator()(T a, T b) const { return static_cast<T>(a ^ b); }
};

// Logical ops give 0 or 1 in the operand's type, for integers and logicals alike.
template <class T> STRATA_HD bool truth(T a) { return a != 0; }
STRATA_HD bool truth(Bool8 a) { return a.v != 0; }
STRATA_HD bool truth(Logical4 a) { return a.v != 0; }
template <class T> STRATA_HD T from_truth(bool b, T *) { return static_cast<T>(b ? 1 : 0); }
STRATA_HD Bool8 from_truth(bool b, Bool8 *) { return {static_cast<uint8_t>(b)}; }
STRATA_HD Logical4 from_truth(bool b, Logical4 *) { return {static_cast<int32_t>(b)}; }

struct Land {
    template <class T> STRATA_HD T operator()(T a, T b) const {
        return from_truth(truth(a) && truth(b), static_cast<T *>(nullptr));
    }
};
struct Lor {
    template <class T> STRATA_HD T operator()(T a, T b) const {
        return from_truth(truth(a) || truth(b), static_cast<T *>(nullptr));
    }
};
struct Lxor {
    template <class T> STRATA_HD T operator()(T a, T b) const {
        return from_truth(truth(a) != truth(b), static_cast<T *>(nullptr));
    }
};

// MPI: the larger (smaller) value wins; on a tie the smaller index.
struct Maxloc {
    template <class V> STRATA_HD ValueIndex<V> operator()(ValueIndex<V> a, ValueIndex<V> b) const {
        if (a.value > b.value) return a;
        if (b.value > a.value) return b;
        return a.index < b.index ? a : b;
    }
};
struct Minloc {
    template <class V> STRATA_HD ValueIndex<V> operator()(ValueIndex<V> a, ValueIndex<V> b) const {
        if (a.value < b.value) return a;
        if (b.value < a.value) return b;
        return a.index < b.index ? a : b;
    }
};

// Type classes: which ops MPI defines for which kind of type.
template <class T> struct is_int : std::is_integral<T> {};
template <class T> struct is_real : std::is_floating_point<T> {};
template <class T> struct is_complex : std::false_type {};
template <class T> struct is_complex<Complex<T>> : std::true_type {};
template <class T> struct is_logical : std::false_type {};
template <> struct is_logical<Bool8> : std::true_type {};
template <> struct is_logical<Logical4> : std::true_type {};
template <class T> struct is_pair : std::false_type {};
template <class V> struct is_pair<ValueIndex<V>> : std::true_type {};
struct Byte { uint8_t v; };

template <class T, class Op> struct applies : std::false_type {};
template <class T> struct applies<T, Sum> : std::integral_constant<bool, is_int<T>::value || is_real<T>::value || is_complex<T>::value> {};
template <class T> struct applies<T, Prod> : applies<T, Sum> {};
template <class T> struct applies<T, Max> : std::integral_constant<bool, is_int<T>::value || is_real<T>::value> {};
template <class T> struct applies<T, Min> : applies<T, Max> {};
template <class T> struct applies<T, Land> : std::integral_constant<bool, is_int<T>::value || is_logical<T>::value> {};
template <class T> struct applies<T, Lor> : applies<T, Land> {};
template <class T> struct applies<T, Lxor> : applies<T, Land> {};
template <class T> struct applies<T, Band> : is_int<T> {};
template <class T> struct applies<T, Bor> : is_int<T> {};
template <class T> struct applies<T, Bxor> : is_int<T> {};
template <class T> struct applies<T, Maxloc> : is_pair<T> {};
template <class T> struct applies<T, Minloc> : is_pair<T> {};
// MPI_BYTE takes the bitwise ops only; it is reduced as uint8_t.

}  // namespace ops

// One runtime switch on (type, op), then templates: calls
// f.template operator()<T, Op>() for the pair, or f.unsupported() when MPI
// defines no such reduction (or strata has no kernel for it).
template <class F>
auto dispatch_type(strata_dtype_t t, F &&f) {
    using namespace ops;
    switch (t) {
        case STRATA_INT8: return f(static_cast<int8_t *>(nullptr));
        case STRATA_UINT8: return f(static_cast<uint8_t *>(nullptr));
        case STRATA_INT16: return f(static_cast<int16_t *>(nullptr));
        case STRATA_UINT16: return f(static_cast<uint16_t *>(nullptr));
        case STRATA_INT32: return f(static_cast<int32_t *>(nullptr));
        case STRATA_UINT32: return f(static_cast<uint32_t *>(nullptr));
        case STRATA_INT64: return f(static_cast<int64_t *>(nullptr));
        case STRATA_UINT64: return f(static_cast<uint64_t *>(nullptr));
        case STRATA_FLOAT: return f(static_cast<float *>(nullptr));
        case STRATA_DOUBLE: return f(static_cast<double *>(nullptr));
        case STRATA_LONG_DOUBLE: return f(static_cast<long double *>(nullptr));
        case STRATA_C_FLOAT_COMPLEX: return f(static_cast<Complex<float> *>(nullptr));
        case STRATA_C_DOUBLE_COMPLEX: return f(static_cast<Complex<double> *>(nullptr));
        case STRATA_C_LONG_DOUBLE_COMPLEX: return f(static_cast<Complex<long double> *>(nullptr));
        case STRATA_BOOL: return f(static_cast<Bool8 *>(nullptr));
        case STRATA_LOGICAL4: return f(static_cast<Logical4 *>(nullptr));
        case STRATA_BYTE: return f(static_cast<Byte *>(nullptr));
        case STRATA_FLOAT_INT: return f(static_cast<ValueIndex<float> *>(nullptr));
        case STRATA_2INT: return f(static_cast<ValueIndex<int> *>(nullptr));
        default: return f(static_cast<void *>(nullptr));
    }
}

template <class F>
auto dispatch_op(strata_op_t op, F &&f) {
    using namespace ops;
    switch (op) {
        case STRATA_OP_SUM: return f(Sum{});
        case STRATA_OP_PROD: return f(Prod{});
        case STRATA_OP_MAX: return f(Max{});
        case STRATA_OP_MIN: return f(Min{});
        case STRATA_OP_LAND: return f(Land{});
        case STRATA_OP_LOR: return f(Lor{});
        case STRATA_OP_LXOR: return f(Lxor{});
        case STRATA_OP_BAND: return f(Band{});
        case STRATA_OP_BOR: return f(Bor{});
        case STRATA_OP_BXOR: return f(Bxor{});
        case STRATA_OP_MAXLOC: return f(Maxloc{});
        case STRATA_OP_MINLOC: return f(Minloc{});
        default: return f(nullptr);
    }
}

}  // namespace strata

#endif
