// The functions of ops.ks, written as ksc emits them: functions in namespace
// ks named by their mangled symbol, taking the allocator first.
#include "knossos.h"

#include <cmath>

namespace ks {

ks::Float mulsin$aff(ks::allocator*, ks::Float x, ks::Float y) { return x * std::sin(y); }

ks::Tuple<ks::Float, ks::Float> sufrev$mulsin$aff(ks::allocator*, ks::Tuple<ks::Float, ks::Float> xy,
                                                  ks::Float dr) {
    ks::Float x = ks::get<0>(xy), y = ks::get<1>(xy);
    return ks::make_Tuple(dr * std::sin(y), dr * x * std::cos(y));
}

// [fwd F]: the arguments as one Tuple, their tangents as another; returns the result's tangent.
ks::Float fwd$mulsin$aff(ks::allocator*, ks::Tuple<ks::Float, ks::Float> xy, ks::Tuple<ks::Float, ks::Float> dxy) {
    ks::Float x = ks::get<0>(xy), y = ks::get<1>(xy);
    return ks::get<0>(dxy) * std::sin(y) + x * std::cos(y) * ks::get<1>(dxy);
}

ks::tensor<1, ks::Float> scale_add$aT1fT1fi(ks::allocator* $alloc, ks::tensor<1, ks::Float> a,
                                             ks::tensor<1, ks::Float> b, ks::Integer n) {
    int len = a.size();
    KS_ASSERT(b.size() == len);
    auto r = ks::tensor<1, ks::Float>::create($alloc, len);
    for (int i = 0; i < len; ++i) r[i] = static_cast<ks::Float>(n) * a[i] * b[i] + a[i];
    return r;
}

ks::tensor<1, ks::Float> fwd$scale_add$aT1fT1fi(
    ks::allocator* $alloc, ks::Tuple<ks::tensor<1, ks::Float>, ks::tensor<1, ks::Float>, ks::Integer> args,
    ks::Tuple<ks::tensor<1, ks::Float>, ks::tensor<1, ks::Float>, ks::Tuple<>> d) {
    auto a = ks::get<0>(args);
    auto b = ks::get<1>(args);
    auto da = ks::get<0>(d);
    auto db = ks::get<1>(d);
    ks::Float n = static_cast<ks::Float>(ks::get<2>(args));
    int len = a.size();
    KS_ASSERT(b.size() == len && da.size() == len && db.size() == len);
    auto r = ks::tensor<1, ks::Float>::create($alloc, len);
    for (int i = 0; i < len; ++i) r[i] = da[i] * (n * b[i] + 1.0f) + db[i] * n * a[i];
    return r;
}

ks::Tuple<ks::tensor<1, ks::Float>, ks::tensor<1, ks::Float>, ks::Tuple<>> sufrev$scale_add$aT1fT1fi(
    ks::allocator* $alloc, ks::Tuple<ks::tensor<1, ks::Float>, ks::tensor<1, ks::Float>, ks::Integer> args,
    ks::tensor<1, ks::Float> dr) {
    auto a = ks::get<0>(args);
    auto b = ks::get<1>(args);
    ks::Float n = static_cast<ks::Float>(ks::get<2>(args));
    int len = a.size();
    KS_ASSERT(b.size() == len && dr.size() == len);
    auto da = ks::tensor<1, ks::Float>::create($alloc, len);
    auto db = ks::tensor<1, ks::Float>::create($alloc, len);
    for (int i = 0; i < len; ++i) {
        da[i] = dr[i] * (n * b[i] + 1.0f);
        db[i] = dr[i] * n * a[i];
    }
    return ks::make_Tuple(da, db, ks::Tuple<>());
}

ks::Float sumsq$aT1f(ks::allocator*, ks::tensor<1, ks::Float> v) {
    ks::Float s = 0;
    for (int i = 0; i < v.size(); ++i) s += v[i] * v[i];
    return s;
}

ks::tensor<1, ks::Float> sufrev$sumsq$aT1f(ks::allocator* $alloc, ks::tensor<1, ks::Float> v, ks::Float dr) {
    auto r = ks::tensor<1, ks::Float>::create($alloc, v.size());
    for (int i = 0; i < v.size(); ++i) r[i] = 2.0f * v[i] * dr;
    return r;
}

ks::Float poke$aT1ff(ks::allocator*, ks::tensor<1, ks::Float> t, ks::Float x) {
    KS_ASSERT(t.size() > 0);
    ks::Float old = t[0];
    t[0] = x;
    return old;
}

ks::tensor<1, ks::Integer> add_int$aT1ii(ks::allocator* $alloc, ks::tensor<1, ks::Integer> v, ks::Integer k) {
    auto r = ks::tensor<1, ks::Integer>::create($alloc, v.size());
    for (int i = 0; i < v.size(); ++i) r[i] = v[i] + k;
    return r;
}

ks::Integer count_true$aT1b(ks::allocator*, ks::tensor<1, ks::Bool> b) {
    ks::Integer n = 0;
    for (int i = 0; i < b.size(); ++i) n += b[i] ? 1 : 0;
    return n;
}

ks::tensor<2, ks::Float> transpose$aT2f(ks::allocator* $alloc, ks::tensor<2, ks::Float> m) {
    int rows = ks::get<0>(m.size()), cols = ks::get<1>(m.size());
    auto r = ks::tensor<2, ks::Float>::create($alloc, ks::make_Tuple(cols, rows));
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) r.index(ks::make_Tuple(j, i)) = m.index(ks::make_Tuple(i, j));
    return r;
}

ks::Tuple<ks::Float, ks::tensor<1, ks::Float>> stats$aT1f(ks::allocator* $alloc, ks::tensor<1, ks::Float> v) {
    auto running = ks::tensor<1, ks::Float>::create($alloc, v.size());
    ks::Float s = 0;
    for (int i = 0; i < v.size(); ++i) {
        s += v[i];
        running[i] = s;
    }
    return ks::make_Tuple(s, running);
}

ks::Float tsum$a$dT1ff$bi(ks::allocator*, ks::Tuple<ks::tensor<1, ks::Float>, ks::Float> p, ks::Integer k) {
    auto v = ks::get<0>(p);
    ks::Float s = ks::get<1>(p);
    for (int i = 0; i < v.size(); ++i) s += v[i];
    return s * static_cast<ks::Float>(k);
}

}  // namespace ks
