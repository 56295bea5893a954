// The jax target's code that compiles in the user's translation unit, beside
// the ks functions (ksbind/targets/jax/build.py): the elementwise loops, which
// inline a scalar ks function, and nothing of XLA's FFI. The handlers (another
// unit, ksbind/jax.h) read XLA's buffers and call these loops and the plain
// entry points through the generated jax_entry_points.h, so the FFI headers
// and the handlers' templates compile beside the user's C++, not after it.
#pragma once

#ifndef KSBIND_NO_PYTHON
#define KSBIND_NO_PYTHON 1
#endif

#include <knossos.h>
#include <ksbind/call_arena.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <utility>

namespace ksbind {
namespace jax_target {

// The elementwise loop itself, over [begin, end). On x86-64 Linux it is built
// twice, for the baseline and for x86-64-v3 (AVX2, FMA), and the loader picks
// the one the CPU runs (an ifunc): 8 floats a step where the CPU has them,
// as XLA's own loops use, while the module still runs on any x86-64.
#if defined(__x86_64__) && defined(__linux__) && defined(__has_attribute) && !defined(KSBIND_JAX_NO_CLONES)
#if __has_attribute(target_clones)
#define KSBIND_JAX_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
#endif
#ifndef KSBIND_JAX_CLONES
#define KSBIND_JAX_CLONES
#endif

// A failure comes back as an exception_ptr, rethrown by the caller: GCC's
// dispatcher of cloned functions does not pass exceptions through (terminate).
template <size_t NIn, size_t NOut, class F>
KSBIND_JAX_CLONES std::exception_ptr elementwise_loop(const F& f, ks::allocator* alloc, const float* const* in,
                                                      float* const* out, int64_t begin, int64_t end) noexcept {
    try {
        for (int64_t i = begin; i < end; ++i) {
            auto r = [&]<size_t... I>(std::index_sequence<I...>) { return f(alloc, in[I][i]...); }(
                std::make_index_sequence<NIn>());
            if constexpr (NOut == 1) {
                out[0][i] = r;
            } else {
                [&]<size_t... K>(std::index_sequence<K...>) { ((out[K][i] = ks::get<K>(r)), ...); }(
                    std::make_index_sequence<NOut>());
            }
        }
    } catch (...) {
        return std::current_exception();
    }
    return nullptr;
}


// One thread's part of an elementwise call: [begin, end) of NIn float32 inputs
// into NOut outputs, on this thread's arena; a ks failure is rethrown as the
// C++ exception the handler turns into a JAX error (ksbind/ks_failure.h).
template <size_t NIn, size_t NOut, class F>
void elementwise_chunk(const CallSite& site, const F& f, const float* const* in, float* const* out, int64_t begin,
                       int64_t end) {
    CallArena arena;  // this thread's
    ks::allocator* alloc = &arena.allocator();
    arena.call(site, false, [&] {
        if (std::exception_ptr e = elementwise_loop<NIn, NOut>(f, alloc, in, out, begin, end))
            std::rethrow_exception(e);
        return 0;
    });
}

}  // namespace jax_target
}  // namespace ksbind
