// String functions written as ksc emits them (ks::String is std::string).
#include "knossos.h"

namespace ks {

ks::String shout$asi(ks::allocator * $alloc, ks::String s, ks::Integer n) {
    KS_ASSERT(n >= 0);
    ks::String out;
    for (char c : s) out += (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
    out.append(static_cast<size_t>(n), '!');
    return out;
}

ks::Integer count$ass(ks::allocator * $alloc, ks::String s, ks::String c) {
    KS_ASSERT(c.size() == 1);
    ks::Integer n = 0;
    for (char x : s) n += (x == c[0]);
    return n;
}

}  // namespace ks
