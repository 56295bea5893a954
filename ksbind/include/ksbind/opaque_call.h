// A function pointer the optimiser cannot see through.
//
// The torch target's plain ops call each ks function from a small wrapper
// (NAME_ks, in the unit that also holds the ks code). Called directly, g++ at
// -O2 inlines the ks function into that wrapper and still emits the ks
// function itself (ks functions call each other: a vjp calls its primal), so
// the same code is optimised twice. Calling through
//   ksbind::opaque<R (*)(ks::allocator*, P...)>(&ks::f)(alloc, p...)
// keeps one copy: the empty asm statement claims to change the pointer, so
// the call stays an indirect call the compiler cannot inline (the explicit
// pointer type also picks f among C++ overloads of its name). The cost is one
// indirect call per op call, beside a dispatcher call that costs far more;
// what it saves is measured in docs/performance.md.
#pragma once

namespace ksbind {

template <class F>
inline F opaque(F f) {
#if defined(__GNUC__)  // g++ and clang
    asm("" : "+r"(f));
    return f;
#else
    F volatile hidden = f;
    return hidden;
#endif
}

}  // namespace ksbind
