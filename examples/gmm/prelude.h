// examples/gmm's own support for ksc's generated gmm.cpp on ksbind's bundled
// runtime (ksbind/runtime/knossos.h).
//
// Why a file named prelude.h: ksbind runs ksc with `--cpp-include prelude.h`,
// so ksc's gmm.cpp starts with #include "prelude.h", which the compiler finds
// here, beside gmm.cpp, before any include folder. Built with ksc's runtime
// instead, gmm.cpp sits in ksbind's cache and gets ksc's prelude.h.
//
// Why not in the bundled runtime: knossos.h is the small surface hand-written
// ks C++ needs; this is what ksc's *output* calls beyond it, and only as much
// of it as this gmm.cpp calls (found by compiling it against knossos.h alone):
// the macros ksc emits, the primitives (index, size, build, sumbuild,
// constVec, deltaVec, unzip, sum, eq, ts_add) at the types gmm.ks uses them,
// and the edef'd scalar functions of ksc's prelude.ks that gmm.ks calls.
// Written for ksbind (not ksc's code); semantics as docs/knossos.md states them.
#pragma once

#include <cmath>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "knossos.h"

// What ksc's definitions are marked with (empty on the CPU).
#ifndef KS_DEF
#define KS_DEF
#endif
// ksc frees a scalar-valued expression's temporaries: mark the arena before
// it, move the top back after it.
#define KS_MARK(alloc, markvar) ::ks::alloc_mark_t markvar = (alloc)->mark();
#define KS_RESET(alloc, markvar) (alloc)->reset(markvar);

namespace ks {

// ------------------------------------------------------------ vectors

template <class T>
int size(tensor<1, T> const& v) {
    return v.size();
}

// Element i, bounds-checked (an out-of-range index is an error, not a crash).
// A reference into the tensor's data, which outlives the tensor object.
template <class T>
T const& index(int i, tensor<1, T> const& v) {
    KS_ASSERT(i >= 0 && i < v.size());
    return v.data()[i];
}

template <class A, class B>
Bool eq(A const& a, B const& b) {
    return a == b;
}

// (build n f): [f 0, ..., f (n-1)].
template <class T, class F>
tensor<1, T> build(allocator* alloc, int n, F f) {
    KS_ASSERT(n >= 0);
    tensor<1, T> out = tensor<1, T>::create(alloc, n);
    for (int i = 0; i < n; ++i) out.data()[i] = f(alloc, i);
    return out;
}

// (constVec n v): n copies of v (tensor elements share v's data, as in ksc).
template <class T>
tensor<1, T> constVec(allocator* alloc, int n, T const& value) {
    KS_ASSERT(n >= 0);
    tensor<1, T> out = tensor<1, T>::create(alloc, n);
    for (int i = 0; i < n; ++i) out.data()[i] = value;
    return out;
}

// (deltaVec n i v): zeros but v at i (scalar elements: all gmm.ks needs).
template <class T>
tensor<1, T> deltaVec(allocator* alloc, int n, int i, T value) {
    static_assert(std::is_arithmetic_v<T>, "deltaVec: scalar elements only");
    KS_ASSERT(i >= 0 && i < n);
    tensor<1, T> out = tensor<1, T>::create(alloc, n);
    for (int j = 0; j < n; ++j) out.data()[j] = T{};
    out.data()[i] = value;
    return out;
}

template <class T>
T sum(allocator*, tensor<1, T> const& v) {
    static_assert(std::is_arithmetic_v<T>, "sum: scalar elements only");
    T total{};
    for (int i = 0; i < v.size(); ++i) total += v.data()[i];
    return total;
}

// A vector of tuples to a tuple of vectors.
template <class... Ts, size_t... I>
Tuple<tensor<1, Ts>...> unzip_impl(allocator* alloc, tensor<1, Tuple<Ts...>> const& v, std::index_sequence<I...>) {
    Tuple<tensor<1, Ts>...> out(tensor<1, Ts>::create(alloc, v.size())...);
    for (int i = 0; i < v.size(); ++i) ((std::get<I>(out).data()[i] = std::get<I>(v.data()[i])), ...);
    return out;
}

template <class... Ts>
Tuple<tensor<1, Ts>...> unzip(allocator* alloc, tensor<1, Tuple<Ts...>> const& v) {
    return unzip_impl(alloc, v, std::index_sequence_for<Ts...>());
}

// ------------------------------------------------------------ tangent sums

// ts_add: a + b over any nesting of scalars, tensors and tuples (a new value).
template <class A, class B, std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>, int> = 0>
A ts_add(allocator*, A a, B b) {
    return a + b;
}

// (Declared before the helpers: a tuple's elements are found by ordinary
// lookup, not by ADL, which for std::tuple looks in std only.)
template <size_t Dim, class T>
tensor<Dim, T> ts_add(allocator* alloc, tensor<Dim, T> const& a, tensor<Dim, T> const& b);
template <class... Ts>
Tuple<Ts...> ts_add(allocator* alloc, Tuple<Ts...> const& a, Tuple<Ts...> const& b);

template <class... Ts, size_t... I>
Tuple<Ts...> ts_add_tuple(allocator* alloc, Tuple<Ts...> const& a, Tuple<Ts...> const& b, std::index_sequence<I...>) {
    return Tuple<Ts...>(ts_add(alloc, std::get<I>(a), std::get<I>(b))...);
}

template <class... Ts>
Tuple<Ts...> ts_add(allocator* alloc, Tuple<Ts...> const& a, Tuple<Ts...> const& b) {
    return ts_add_tuple(alloc, a, b, std::index_sequence_for<Ts...>());
}

template <size_t Dim, class T>
tensor<Dim, T> ts_add(allocator* alloc, tensor<Dim, T> const& a, tensor<Dim, T> const& b) {
    KS_ASSERT(a.size() == b.size());
    tensor<Dim, T> out = tensor<Dim, T>::create(alloc, a.size());
    for (int i = 0, n = a.num_elements(); i < n; ++i) out.data()[i] = ts_add(alloc, a.data()[i], b.data()[i]);
    return out;
}

// Helpers of sumbuild: a deep copy (its accumulator must not share data with
// f's results, which may view the arguments) and an in-place add into it.
template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
T deep_copy(allocator*, T v) {
    return v;
}

template <size_t Dim, class T>
tensor<Dim, T> deep_copy(allocator* alloc, tensor<Dim, T> const& v);
template <class... Ts>
Tuple<Ts...> deep_copy(allocator* alloc, Tuple<Ts...> const& v);

template <class... Ts, size_t... I>
Tuple<Ts...> deep_copy_tuple(allocator* alloc, Tuple<Ts...> const& v, std::index_sequence<I...>) {
    return Tuple<Ts...>(deep_copy(alloc, std::get<I>(v))...);
}

template <class... Ts>
Tuple<Ts...> deep_copy(allocator* alloc, Tuple<Ts...> const& v) {
    return deep_copy_tuple(alloc, v, std::index_sequence_for<Ts...>());
}

template <size_t Dim, class T>
tensor<Dim, T> deep_copy(allocator* alloc, tensor<Dim, T> const& v) {
    tensor<Dim, T> out = tensor<Dim, T>::create(alloc, v.size());
    for (int i = 0, n = v.num_elements(); i < n; ++i) out.data()[i] = deep_copy(alloc, v.data()[i]);
    return out;
}

template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
void add_into(T& acc, T v) {
    acc += v;
}

template <size_t Dim, class T>
void add_into(tensor<Dim, T>& acc, tensor<Dim, T> const& v);
template <class... Ts>
void add_into(Tuple<Ts...>& acc, Tuple<Ts...> const& v);

template <class... Ts, size_t... I>
void add_into_tuple(Tuple<Ts...>& acc, Tuple<Ts...> const& v, std::index_sequence<I...>) {
    (add_into(std::get<I>(acc), std::get<I>(v)), ...);
}

template <class... Ts>
void add_into(Tuple<Ts...>& acc, Tuple<Ts...> const& v) {
    add_into_tuple(acc, v, std::index_sequence_for<Ts...>());
}

template <size_t Dim, class T>
void add_into(tensor<Dim, T>& acc, tensor<Dim, T> const& v) {
    KS_ASSERT(acc.size() == v.size());
    for (int i = 0, n = acc.num_elements(); i < n; ++i) add_into(acc.data()[i], v.data()[i]);
}

// True for scalars and tuples of them: what a sumbuild of no terms can be (0).
template <class T>
struct has_zero : std::is_arithmetic<T> {};
template <class... Ts>
struct has_zero<Tuple<Ts...>> : std::conjunction<has_zero<Ts>...> {};

// (sumbuild n f): f 0 + ... + f (n-1). The accumulator is a copy of f 0;
// each later term's temporaries are freed once it is added in.
template <class T, class F>
T sumbuild(allocator* alloc, int n, F f) {
    if (n <= 0) {
        if constexpr (has_zero<T>::value) {
            return T{};
        } else {
            KS_ASSERT(n > 0);  // the zero of a tensor sum has no known size
        }
    }
    T acc = deep_copy(alloc, static_cast<T const&>(f(alloc, 0)));
    alloc_mark_t mark = alloc->mark();
    for (int i = 1; i < n; ++i) {
        add_into(acc, static_cast<T const&>(f(alloc, i)));
        alloc->reset(mark);
    }
    return acc;
}

// ------------------------------------------------------------ prelude.ks edefs

inline Integer add$aii(allocator*, Integer a, Integer b) { return a + b; }
inline Integer sub$aii(allocator*, Integer a, Integer b) { return a - b; }
inline Integer mul$aii(allocator*, Integer a, Integer b) { return a * b; }
inline Integer div$aii(allocator*, Integer a, Integer b) { return a / b; }
inline Float add$aff(allocator*, Float a, Float b) { return a + b; }
inline Float sub$aff(allocator*, Float a, Float b) { return a - b; }
inline Float mul$aff(allocator*, Float a, Float b) { return a * b; }
inline Float div$aff(allocator*, Float a, Float b) { return a / b; }
inline Float neg$af(allocator*, Float a) { return -a; }
inline Float to_float$ai(allocator*, Integer a) { return static_cast<Float>(a); }
inline Float exp$af(allocator*, Float a) { return std::exp(a); }
inline Float log$af(allocator*, Float a) { return std::log(a); }
inline Float lgamma$af(allocator*, Float a) { return std::lgamma(a); }

// (imax v): the first index of v's largest element; (max v): that element.
inline Integer imax$aT1f(allocator*, tensor<1, Float> const& v) {
    KS_ASSERT(v.size() > 0);
    Integer best = 0;
    for (int i = 1; i < v.size(); ++i)
        if (v.data()[i] > v.data()[best]) best = i;
    return best;
}

inline Float max$aT1f(allocator* alloc, tensor<1, Float> const& v) {
    return v.data()[imax$aT1f(alloc, v)];
}

}  // namespace ks
