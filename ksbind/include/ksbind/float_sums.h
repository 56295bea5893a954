// Sums of float tensors for the torch target's kernels: ks's `sum` of a
// (Tensor N Float), with sixteen partial sums that the compiler vectorises.
//
// knossos.h's sum adds the elements one after another, each add waiting for
// the one before (four cycles each on current x86), and the compiler may not
// reorder float adds without -fassociative-math (fast_math: true). A mean of
// 256 floats then costs about a microsecond, most of what a small ks function
// such as sqrl spends. This overload, more specialised than knossos.h's
// template, keeps sixteen running sums (one AVX-512 register, two AVX2 ones),
// so the loop is a vector add per sixteen elements with no reordering left
// to the compiler, and adds the sixteen pairwise at the end, as ATen's own
// vectorised sums do. Results may differ from ksc's order in the last bits
// (usually closer to the exact sum); fewer than sixteen elements are added
// in ksc's order, with ksc's result.
//
// The torch build's unit includes it after ksbind/vector_math.h and before
// the ks code; KSBIND_VECTOR_MATH=0 leaves it out with the rest of the
// kernels' maths, for ksc's code exactly as written.
#pragma once

#include "knossos.h"

#include <cstddef>

namespace ksbind {
namespace float_sums {

constexpr int lanes = 16;

inline float sum(const float* x, int n) {
    float first = x[0];
    if (n < lanes) {
        for (int i = 1; i < n; ++i) first += x[i];
        return first;
    }
    float acc[lanes];
    for (int k = 0; k < lanes; ++k) acc[k] = x[k];
    int i = lanes;
    for (; i + lanes <= n; i += lanes)
        for (int k = 0; k < lanes; ++k) acc[k] += x[i + k];
    for (int width = lanes / 2; width > 0; width /= 2)
        for (int k = 0; k < width; ++k) acc[k] += acc[k + width];
    float total = acc[0];
    for (; i < n; ++i) total += x[i];
    return total;
}

}  // namespace float_sums
}  // namespace ksbind

// Only over ksc's runtime (which defines KS_FUNCTION): its sum is the one
// replaced; ksbind's bundled runtime has no sum, and gets none from here.
#ifdef KS_FUNCTION
namespace ks {

// ks's (sum t) for a tensor of floats; knossos.h's checks, its result for small tensors.
template <size_t Dim>
KS_FUNCTION Float sum(allocator*, tensor<Dim, Float> const& t) {
    int ne = t.num_elements();
    KS_ASSERT(ne > 0);
    return ksbind::float_sums::sum(t.data(), ne);
}

}  // namespace ks
#endif
