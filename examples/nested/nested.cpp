// The functions of nested.ks, written as ksc emits them: functions in
// namespace ks named by their mangled symbol, taking the allocator first.
// Tensors of tensors are arrays of views (each row its own size).
#include "knossos.h"

namespace ks {

typedef ks::tensor<1, ks::Float> Vec;
typedef ks::tensor<1, Vec> VecVec;

static ks::Float vsum(Vec v) {
    ks::Float s = 0;
    for (int j = 0; j < v.size(); ++j) s += v[j];
    return s;
}

static Vec filled(ks::allocator* $alloc, int n, ks::Float x) {
    Vec r = Vec::create($alloc, n);
    for (int j = 0; j < n; ++j) r[j] = x;
    return r;
}

Vec rowsums$aT1T1f(ks::allocator* $alloc, VecVec m) {
    Vec r = Vec::create($alloc, m.size());
    for (int i = 0; i < m.size(); ++i) r[i] = vsum(m[i]);
    return r;
}

VecVec sufrev$rowsums$aT1T1f(ks::allocator* $alloc, VecVec m, Vec dr) {
    KS_ASSERT(dr.size() == m.size());
    VecVec d = VecVec::create($alloc, m.size());
    for (int i = 0; i < m.size(); ++i) d[i] = filled($alloc, m[i].size(), dr[i]);
    return d;
}

ks::Float weighted$aT1T1fT1ff(ks::allocator*, VecVec rows, Vec w, ks::Float a) {
    KS_ASSERT(w.size() == rows.size());
    ks::Float s = 0;
    for (int i = 0; i < rows.size(); ++i)
        for (int j = 0; j < rows[i].size(); ++j) s += w[i] * rows[i][j] * rows[i][j];
    return a * s;
}

ks::Tuple<VecVec, Vec, ks::Float> sufrev$weighted$aT1T1fT1ff(ks::allocator* $alloc, ks::Tuple<VecVec, Vec, ks::Float> args,
                                                             ks::Float dr) {
    VecVec rows = ks::get<0>(args);
    Vec w = ks::get<1>(args);
    ks::Float a = ks::get<2>(args);
    VecVec drows = VecVec::create($alloc, rows.size());
    Vec dw = Vec::create($alloc, w.size());
    ks::Float s = 0;
    for (int i = 0; i < rows.size(); ++i) {
        drows[i] = Vec::create($alloc, rows[i].size());
        ks::Float sq = 0;
        for (int j = 0; j < rows[i].size(); ++j) {
            sq += rows[i][j] * rows[i][j];
            drows[i][j] = dr * a * w[i] * 2 * rows[i][j];
        }
        dw[i] = dr * a * sq;
        s += w[i] * sq;
    }
    return ks::make_Tuple(drows, dw, dr * s);
}

VecVec prefixes$aT1f(ks::allocator* $alloc, Vec v) {
    VecVec r = VecVec::create($alloc, v.size());
    for (int i = 0; i < v.size(); ++i) {
        r[i] = Vec::create($alloc, i + 1);
        for (int j = 0; j <= i; ++j) r[i][j] = v[j];
    }
    return r;
}

Vec sufrev$prefixes$aT1f(ks::allocator* $alloc, Vec v, VecVec dr) {
    KS_ASSERT(dr.size() == v.size());
    Vec d = filled($alloc, v.size(), 0);
    for (int i = 0; i < dr.size(); ++i) {
        KS_ASSERT(dr[i].size() == i + 1);
        for (int j = 0; j <= i; ++j) d[j] += dr[i][j];
    }
    return d;
}

typedef ks::tensor<1, ks::Tuple<ks::Float, Vec>> Pairs;

ks::Float pairsum$aT1$dfT1f$b(ks::allocator*, Pairs ps) {
    ks::Float s = 0;
    for (int i = 0; i < ps.size(); ++i) s += ks::get<0>(ps[i]) * vsum(ks::get<1>(ps[i]));
    return s;
}

Pairs sufrev$pairsum$aT1$dfT1f$b(ks::allocator* $alloc, Pairs ps, ks::Float dr) {
    Pairs d = Pairs::create($alloc, ps.size());
    for (int i = 0; i < ps.size(); ++i) {
        Vec v = ks::get<1>(ps[i]);
        d[i] = ks::make_Tuple(dr * vsum(v), filled($alloc, v.size(), dr * ks::get<0>(ps[i])));
    }
    return d;
}

ks::Tuple<ks::Float, ks::Integer, Vec> split_stats$aT1f(ks::allocator* $alloc, Vec v) {
    ks::Integer positive = 0;
    Vec twice = Vec::create($alloc, v.size());
    for (int j = 0; j < v.size(); ++j) {
        positive += v[j] > 0;
        twice[j] = 2 * v[j];
    }
    return ks::make_Tuple(vsum(v), positive, twice);
}

Vec sufrev$split_stats$aT1f(ks::allocator* $alloc, Vec v, ks::Tuple<ks::Float, ks::Tuple<>, Vec> dr) {
    Vec dtwice = ks::get<2>(dr);
    KS_ASSERT(dtwice.size() == v.size());
    Vec d = Vec::create($alloc, v.size());
    for (int j = 0; j < v.size(); ++j) d[j] = ks::get<0>(dr) + 2 * dtwice[j];
    return d;
}

typedef ks::tensor<1, VecVec> Cube;

ks::Float cube_sum$aT1T1T1f(ks::allocator*, Cube c) {
    ks::Float s = 0;
    for (int i = 0; i < c.size(); ++i)
        for (int j = 0; j < c[i].size(); ++j) s += vsum(c[i][j]);
    return s;
}

Cube sufrev$cube_sum$aT1T1T1f(ks::allocator* $alloc, Cube c, ks::Float dr) {
    Cube d = Cube::create($alloc, c.size());
    for (int i = 0; i < c.size(); ++i) {
        d[i] = VecVec::create($alloc, c[i].size());
        for (int j = 0; j < c[i].size(); ++j) d[i][j] = filled($alloc, c[i][j].size(), dr);
    }
    return d;
}

ks::tensor<1, ks::Tuple<ks::Integer, Vec>> numbered$aT1T1f(ks::allocator* $alloc, VecVec m) {
    auto r = ks::tensor<1, ks::Tuple<ks::Integer, Vec>>::create($alloc, m.size());
    for (int i = 0; i < m.size(); ++i) r[i] = ks::make_Tuple(i, m[i]);
    return r;
}

ks::Integer poke_rows$aT1T1ff(ks::allocator*, VecVec rows, ks::Float x) {
    ks::Integer n = 0;
    for (int i = 0; i < rows.size(); ++i)
        if (rows[i].size() > 0) {
            rows[i][0] = x;
            ++n;
        }
    return n;
}

}  // namespace ks
