// relu3 and its vjp, written as ksc emits them: functions in namespace ks
// named by their mangled symbol, taking the allocator first.
#include "knossos.h"

namespace ks {

ks::Float relu3$af(ks::allocator * $alloc, ks::Float x) {
    if (x < 0.0f) return 0.0f;
    if (x < 1.0f) return x * x * x / 3.0f;
    return x - 2.0f / 3.0f;
}

ks::Float sufrev$relu3$af(ks::allocator * $alloc, ks::Float x, ks::Float ddr) {
    if (x < 0.0f) return 0.0f;
    if (x < 1.0f) return x * x * ddr;
    return ddr;
}

ks::tensor<1, ks::Float> vrelu3$aT1f(ks::allocator * $alloc, ks::tensor<1, ks::Float> t) {
    int n = t.size();
    auto ret = ks::tensor<1, ks::Float>::create($alloc, n);
    for (int i = 0; i < n; ++i) ret[i] = relu3$af($alloc, t[i]);
    return ret;
}

ks::tensor<1, ks::Float> sufrev$vrelu3$aT1f(ks::allocator * $alloc, ks::tensor<1, ks::Float> t,
                                            ks::tensor<1, ks::Float> dret) {
    int n = t.size();
    KS_ASSERT(dret.size() == n);
    auto ret = ks::tensor<1, ks::Float>::create($alloc, n);
    for (int i = 0; i < n; ++i) ret[i] = sufrev$relu3$af($alloc, t[i], dret[i]);
    return ret;
}

}  // namespace ks
