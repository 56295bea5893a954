// mix and its vjp, written as ksc emits them. Nested tuples stay ks::Tuple;
// the tangents of Integer and Bool are the empty tuple.
#include "knossos.h"

namespace ks {

ks::Tuple<ks::Tuple<ks::Float,ks::Integer>,ks::Bool> mix$a$dfi$b$db$dff$b$b(
        ks::allocator * $alloc, ks::Tuple<ks::Float,ks::Integer> p, ks::Tuple<ks::Bool,ks::Tuple<ks::Float,ks::Float>> q) {
    ks::Float x = ks::get<0>(p);
    ks::Integer n = ks::get<1>(p);
    ks::Bool flag = ks::get<0>(q);
    ks::Float a = ks::get<0>(ks::get<1>(q));
    ks::Float b = ks::get<1>(ks::get<1>(q));
    ks::Float y = flag ? x * a + b : x - b;
    return ks::make_Tuple(ks::make_Tuple(y, n + 1), !flag);
}

ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<>>,ks::Tuple<ks::Tuple<>,ks::Tuple<ks::Float,ks::Float>>>
sufrev$mix$a$dfi$b$db$dff$b$b(ks::allocator * $alloc,
                              ks::Tuple<ks::Tuple<ks::Float,ks::Integer>,ks::Tuple<ks::Bool,ks::Tuple<ks::Float,ks::Float>>> pq,
                              ks::Tuple<ks::Tuple<ks::Float,ks::Tuple<>>,ks::Tuple<>> dr) {
    auto p = ks::get<0>(pq);
    auto q = ks::get<1>(pq);
    ks::Float x = ks::get<0>(p);
    ks::Bool flag = ks::get<0>(q);
    ks::Float a = ks::get<0>(ks::get<1>(q));
    ks::Float dy = ks::get<0>(ks::get<0>(dr));
    ks::Float dx = flag ? dy * a : dy;
    ks::Float da = flag ? dy * x : 0.0f;
    ks::Float db = flag ? dy : -dy;
    return ks::make_Tuple(ks::make_Tuple(dx, ks::Tuple<>()),
                          ks::make_Tuple(ks::Tuple<>(), ks::make_Tuple(da, db)));
}

}  // namespace ks
