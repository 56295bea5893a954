// matvec, rowsums and their vjps, written as ksc emits them: functions in
// namespace ks named by their mangled symbol, taking the allocator first,
// results allocated in the arena.
#include "knossos.h"

namespace ks {

ks::tensor<1, ks::Float> matvec$aT2fT1f(ks::allocator * $alloc, ks::tensor<2, ks::Float> m,
                                        ks::tensor<1, ks::Float> v) {
    int rows = ks::get<0>(m.size());
    int cols = ks::get<1>(m.size());
    KS_ASSERT(v.size() == cols);
    auto ret = ks::tensor<1, ks::Float>::create($alloc, rows);
    for (int i = 0; i < rows; ++i) {
        ks::Float acc = 0.0f;
        for (int j = 0; j < cols; ++j) acc += m.index(ks::make_Tuple(i, j)) * v[j];
        ret[i] = acc;
    }
    return ret;
}

// d/dm[i,j] = dr[i] * v[j];  d/dv[j] = sum_i dr[i] * m[i,j]
ks::Tuple<ks::tensor<2, ks::Float>,ks::tensor<1, ks::Float>> sufrev$matvec$aT2fT1f(
        ks::allocator * $alloc, ks::Tuple<ks::tensor<2, ks::Float>,ks::tensor<1, ks::Float>> mv,
        ks::tensor<1, ks::Float> dr) {
    auto m = ks::get<0>(mv);
    auto v = ks::get<1>(mv);
    int rows = ks::get<0>(m.size());
    int cols = ks::get<1>(m.size());
    KS_ASSERT(v.size() == cols);
    KS_ASSERT(dr.size() == rows);
    auto dm = ks::tensor<2, ks::Float>::create($alloc, m.size());
    auto dv = ks::tensor<1, ks::Float>::create($alloc, cols);
    for (int j = 0; j < cols; ++j) dv[j] = 0.0f;
    for (int i = 0; i < rows; ++i) {
        for (int j = 0; j < cols; ++j) {
            dm.index(ks::make_Tuple(i, j)) = dr[i] * v[j];
            dv[j] += dr[i] * m.index(ks::make_Tuple(i, j));
        }
    }
    return ks::make_Tuple(dm, dv);
}

ks::tensor<1, ks::Float> rowsums$aT2f(ks::allocator * $alloc, ks::tensor<2, ks::Float> m) {
    int rows = ks::get<0>(m.size());
    int cols = ks::get<1>(m.size());
    auto ret = ks::tensor<1, ks::Float>::create($alloc, rows);
    for (int i = 0; i < rows; ++i) {
        ks::Float acc = 0.0f;
        for (int j = 0; j < cols; ++j) acc += m.index(ks::make_Tuple(i, j));
        ret[i] = acc;
    }
    return ret;
}

ks::tensor<2, ks::Float> sufrev$rowsums$aT2f(ks::allocator * $alloc, ks::tensor<2, ks::Float> m,
                                             ks::tensor<1, ks::Float> dr) {
    int rows = ks::get<0>(m.size());
    int cols = ks::get<1>(m.size());
    KS_ASSERT(dr.size() == rows);
    auto dm = ks::tensor<2, ks::Float>::create($alloc, m.size());
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) dm.index(ks::make_Tuple(i, j)) = dr[i];
    return dm;
}

ks::tensor<1, ks::Float> sums$aT1T1f(ks::allocator * $alloc, ks::tensor<1, ks::tensor<1, ks::Float>> rows) {
    int n = rows.size();
    auto ret = ks::tensor<1, ks::Float>::create($alloc, n);
    for (int i = 0; i < n; ++i) {
        ks::Float acc = 0.0f;
        for (int j = 0; j < rows[i].size(); ++j) acc += rows[i][j];
        ret[i] = acc;
    }
    return ret;
}

}  // namespace ks
