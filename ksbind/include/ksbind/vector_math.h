// Vector math for the torch target's kernels: calls of exp, log, sin, cos, pow,
// erf, tanh and cosh in ks code vectorise through glibc's libmvec.
//
// glibc's libmvec (x86-64) has vector versions of these functions, an SSE, an
// AVX2 and an AVX-512 variant of each (exp, log, sin, cos, pow since glibc
// 2.22; erf, tanh, cosh and others since 2.35); math.h tells g++ so only under
// -ffast-math. Saying it here (GCC's simd attribute, as <bits/math-vector.h>
// does) lets the per-capability kernels (ksbind/cpu_capability.h) vectorise ks
// code that calls them, each capability calling its own variant: with
// -fno-math-errno (the torch build's flags) g++ calls e.g. _ZGVeN16v_erff for
// 16 floats at once. Nothing else of -ffast-math comes with it.
//
// ksc's prelude.h defines its scalar functions on ks::Float (a float) as
// unqualified calls inside namespace ks (`Float erf$af(allocator*, Float d)
// { return erf(d); }`), which find only C's double `::erf`: a double call per
// element, and no float variant to vectorise. So this header also makes
// std's overloads visible in namespace ks (`using std::erf;` ...), before
// the ks code is read (the torch build's unit includes it first): a float
// argument then calls erff, as `std::erf` would, and vectorises 16 floats at
// a time on AVX-512 rather than 8 doubles. Calls on doubles still call the
// double functions (vectorised too).
//
// Accuracy: libmvec's results are within 4 ulp of the exact result (glibc's
// scalar float functions: 1 ulp; a float function computed in double and
// rounded, as before: 0.5 ulp), so results of these functions may differ in
// the last bits from the scalar functions and between capabilities, as
// ATen's vectorised functions differ from its scalar ones.
//
// KSBIND_VECTOR_MATH=0 (the environment variable of the build, which the
// torch build turns into -DKSBIND_VECTOR_MATH=0, or that flag in
// KSBIND_CXXFLAGS) turns all of this off: the scalar double calls, as ksc
// wrote them. Without GCC on x86-64 glibc (clang, other CPUs, musl) this
// header declares nothing and ks code is unchanged. Under -ffast-math
// (fast_math: true) math.h declares the vector variants itself; the float
// overloads below still apply.
#pragma once

#include <cmath>
#include <math.h>
#include <type_traits>

#ifndef KSBIND_VECTOR_MATH
#define KSBIND_VECTOR_MATH 1
#endif

#if KSBIND_VECTOR_MATH && defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__) && \
    (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 22))
#define KSBIND_LIBMVEC 1
#if __GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35)
#define KSBIND_LIBMVEC_2_35 1
#else
#define KSBIND_LIBMVEC_2_35 0
#endif
#else
#define KSBIND_LIBMVEC 0
#define KSBIND_LIBMVEC_2_35 0
#endif

// Under -ffast-math, math.h has declared them already.
#if KSBIND_LIBMVEC && !defined(__FAST_MATH__)
extern "C" {
#define KSBIND_SIMD_MATH __THROW __attribute__((simd("notinbranch")))
float expf(float) KSBIND_SIMD_MATH;
float logf(float) KSBIND_SIMD_MATH;
float sinf(float) KSBIND_SIMD_MATH;
float cosf(float) KSBIND_SIMD_MATH;
float powf(float, float) KSBIND_SIMD_MATH;
double exp(double) KSBIND_SIMD_MATH;
double log(double) KSBIND_SIMD_MATH;
double sin(double) KSBIND_SIMD_MATH;
double cos(double) KSBIND_SIMD_MATH;
double pow(double, double) KSBIND_SIMD_MATH;
#if KSBIND_LIBMVEC_2_35
float erff(float) KSBIND_SIMD_MATH;
float tanhf(float) KSBIND_SIMD_MATH;
float coshf(float) KSBIND_SIMD_MATH;
double erf(double) KSBIND_SIMD_MATH;
double tanh(double) KSBIND_SIMD_MATH;
double cosh(double) KSBIND_SIMD_MATH;
#endif
#undef KSBIND_SIMD_MATH
}
#endif

#if KSBIND_LIBMVEC
// ks code's calls (prelude.h's, unqualified inside namespace ks) go through
// these overloads. A float argument calls the float function, as `std::sin`
// would (see above). Each calls the C function under a second name, an asm
// label of the same symbol ("sinf"), declared const and with its vector
// variants: g++ knows the names sin and cos as builtins and merges sin(x) and
// cos(x) of one argument (every vjp of sin or cos has both) into one sincosf
// call, which has no vector variant it uses, so the whole loop stayed scalar;
// a call under another name is not merged, and vectorises. const is what
// -fno-math-errno makes of the builtins (no errno, no memory touched).
#define KSBIND_VECTOR_FN __attribute__((const, simd("notinbranch")))
#define KSBIND_KS_MATH(NAME)                                                                                \
    namespace ksbind::vector_math {                                                                     \
    extern "C" float NAME##_float(float) __THROW __asm__(#NAME "f") KSBIND_VECTOR_FN;                        \
    extern "C" double NAME##_double(double) __THROW __asm__(#NAME) KSBIND_VECTOR_FN;                        \
    }                                                                                                   \
    namespace ks {                                                                                      \
    inline float NAME(float x) { return ksbind::vector_math::NAME##_float(x); }                         \
    inline double NAME(double x) { return ksbind::vector_math::NAME##_double(x); }                      \
    inline long double NAME(long double x) { return std::NAME(x); }                                     \
    template <class I, class = std::enable_if_t<std::is_integral_v<I>>>                                 \
    inline double NAME(I x) { return NAME(static_cast<double>(x)); }                                    \
    }
KSBIND_KS_MATH(cos)
KSBIND_KS_MATH(exp)
KSBIND_KS_MATH(log)
KSBIND_KS_MATH(sin)
#if KSBIND_LIBMVEC_2_35
KSBIND_KS_MATH(cosh)
KSBIND_KS_MATH(erf)
KSBIND_KS_MATH(tanh)
#endif
#undef KSBIND_KS_MATH
#undef KSBIND_VECTOR_FN
// pow: prelude.h calls std::pow by name, which the declarations above vectorise.
namespace ks {
using std::pow;
}  // namespace ks
#endif
