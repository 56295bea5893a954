// softsign and its vjp, written as ksc emits them (functions in namespace ks
// named by their mangled symbol, the allocator first), so the package builds
// with ksbind's bundled runtime and needs no ksc.
#include "knossos.h"

namespace ks {

ks::Float softsign$af(ks::allocator * $alloc, ks::Float x) {
    return x < 0.0f ? x / (1.0f - x) : x / (1.0f + x);
}

// d softsign / dx = 1 / (1 + |x|)^2
ks::Float sufrev$softsign$af(ks::allocator * $alloc, ks::Float x, ks::Float ddr) {
    ks::Float d = x < 0.0f ? 1.0f - x : 1.0f + x;
    return ddr / (d * d);
}

ks::tensor<1, ks::Float> vsoftsign$aT1f(ks::allocator * $alloc, ks::tensor<1, ks::Float> t) {
    int n = t.size();
    auto ret = ks::tensor<1, ks::Float>::create($alloc, n);
    for (int i = 0; i < n; ++i) ret[i] = softsign$af($alloc, t[i]);
    return ret;
}

ks::tensor<1, ks::Float> sufrev$vsoftsign$aT1f(ks::allocator * $alloc, ks::tensor<1, ks::Float> t,
                                               ks::tensor<1, ks::Float> dret) {
    int n = t.size();
    KS_ASSERT(dret.size() == n);
    auto ret = ks::tensor<1, ks::Float>::create($alloc, n);
    for (int i = 0; i < n; ++i) ret[i] = sufrev$softsign$af($alloc, t[i], dret[i]);
    return ret;
}

}  // namespace ks
