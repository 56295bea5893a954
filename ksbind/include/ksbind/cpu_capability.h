// Per-CPU-capability kernels, chosen at run time (the torch target's
// elementwise and vmap loops), the way ATen builds its CPU_CAPABILITY kernels.
//
// The module is compiled for baseline x86-64 (no -march=native: a cached or
// shipped .so must run on any x86-64 CPU), so ks code alone gets SSE2 (4
// floats a vector). The loops that call ks functions are instead compiled
// three times, in ONE translation unit (the user's code and the ks runtime
// must not be compiled twice into one .so):
//
//   default  baseline of the target (x86-64: SSE2; aarch64: NEON; ...)
//   avx2     __attribute__((target("avx2,fma")))
//   avx512   __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")))
//
// each with __attribute__((flatten)): every call inside, the ks function
// included, is inlined into the wider-target copy and vectorised for it (a
// callee compiled for the baseline may always be inlined into a caller with
// more ISA extensions). Code that is not inlined (noinline error paths, calls
// into other .so files) runs as compiled for the baseline.
//
// Which copy runs is decided once, at module load (configure_from_env, from
// the module's init), and can be changed later for tests (select):
//   - the best capability that is both compiled and supported by this CPU
//     (__builtin_cpu_supports, which also checks that the OS saves the
//     registers);
//   - KSBIND_CPU_CAPABILITY=default|avx2|avx512 caps it, like ATen's
//     ATEN_CPU_CAPABILITY. A capability this CPU (or this build) lacks falls
//     back to the best one below it, with a warning; any other value is an
//     error (std::invalid_argument: the module's import fails naming it).
//
// Other architectures and compilers without GCC-style target attributes get
// only `default`. -DKSBIND_CPU_DISPATCH=0 (e.g. in KSBIND_CXXFLAGS) compiles
// only `default` too (a third of the kernel code and compile time).
#pragma once

#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#ifndef KSBIND_CPU_DISPATCH
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__)) && \
    (defined(__clang__) || __GNUC__ >= 6)
#define KSBIND_CPU_DISPATCH 1
#else
#define KSBIND_CPU_DISPATCH 0
#endif
#endif

#if defined(__GNUC__) || defined(__clang__)
#define KSBIND_KERNEL_DEFAULT __attribute__((flatten))
#define KSBIND_NOINLINE __attribute__((noinline, cold))
#else
#define KSBIND_KERNEL_DEFAULT
#define KSBIND_NOINLINE
#endif

#if KSBIND_CPU_DISPATCH
#define KSBIND_KERNEL_AVX2 __attribute__((target("avx2,fma"), flatten))
#define KSBIND_KERNEL_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"), flatten))
#endif

namespace ksbind {
namespace cpu {

enum class Capability : int { Default = 0, AVX2 = 1, AVX512 = 2 };
constexpr int capability_count = 3;
constexpr const char* capability_names[capability_count] = {"default", "avx2", "avx512"};

inline const char* name(Capability c) { return capability_names[static_cast<int>(c)]; }

// Compiled into this module.
inline bool compiled(Capability c) { return c == Capability::Default || KSBIND_CPU_DISPATCH; }

// This CPU (and OS) runs it.
inline bool supported(Capability c) {
#if KSBIND_CPU_DISPATCH
    __builtin_cpu_init();  // may run before libgcc's own constructor (static initialisers)
    switch (c) {
        case Capability::Default: return true;
        case Capability::AVX2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        case Capability::AVX512:
            return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                   __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                   __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    return false;
#else
    return c == Capability::Default;
#endif
}

inline bool usable(Capability c) { return compiled(c) && supported(c); }

// The best usable capability at most `cap`.
inline Capability best(Capability cap = Capability::AVX512) {
    for (int i = static_cast<int>(cap); i > 0; --i)
        if (usable(static_cast<Capability>(i))) return static_cast<Capability>(i);
    return Capability::Default;
}

inline std::string names_text() {
    std::string s;
    for (int i = 0; i < capability_count; ++i) s += std::string(i ? ", " : "") + capability_names[i];
    return s;
}

// Parse a capability name; throws std::invalid_argument naming `what`.
inline Capability parse(const std::string& text, const char* what) {
    for (int i = 0; i < capability_count; ++i)
        if (text == capability_names[i]) return static_cast<Capability>(i);
    throw std::invalid_argument(std::string(what) + " must be one of " + names_text() + ", found '" + text + "'");
}

// What to run when `wanted` is asked for, and a warning when that is not it.
inline std::pair<Capability, std::string> resolve(Capability wanted, const char* what) {
    Capability got = best(wanted);
    std::string warning;
    if (got != wanted)
        warning = std::string(what) + " asks for '" + name(wanted) + "', which " +
                  (compiled(wanted) ? "this CPU does not support" : "this module was not compiled for") +
                  "; using '" + name(got) + "'";
    return {got, warning};
}

namespace detail {
// -1: not chosen yet (a kernel that runs before module init chooses from the
// environment, quietly).
inline std::atomic<int> selected{-1};

inline Capability from_env(std::string* warning) {
    const char* text = std::getenv("KSBIND_CPU_CAPABILITY");
    if (!text || !*text) return best();
    auto [got, why] = resolve(parse(text, "KSBIND_CPU_CAPABILITY"), "KSBIND_CPU_CAPABILITY");
    if (warning) *warning = why;
    return got;
}
}  // namespace detail

// The capability the kernels run with.
inline Capability selected() {
    int v = detail::selected.load(std::memory_order_relaxed);
    if (v < 0) {
        Capability c;
        try {
            c = detail::from_env(nullptr);
        } catch (const std::invalid_argument&) {
            c = best();  // reported by configure_from_env at module init
        }
        v = static_cast<int>(c);
        detail::selected.store(v, std::memory_order_relaxed);
    }
    return static_cast<Capability>(v);
}

// Module init: choose from KSBIND_CPU_CAPABILITY (or the best). Returns a
// warning for a capability that fell back (empty if none); throws
// std::invalid_argument for a value that names no capability.
inline std::string configure_from_env() {
    std::string warning;
    Capability c = detail::from_env(&warning);
    detail::selected.store(static_cast<int>(c), std::memory_order_relaxed);
    return warning;
}

// The support functions cpu_capability() and cpu_capabilities() (ksbind/support.py's
// table names them): the capability the kernels run with, and those this module
// has compiled that this CPU runs, lowest first.
inline std::string selected_name() { return name(selected()); }

inline std::vector<std::string> usable_names() {
    std::vector<std::string> names;
    for (int i = 0; i < capability_count; ++i)
        if (usable(static_cast<Capability>(i))) names.push_back(capability_names[i]);
    return names;
}

// Force a capability by name (tests, benchmarks). Returns a warning when it
// fell back to a lower one; throws std::invalid_argument for an unknown name.
inline std::string select(const std::string& text) {
    auto [got, warning] = resolve(parse(text, "the capability"), "the capability");
    detail::selected.store(static_cast<int>(got), std::memory_order_relaxed);
    return warning;
}

// Run kernel(args...) compiled for the selected capability. The kernel (a
// lambda, usually) is inlined, with everything it calls, into one of three
// instantiations of the functions below.
template <class K, class... A>
KSBIND_KERNEL_DEFAULT void run_default(K& kernel, A... args) {
    kernel(args...);
}

#if KSBIND_CPU_DISPATCH
template <class K, class... A>
KSBIND_KERNEL_AVX2 void run_avx2(K& kernel, A... args) {
    kernel(args...);
}

template <class K, class... A>
KSBIND_KERNEL_AVX512 void run_avx512(K& kernel, A... args) {
    kernel(args...);
}
#endif

template <class K, class... A>
void run(K& kernel, A... args) {
#if KSBIND_CPU_DISPATCH
    switch (selected()) {
        case Capability::AVX512: return run_avx512(kernel, args...);
        case Capability::AVX2: return run_avx2(kernel, args...);
        case Capability::Default: break;
    }
#endif
    run_default(kernel, args...);
}

}  // namespace cpu
}  // namespace ksbind

// ------------------------------------------------------------ vector math

// Calls of exp, log, sin, cos, pow, erf, tanh and cosh in the kernels vectorise
// through glibc's libmvec, each capability calling its own variant
// (ksbind/vector_math.h; -DKSBIND_VECTOR_MATH=0 turns it off). Declaring after
// the ks code has been parsed still counts for the attributes (g++ vectorises
// once the whole unit is read); the torch build's unit includes it before the
// ks code too, so that ks::Float calls find the float functions.
#include <ksbind/vector_math.h>
