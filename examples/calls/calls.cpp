// calls.ks's functions, written as ksc emits them (ks::String is std::string).
// Values with destructors in a result tensor are constructed in place: ksc's
// tensor::create leaves the arena memory raw.
#include "knossos.h"

#include <new>

namespace ks {

ks::Float fadd$aff(ks::allocator * $alloc, ks::Float a, ks::Float b) { return a + b; }

ks::tensor<1, ks::Float> vscale$aT1ff(ks::allocator * $alloc, ks::tensor<1, ks::Float> v, ks::Float s) {
    auto out = ks::tensor<1, ks::Float>::create($alloc, v.size());
    for (int i = 0; i < v.size(); ++i) out[i] = v[i] * s;
    return out;
}

ks::Integer isum$aT1i(ks::allocator * $alloc, ks::tensor<1, ks::Integer> v) {
    ks::Integer s = 0;
    for (int i = 0; i < v.size(); ++i) s += v[i];
    return s;
}

ks::Float msum$aT2f(ks::allocator * $alloc, ks::tensor<2, ks::Float> m) {
    ks::Float s = 0;
    for (int i = 0; i < m.num_elements(); ++i) s += m.data()[i];
    return s;
}

ks::Integer strs$aT1s(ks::allocator * $alloc, ks::tensor<1, ks::String> v) {
    ks::Integer n = 0;
    for (int i = 0; i < v.size(); ++i) n += static_cast<ks::Integer>(v[i].size());
    return n;
}

ks::tensor<1, ks::String> shouts$aT1s(ks::allocator * $alloc, ks::tensor<1, ks::String> v) {
    auto out = ks::tensor<1, ks::String>::create($alloc, v.size());
    for (int i = 0; i < v.size(); ++i) {
        ks::String s;
        for (char c : v[i]) s += (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
        new (&out.data()[i]) ks::String(s + "!");
    }
    return out;
}

ks::tensor<1, ks::String> same_strs$aT1s(ks::allocator * $alloc, ks::tensor<1, ks::String> v) { return v; }

ks::tensor<1, ks::Tuple<ks::String, ks::Float>> tagged$aT1$dsf$bf(
        ks::allocator * $alloc, ks::tensor<1, ks::Tuple<ks::String, ks::Float>> v, ks::Float scale) {
    auto out = ks::tensor<1, ks::Tuple<ks::String, ks::Float>>::create($alloc, v.size());
    for (int i = 0; i < v.size(); ++i)
        new (&out.data()[i]) ks::Tuple<ks::String, ks::Float>(
            ks::make_Tuple(ks::get<0>(v[i]) + "#" + std::to_string(i), ks::get<1>(v[i]) * scale));
    return out;
}

ks::Integer strs_nonempty$aT1s(ks::allocator * $alloc, ks::tensor<1, ks::String> v) {
    for (int i = 0; i < v.size(); ++i) KS_ASSERT(!v[i].empty());
    return v.size();
}

ks::tensor<1, ks::String> repeat_strs$ai(ks::allocator * $alloc, ks::Integer n) {
    auto out = ks::tensor<1, ks::String>::create($alloc, n);
    for (int i = 0; i < n; ++i) out[i] = ks::String{std::string(40, static_cast<char>('a' + i % 26))};
    return out;
}

ks::Float spin$afi(ks::allocator * $alloc, ks::Float x, ks::Integer n) {
    for (ks::Integer i = 0; i < n; ++i) x = x * 0.999f + 0.001f;
    return x;
}

ks::Float vwork$aT1fi(ks::allocator * $alloc, ks::tensor<1, ks::Float> v, ks::Integer passes) {
    ks::Float s = 0;
    for (ks::Integer p = 0; p < passes; ++p)
        for (int i = 0; i < v.size(); ++i) s = s * 0.5f + v[i] * v[i];
    return s;
}

}  // namespace ks
