// SPDX-License-Identifier: BSD-3-Clause
// test/unit/ops_test.cc - the host reduce kernel of every MPI (type, op) pair.
//
// The expected values come from an independent scalar model in this file, not
// from the functors under test; inputs are small integers so every result is exact.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <vector>

#include "mem/domain.h"
#include "mem/ops.h"
#include "strata.h"

namespace {

enum class Kind { Int, Real, Complex, Logical, Byte, Pair };

struct TypeInfo {
    strata_dtype_t dtype;
    Kind kind;
    size_t size;
    bool is_signed;
};

const TypeInfo kTypes[] = {
    {STRATA_INT8, Kind::Int, 1, true},    {STRATA_UINT8, Kind::Int, 1, false},
    {STRATA_INT16, Kind::Int, 2, true},   {STRATA_UINT16, Kind::Int, 2, false},
    {STRATA_INT32, Kind::Int, 4, true},   {STRATA_UINT32, Kind::Int, 4, false},
    {STRATA_INT64, Kind::Int, 8, true},   {STRATA_UINT64, Kind::Int, 8, false},
    {STRATA_FLOAT, Kind::Real, 4, true},  {STRATA_DOUBLE, Kind::Real, 8, true},
    {STRATA_LONG_DOUBLE, Kind::Real, sizeof(long double), true},
    {STRATA_C_FLOAT_COMPLEX, Kind::Complex, 8, true},
    {STRATA_C_DOUBLE_COMPLEX, Kind::Complex, 16, true},
    {STRATA_C_LONG_DOUBLE_COMPLEX, Kind::Complex, 2 * sizeof(long double), true},
    {STRATA_BOOL, Kind::Logical, 1, false}, {STRATA_LOGICAL4, Kind::Logical, 4, false},
    {STRATA_BYTE, Kind::Byte, 1, false},
    {STRATA_FLOAT_INT, Kind::Pair, 8, true}, {STRATA_2INT, Kind::Pair, 8, true},
};

// Which ops MPI defines for each kind of type (MPI 4.0, section 6.9.2).
bool mpi_defines(Kind k, strata_op_t op) {
    switch (k) {
        case Kind::Int: return op <= STRATA_OP_BXOR;
        case Kind::Real: return op <= STRATA_OP_MIN;
        case Kind::Complex: return op == STRATA_OP_SUM || op == STRATA_OP_PROD;
        case Kind::Logical: return op >= STRATA_OP_LAND && op <= STRATA_OP_LXOR;
        case Kind::Byte: return op >= STRATA_OP_BAND && op <= STRATA_OP_BXOR;
        case Kind::Pair: return op == STRATA_OP_MAXLOC || op == STRATA_OP_MINLOC;
    }
    return false;
}

// One element as the model sees it: a value (and imaginary part or index).
struct Elem {
    long double a = 0, b = 0;
};

Elem input(const TypeInfo &t, int src, size_t i) {
    const int v = int((i * 7 + size_t(src) * 5) % 4);  // 0..3
    Elem e;
    switch (t.kind) {
        case Kind::Int: e.a = t.is_signed ? v - 1 : v; break;  // -1..2 or 0..3
        case Kind::Real: e.a = v - 1; break;
        case Kind::Complex: e.a = v - 1; e.b = int((i + size_t(src)) % 3) - 1; break;
        case Kind::Logical: e.a = t.dtype == STRATA_BOOL ? (v & 1) : v % 3; break;
        case Kind::Byte: e.a = (v * 37 + int(i)) & 0xff; break;
        case Kind::Pair: e.a = v % 2; e.b = src * 10 + int(i % 3); break;
    }
    return e;
}

void store(const TypeInfo &t, void *base, size_t i, Elem e) {
    char *p = static_cast<char *>(base) + i * t.size;
    const long long a = static_cast<long long>(e.a);
    switch (t.dtype) {
        case STRATA_INT8: case STRATA_UINT8: case STRATA_BOOL: case STRATA_BYTE: {
            const uint8_t x = uint8_t(a); memcpy(p, &x, 1); break; }
        case STRATA_INT16: case STRATA_UINT16: { const uint16_t x = uint16_t(a); memcpy(p, &x, 2); break; }
        case STRATA_INT32: case STRATA_UINT32: case STRATA_LOGICAL4: {
            const uint32_t x = uint32_t(a); memcpy(p, &x, 4); break; }
        case STRATA_INT64: case STRATA_UINT64: { const uint64_t x = uint64_t(a); memcpy(p, &x, 8); break; }
        case STRATA_FLOAT: { const float x = float(e.a); memcpy(p, &x, 4); break; }
        case STRATA_DOUBLE: { const double x = double(e.a); memcpy(p, &x, 8); break; }
        case STRATA_LONG_DOUBLE: { memset(p, 0, t.size); memcpy(p, &e.a, sizeof e.a); break; }
        case STRATA_C_FLOAT_COMPLEX: { const float x[2] = {float(e.a), float(e.b)}; memcpy(p, x, 8); break; }
        case STRATA_C_DOUBLE_COMPLEX: { const double x[2] = {double(e.a), double(e.b)}; memcpy(p, x, 16); break; }
        case STRATA_C_LONG_DOUBLE_COMPLEX: {
            memset(p, 0, t.size); memcpy(p, &e.a, sizeof e.a);
            memcpy(p + sizeof(long double), &e.b, sizeof e.b); break; }
        case STRATA_FLOAT_INT: { const float v = float(e.a); const int ix = int(e.b);
            memcpy(p, &v, 4); memcpy(p + 4, &ix, 4); break; }
        case STRATA_2INT: { const int x[2] = {int(e.a), int(e.b)}; memcpy(p, x, 8); break; }
        default: FAIL() << "no store for type";
    }
}

Elem combine(const TypeInfo &t, strata_op_t op, Elem x, Elem y) {
    const long long a = (long long)x.a, b = (long long)y.a;
    Elem r;
    switch (op) {
        case STRATA_OP_SUM: r.a = x.a + y.a; r.b = x.b + y.b; break;
        case STRATA_OP_PROD:
            if (t.kind == Kind::Complex) { r.a = x.a * y.a - x.b * y.b; r.b = x.a * y.b + x.b * y.a; }
            else r.a = x.a * y.a;
            break;
        case STRATA_OP_MAX: r.a = std::max(x.a, y.a); break;
        case STRATA_OP_MIN: r.a = std::min(x.a, y.a); break;
        case STRATA_OP_LAND: r.a = (a != 0) && (b != 0); break;
        case STRATA_OP_LOR: r.a = (a != 0) || (b != 0); break;
        case STRATA_OP_LXOR: r.a = (a != 0) != (b != 0); break;
        case STRATA_OP_BAND: r.a = a & b; break;
        case STRATA_OP_BOR: r.a = a | b; break;
        case STRATA_OP_BXOR: r.a = a ^ b; break;
        case STRATA_OP_MAXLOC:
            r = x.a > y.a ? x : y.a > x.a ? y : (x.b < y.b ? x : y); break;
        case STRATA_OP_MINLOC:
            r = x.a < y.a ? x : y.a < x.a ? y : (x.b < y.b ? x : y); break;
        default: break;
    }
    return r;
}

// Bit-for-bit on the value bytes: x87 long double carries 6 bytes of padding.
bool same_value(const TypeInfo &t, const char *x, const char *y) {
    if (t.dtype == STRATA_LONG_DOUBLE) return memcmp(x, y, 10) == 0;
    if (t.dtype == STRATA_C_LONG_DOUBLE_COMPLEX)
        return memcmp(x, y, 10) == 0 && memcmp(x + sizeof(long double), y + sizeof(long double), 10) == 0;
    return memcmp(x, y, t.size) == 0;
}

class OpsTest : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(OpsTest, MatchesModel) {
    const TypeInfo &t = kTypes[std::get<0>(GetParam())];
    const strata_op_t op = static_cast<strata_op_t>(std::get<1>(GetParam()));
    ASSERT_EQ(strata_dtype_size(t.dtype), t.size);
    const bool defined = mpi_defines(t.kind, op);
    ASSERT_EQ(strata_op_supported(t.dtype, op) != 0, defined)
        << strata_dtype_name(t.dtype) << " " << strata_op_name(op);
    if (!defined) return;

    // Counts around the kernel's block size, with 1..4 sources, dst aliasing or not.
    for (size_t count : {size_t(1), size_t(3), size_t(1000), size_t(4099)}) {
        for (int nsrc = 1; nsrc <= 4; ++nsrc) {
            std::vector<std::vector<char>> in(size_t(nsrc), std::vector<char>(count * t.size));
            std::vector<char> expect(count * t.size), got(count * t.size);
            for (size_t i = 0; i < count; ++i) {
                Elem acc = input(t, 0, i);
                store(t, in[0].data(), i, acc);
                for (int s = 1; s < nsrc; ++s) {
                    const Elem e = input(t, s, i);
                    store(t, in[size_t(s)].data(), i, e);
                    acc = combine(t, op, acc, e);
                }
                store(t, expect.data(), i, acc);
            }
            std::vector<const void *> srcs;
            for (auto &v : in) srcs.push_back(v.data());
            strata::Ticket tk;
            ASSERT_EQ(strata::host_domain().reduce(got.data(), srcs.data(), nsrc, count, t.dtype, op, &tk),
                      STRATA_OK);
            // Into the last source (domain.h: dst may be any source), on copies.
            std::vector<std::vector<char>> last_in(in);
            std::vector<const void *> last_srcs;
            for (auto &v : last_in) last_srcs.push_back(v.data());
            ASSERT_EQ(strata::host_domain().reduce(last_in.back().data(), last_srcs.data(), nsrc, count, t.dtype,
                                                   op, &tk),
                      STRATA_OK);
            for (size_t i = 0; i < count; ++i)
                ASSERT_TRUE(same_value(t, &expect[i * t.size], &last_in.back()[i * t.size]))
                    << strata_dtype_name(t.dtype) << " " << strata_op_name(op) << " count " << count << " nsrc "
                    << nsrc << ": into the last source, first wrong index " << i;
            // In place: the result lands on the first source.
            ASSERT_EQ(strata::host_domain().reduce(in[0].data(), srcs.data(), nsrc, count, t.dtype, op, &tk),
                      STRATA_OK);
            for (size_t i = 0; i < count; ++i) {
                const size_t o = i * t.size;
                ASSERT_TRUE(same_value(t, &expect[o], &got[o]))
                    << strata_dtype_name(t.dtype) << " " << strata_op_name(op) << " count " << count
                    << " nsrc " << nsrc << ": first wrong index " << i;
                ASSERT_TRUE(same_value(t, &got[o], &in[0][o])) << "in place differs at " << i;
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(AllPairs, OpsTest,
                         ::testing::Combine(::testing::Range(0, int(sizeof kTypes / sizeof kTypes[0])),
                                            ::testing::Range(0, int(STRATA_OP_COUNT))),
                         [](const ::testing::TestParamInfo<std::tuple<int, int>> &i) {
                             return std::string(strata_dtype_name(kTypes[std::get<0>(i.param)].dtype)) +
                                    "_" + strata_op_name(static_cast<strata_op_t>(std::get<1>(i.param)));
                         });

}  // namespace

// strata_dtype_size (the platform layer's table, src/names.cc) is the element size of
// the type every reduction runs on (src/mem/ops.h): a buffer's count x size must be
// exactly the bytes the kernels walk.
TEST(DtypeSize, IsTheSizeOfTheTypeReductionsRunOn) {
    for (int d = 0; d < STRATA_DTYPE_COUNT; ++d) {
        const auto dtype = static_cast<strata_dtype_t>(d);
        const size_t ran_on = strata::dispatch_type(dtype, [](auto *p) -> size_t {
            using T = std::remove_pointer_t<decltype(p)>;
            if constexpr (std::is_void<T>::value) {
                return 0;
            } else {
                return sizeof(T);
            }
        });
        EXPECT_EQ(strata_dtype_size(dtype), ran_on) << strata_dtype_name(dtype);
    }
    EXPECT_EQ(strata_dtype_size(STRATA_DTYPE_COUNT), 0u);
}
