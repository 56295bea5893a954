// The functions of calls.ks, written as ksc emits them (tests/test_jax.py).
#include "knossos.h"

#include <cmath>

namespace ks {

ks::Float mulsin$aff(ks::allocator*, ks::Float x, ks::Float y) { return x * std::sin(y); }
ks::Tuple<ks::Float, ks::Float> sufrev$mulsin$aff(ks::allocator*, ks::Tuple<ks::Float, ks::Float> xy, ks::Float d) {
    ks::Float x = ks::get<0>(xy), y = ks::get<1>(xy);
    return ks::make_Tuple(d * std::sin(y), d * x * std::cos(y));
}

ks::tensor<1, ks::Float> scale$aT1ff(ks::allocator* a, ks::tensor<1, ks::Float> v, ks::Float s) {
    auto r = ks::tensor<1, ks::Float>::create(a, v.size());
    for (int i = 0; i < v.size(); ++i) r[i] = v[i] * s;
    return r;
}
ks::Tuple<ks::tensor<1, ks::Float>, ks::Float> sufrev$scale$aT1ff(ks::allocator* a,
        ks::Tuple<ks::tensor<1, ks::Float>, ks::Float> vs, ks::tensor<1, ks::Float> d) {
    auto v = ks::get<0>(vs);
    ks::Float s = ks::get<1>(vs), ds = 0;
    auto dv = ks::tensor<1, ks::Float>::create(a, v.size());
    for (int i = 0; i < v.size(); ++i) { dv[i] = d[i] * s; ds += d[i] * v[i]; }
    return ks::make_Tuple(dv, ds);
}

ks::Float rowsum$aT1f(ks::allocator*, ks::tensor<1, ks::Float> v) {
    ks::Float s = 0;
    for (int i = 0; i < v.size(); ++i) s += v[i] * v[i];
    return s;
}
ks::tensor<1, ks::Float> sufrev$rowsum$aT1f(ks::allocator* a, ks::tensor<1, ks::Float> v, ks::Float d) {
    auto r = ks::tensor<1, ks::Float>::create(a, v.size());
    for (int i = 0; i < v.size(); ++i) r[i] = 2 * v[i] * d;
    return r;
}

// (sum v, n + size v, 2 v)
ks::Tuple<ks::Float, ks::Integer, ks::tensor<1, ks::Float>> stats$aT1fi(ks::allocator* a, ks::tensor<1, ks::Float> v,
                                                                        ks::Integer n) {
    ks::Float s = 0;
    auto r = ks::tensor<1, ks::Float>::create(a, v.size());
    for (int i = 0; i < v.size(); ++i) { s += v[i]; r[i] = 2 * v[i]; }
    return ks::make_Tuple(s, n + v.size(), r);
}
ks::Tuple<ks::tensor<1, ks::Float>, ks::Tuple<>> sufrev$stats$aT1fi(ks::allocator* a,
        ks::Tuple<ks::tensor<1, ks::Float>, ks::Integer> vn, ks::Tuple<ks::Float, ks::Tuple<>, ks::tensor<1, ks::Float>> d) {
    auto v = ks::get<0>(vn);
    auto dr = ks::get<2>(d);
    auto r = ks::tensor<1, ks::Float>::create(a, v.size());
    for (int i = 0; i < v.size(); ++i) r[i] = ks::get<0>(d) + 2 * dr[i];
    return ks::make_Tuple(r, ks::Tuple<>{});
}

// every element squared
ks::tensor<1, ks::tensor<1, ks::Float>> nested$aT1T1f(ks::allocator* a, ks::tensor<1, ks::tensor<1, ks::Float>> m) {
    auto r = ks::tensor<1, ks::tensor<1, ks::Float>>::create(a, m.size());
    for (int i = 0; i < m.size(); ++i) {
        auto row = ks::tensor<1, ks::Float>::create(a, m[i].size());
        for (int j = 0; j < m[i].size(); ++j) row[j] = m[i][j] * m[i][j];
        r[i] = row;
    }
    return r;
}
ks::tensor<1, ks::tensor<1, ks::Float>> sufrev$nested$aT1T1f(ks::allocator* a, ks::tensor<1, ks::tensor<1, ks::Float>> m,
                                                             ks::tensor<1, ks::tensor<1, ks::Float>> d) {
    auto r = ks::tensor<1, ks::tensor<1, ks::Float>>::create(a, m.size());
    for (int i = 0; i < m.size(); ++i) {
        auto row = ks::tensor<1, ks::Float>::create(a, m[i].size());
        for (int j = 0; j < m[i].size(); ++j) row[j] = 2 * m[i][j] * d[i][j];
        r[i] = row;
    }
    return r;
}

ks::Float pairs$aT1$dfi$b(ks::allocator*, ks::tensor<1, ks::Tuple<ks::Float, ks::Integer>> p) {
    ks::Float s = 0;
    for (int i = 0; i < p.size(); ++i) s += ks::get<0>(p[i]) * ks::get<1>(p[i]);
    return s;
}

// rows of lengths 1..n+2: ragged
ks::tensor<1, ks::tensor<1, ks::Float>> ragged$ai(ks::allocator* a, ks::Integer n) {
    auto r = ks::tensor<1, ks::tensor<1, ks::Float>>::create(a, n + 2);
    for (int i = 0; i < n + 2; ++i) {
        auto row = ks::tensor<1, ks::Float>::create(a, i + 1);
        for (int j = 0; j <= i; ++j) row[j] = 1;
        r[i] = row;
    }
    return r;
}

// v repeated k times: a shape that depends on a value
ks::tensor<1, ks::Float> repeat$aT1fi(ks::allocator* a, ks::tensor<1, ks::Float> v, ks::Integer k) {
    auto r = ks::tensor<1, ks::Float>::create(a, v.size() * k);
    for (int i = 0; i < r.size(); ++i) r[i] = v[i % v.size()];
    return r;
}

ks::Float checked$af(ks::allocator*, ks::Float x) {
    KS_ASSERT(x >= 0.0f);
    return std::sqrt(x);
}

ks::Bool flag$aT1ib(ks::allocator*, ks::tensor<1, ks::Integer> v, ks::Bool b) {
    bool any = false;
    for (int i = 0; i < v.size(); ++i) any = any || v[i] > 0;
    return any && b;
}

}  // namespace ks
