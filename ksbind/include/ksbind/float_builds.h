// Loops of ks's build and sumbuild for the torch target's kernels, written so
// the compiler vectorises them.
//
// - build over a 2-D size: knossos.h writes each element through a pointer it
//   passes down by address (`*(*data)++ = f(i, j)`), so g++ keeps a runtime
//   alias check and a scalar copy of the row loop, re-entered for every row.
//   Here the freshly allocated result is written through a restrict pointer
//   (nothing else can see it yet): one vector loop per row. Same elements in
//   the same order: the result is identical.
// - sumbuild returning a Float: knossos.h adds each term to the one before
//   (each add waiting for the last; the compiler may not reorder float adds),
//   which keeps a sum of computed terms scalar even when computing the terms
//   vectorises. Here, as ksbind/float_sums.h does for `sum`, sixteen running
//   sums (over the terms' positions in each row, modulo sixteen) are added
//   pairwise at the end, then the rows' leftover terms. Fewer than sixteen
//   terms in a row: ksc's order, ksc's result. Results may otherwise differ
//   from ksc's in the last bits. The allocator is reset after every term, as
//   knossos.h does.
// - A sum whose value is unused costs nothing: a vjp's forward pass computes
//   every value ksc's suffwdpass returns, and [sufrev f] drops those its
//   reverse pass does not read (the front end's sum of sin(t) * t before a
//   mean: only its count is read). g++ removes such a loop only when every
//   store in it is to memory it can see is private: the running sums are a
//   local array indexed in place, never passed by pointer (a pointer made
//   g++ keep the stores and the loop: vsqrl's vjp computed every sin twice).
//
// The front end's sum of an elementwise expression is such a sumbuild (no
// temporary tensor). Included by the torch build's unit after
// ksbind/float_sums.h, under the same switch (KSBIND_VECTOR_MATH=0 leaves it
// out, for ksc's code exactly as written).
#pragma once

#include "knossos.h"

#include <type_traits>

#ifdef KS_FUNCTION
namespace ksbind {
namespace float_builds {

constexpr int lanes = 16;

}  // namespace float_builds
}  // namespace ksbind

namespace ks {

// (build (tuple rows cols) f) of any element type: knossos.h's result, written row by row.
template <class T, class F>
KS_FUNCTION tensor<2, T> build(allocator* alloc, Tuple<Integer, Integer> size, F f) {
    tensor<2, T> ret = tensor<2, T>::create(alloc, size);
    T* __restrict out = ret.data();
    const int rows = get<0>(size), cols = get<1>(size);
    for (int i = 0; i < rows; ++i, out += cols)
        for (int j = 0; j < cols; ++j) out[j] = f(alloc, i, j);
    return ret;
}

// (sumbuild n f) returning a Float.
template <class T, class F>
KS_FUNCTION std::enable_if_t<std::is_same_v<T, Float>, T> sumbuild(allocator* alloc, Integer n, F f) {
    KS_ASSERT(n > 0);
    KS_MARK(alloc, mark);
    auto term = [&](int j) {
        Float v = f(alloc, j);
        KS_RESET(alloc, mark);
        return v;
    };
    if (n < ksbind::float_builds::lanes) {  // ksc's order
        Float total = term(0);
        for (int j = 1; j < n; ++j) total += term(j);
        return total;
    }
    // The running sums are a local array indexed in place (no helper takes its
    // address): a pointer to it would make g++ keep every store into it, and
    // with them a whole loop whose sum nobody reads (see the file's comment).
    constexpr int lanes = ksbind::float_builds::lanes;
    float acc[lanes] = {};
    float tail = 0.0f;
    const int whole = n - n % lanes;
    for (int j0 = 0; j0 < whole; j0 += lanes)
        for (int k = 0; k < lanes; ++k) acc[k] += term(j0 + k);
    for (int j = whole; j < n; ++j) tail += term(j);
    for (int width = lanes / 2; width > 0; width /= 2)
        for (int k = 0; k < width; ++k) acc[k] += acc[k + width];
    return acc[0] + tail;
}

// (sumbuild (tuple rows cols) f) returning a Float.
template <class T, class F>
KS_FUNCTION std::enable_if_t<std::is_same_v<T, Float>, T> sumbuild(allocator* alloc, Tuple<Integer, Integer> size,
                                                                    F f) {
    const int rows = get<0>(size), cols = get<1>(size);
    KS_ASSERT(rows > 0 && cols > 0);
    KS_MARK(alloc, mark);
    if (cols < ksbind::float_builds::lanes) {  // ksc's order
        Float total = f(alloc, 0, 0);
        KS_RESET(alloc, mark);
        for (int i = 0; i < rows; ++i)
            for (int j = i == 0 ? 1 : 0; j < cols; ++j) {
                total += f(alloc, i, j);
                KS_RESET(alloc, mark);
            }
        return total;
    }
    constexpr int lanes = ksbind::float_builds::lanes;  // as above: acc indexed in place
    float acc[lanes] = {};
    float tail = 0.0f;
    const int whole = cols - cols % lanes;
    for (int i = 0; i < rows; ++i) {
        for (int j0 = 0; j0 < whole; j0 += lanes)
            for (int k = 0; k < lanes; ++k) {
                acc[k] += f(alloc, i, j0 + k);
                KS_RESET(alloc, mark);
            }
        for (int j = whole; j < cols; ++j) {
            tail += f(alloc, i, j);
            KS_RESET(alloc, mark);
        }
    }
    for (int width = lanes / 2; width > 0; width /= 2)
        for (int k = 0; k < width; ++k) acc[k] += acc[k + width];
    return acc[0] + tail;
}

}  // namespace ks
#endif
