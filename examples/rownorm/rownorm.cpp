// rownorm.ks's functions, written as ksc emits them: functions in namespace ks
// named by their mangled symbol, taking the allocator first; `build`/`map`
// allocate a new tensor and fill it in a loop, `sum` and `fold` are loops.
#include "knossos.h"

#include <cmath>

namespace ks {

ks::Float vmax$aT1f(ks::allocator* $alloc, ks::tensor<1, ks::Float> x) {
    KS_ASSERT(x.size() > 0);
    ks::Float acc = x[0];
    for (int i = 0; i < x.size(); ++i) {
        ks::Float xi = x[i];
        acc = xi > acc ? xi : acc;
    }
    return acc;
}

ks::tensor<1, ks::Float> rownorm$aT1f(ks::allocator* $alloc, ks::tensor<1, ks::Float> x) {
    ks::Float m = vmax$aT1f($alloc, x);
    int n = x.size();
    auto e = ks::tensor<1, ks::Float>::create($alloc, n);
    for (int i = 0; i < n; ++i) e[i] = std::exp(x[i] - m);
    ks::Float s = 0.0f;
    for (int i = 0; i < n; ++i) s += e[i];
    auto r = ks::tensor<1, ks::Float>::create($alloc, n);
    for (int i = 0; i < n; ++i) r[i] = e[i] / s;
    return r;
}

ks::Float muladd_relu$aff(ks::allocator* $alloc, ks::Float x, ks::Float y) {
    return x * y + (x > y ? x - y : 0.0f);
}

}  // namespace ks
