// ksbind's entry-point support: the allocator every generated entry point
// passes to ks code (g_alloc), logging (g_logging, ksbind::logged), the ks
// target's arena guard (ksbind::ArenaLock), a full arena as MemoryError
// (ksbind::arena_exhausted) and releasing the GIL around ks calls
// (ksbind::without_gil). Uses only the runtime surface in docs/knossos.md, so
// <knossos.h> may be ksbind's bundled one or ksc's own.
//
// Included as <ksbind/entry_points.h>: no Knossos runtime has a ksbind/
// folder, so neither can shadow the other's headers.
//
// Threads, ks target: one arena per module, guarded by a mutex (arena_mutex).
// An entry point takes the mutex for its whole run and releases the GIL only
// around the ks call itself; pybind11 converts its arguments before and its
// result after, so no Python code runs while it holds the mutex. Why a mutex
// and not an arena per thread there: ks-target results live in the arena
// until reset_allocator(), a module-wide operation. The mutex is never waited
// on while holding the GIL (see lock_arena), so the two cannot deadlock.
// The python and torch targets, whose converters run Python code in the
// middle of a call, use an arena per thread instead (ksbind/call_arena.h).
#pragma once

#include <knossos.h>
#include <ksbind/ks_failure.h>  // CallSite, StderrCapture, rethrow_named

// KSBIND_NO_PYTHON: a library loaded without Python's headers (the jax target's,
// through ctypes): no GIL to release, and nothing of Python's C API referenced.
#ifndef KSBIND_NO_PYTHON
#include <Python.h>
#endif

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <mutex>
#include <new>
#include <ostream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

// Globals shared by this module's translation units only: hidden, so two
// ksbind modules in one process never share (or unify) an arena.
#define KSBIND_HIDDEN __attribute__((visibility("hidden")))

#ifndef KSBIND_NO_PYTHON
namespace ksbind {
namespace detail {
#ifdef Py_LIMITED_API
// Python's limited API (Py_LIMITED_API: a module built once for every CPython,
// docs/packaging.md) has no PyGILState_Check. Such a module's entry points run
// only inside its methods, which Python calls holding the GIL, and give it up
// only in without_gil: so this thread holds it unless without_gil released it.
KSBIND_HIDDEN inline thread_local int gil_released = 0;
inline bool holds_gil() { return Py_IsInitialized() && gil_released == 0; }
#else
inline bool holds_gil() { return Py_IsInitialized() && PyGILState_Check(); }
#endif
}  // namespace detail
}  // namespace ksbind
#endif

namespace ks {
namespace entry_points {

constexpr size_t default_arena_bytes = 100000000;

namespace detail {

// Parse KSBIND_ARENA_BYTES; 0 when unset; throws on a bad value.
inline size_t env_arena_bytes() {
    const char* text = std::getenv("KSBIND_ARENA_BYTES");
    if (!text || !*text) return 0;
    errno = 0;
    char* end = nullptr;
    unsigned long long n = std::strtoull(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || n == 0 || text[0] == '-')
        throw std::invalid_argument(std::string("KSBIND_ARENA_BYTES must be a positive whole number of bytes, found '") +
                                    text + "'");
    return static_cast<size_t>(n);
}

inline size_t initial_arena_bytes() {
    try {
        size_t n = env_arena_bytes();
        return n ? n : default_arena_bytes;
    } catch (const std::exception&) {
        return default_arena_bytes;  // reported when the module configures itself
    }
}

// The arena lives in fixed storage so that it can be re-created with another
// size (set_arena_bytes) while g_alloc keeps referring to the same object.
alignas(ks::allocator) KSBIND_HIDDEN inline unsigned char arena_storage[sizeof(ks::allocator)];
KSBIND_HIDDEN inline size_t arena_size = 0;

inline ks::allocator& construct_arena(size_t bytes) {
    ks::allocator* a = new (static_cast<void*>(arena_storage)) ks::allocator(bytes);
    arena_size = bytes;
    return *a;
}

}  // namespace detail

// The allocator passed to every ks call, and whether calls are logged.
KSBIND_HIDDEN inline ks::allocator& g_alloc = detail::construct_arena(detail::initial_arena_bytes());
KSBIND_HIDDEN inline std::atomic<bool> g_logging{false};  // atomic: any thread may switch it
KSBIND_HIDDEN inline std::mutex arena_mutex;
// Entry points now holding arena_mutex (changed only with the GIL held). While
// it is 0, a call that keeps the GIL throughout needs no mutex: the GIL alone
// keeps every other user of the arena out.
KSBIND_HIDDEN inline std::atomic<int> arena_holders{0};
KSBIND_HIDDEN inline auto g_base_mark = g_alloc.mark();

// Take arena_mutex without ever blocking while holding the GIL: try first
// (the common, uncontended case); otherwise let other Python threads run
// (one of them may hold the mutex and need the GIL to finish) while waiting.
inline void lock_arena() {
    if (arena_mutex.try_lock()) return;
#ifndef KSBIND_NO_PYTHON
    if (ksbind::detail::holds_gil()) {
        PyThreadState* state = PyEval_SaveThread();
        arena_mutex.lock();
        PyEval_RestoreThread(state);
        return;
    }
#endif
    arena_mutex.lock();
}

inline void reset_allocator() {
    lock_arena();
    std::lock_guard<std::mutex> guard(arena_mutex, std::adopt_lock);
    g_alloc.reset(g_base_mark);
}

inline size_t allocator_top() {
    lock_arena();
    std::lock_guard<std::mutex> guard(arena_mutex, std::adopt_lock);
    return static_cast<size_t>(g_alloc.mark() - g_base_mark);
}

inline size_t allocator_peak() {
    lock_arena();
    std::lock_guard<std::mutex> guard(arena_mutex, std::adopt_lock);
    return static_cast<size_t>(g_alloc.peak());
}

inline void logging(bool on) {
    g_logging = on;
    ksbind::failure::exclusive_echo.store(on, std::memory_order_relaxed);
}

inline size_t arena_bytes() { return detail::arena_size; }

// Re-create the arena with a new size (setup, not a loop: see below).
// ks-target results still held from the old arena stop being updated but stay
// readable: the old arena is deliberately never freed, so a Python object
// still viewing it can never read unmapped memory.
inline void set_arena_bytes(size_t bytes) {
    if (bytes == 0) throw std::invalid_argument("arena_bytes must be positive");
    lock_arena();
    std::lock_guard<std::mutex> guard(arena_mutex, std::adopt_lock);
    if (bytes == detail::arena_size) {
        g_alloc.reset(g_base_mark);
        return;
    }
    // Probe first so that a failure (std::bad_alloc -> MemoryError) leaves the
    // module working with its old arena.
    delete new ks::allocator(bytes);
    detail::construct_arena(bytes);  // over the old one, without destroying it (leaked on purpose)
    g_base_mark = g_alloc.mark();
}

// Called by module init with the config's arena_bytes and logging
// (KSBIND_ARENA_BYTES, when set, wins over the config). Applied by the first
// module object made in the process only: making another one (importlib's
// module_from_spec, a subinterpreter) shares these globals and must not reset
// what the user has set since.
KSBIND_HIDDEN inline std::atomic<bool> g_configured{false};
inline void configure(size_t config_arena_bytes, bool log) {
#ifndef KSBIND_NO_PYTHON
    // Calls that keep the GIL capture ks code's stderr cheaply: the GIL's holder is their thread.
    // (Without Python there is no GIL: exclusive_check stays null, no call is exclusive.)
    ksbind::failure::exclusive_check = [] { return ksbind::detail::holds_gil(); };
#endif
    if (g_configured.load()) return;
    size_t env = detail::env_arena_bytes();
    size_t bytes = env ? env : config_arena_bytes;
    if (bytes != detail::arena_size) set_arena_bytes(bytes);
    g_logging = log;
    ksbind::failure::exclusive_echo.store(log, std::memory_order_relaxed);
    g_configured = true;
}

}  // namespace entry_points
}  // namespace ks

namespace ksbind {

// ------------------------------------------------------------ the GIL

// Run f with the GIL released (when this thread holds it), so other Python
// threads run during a long ks call. f must not touch Python objects.
// The GIL is taken back explicitly, not in a destructor: when the interpreter
// is finalizing, PyEval_RestoreThread ends a daemon thread with pthread_exit,
// whose forced unwind out of a (noexcept) destructor would abort the process.
#ifndef KSBIND_NO_PYTHON
namespace detail {
inline void retake_gil(PyThreadState* state) {
#ifdef Py_LIMITED_API
    --gil_released;
#endif
    PyEval_RestoreThread(state);
}
}  // namespace detail
#endif

template <class F>
decltype(auto) without_gil(F&& f) {
#ifdef KSBIND_NO_PYTHON
    return f();
#else
    if (!detail::holds_gil()) return f();
    PyThreadState* state = PyEval_SaveThread();
#ifdef Py_LIMITED_API
    ++detail::gil_released;
#endif
    try {
        if constexpr (std::is_void_v<decltype(f())>) {
            f();
            detail::retake_gil(state);
        } else {
            decltype(auto) result = f();
            detail::retake_gil(state);
            return result;
        }
    } catch (...) {
        detail::retake_gil(state);
        throw;
    }
#endif
}

// Release the GIL only for calls with enough tensor data to be worth it:
// releasing and re-taking it costs about 100-150 ns, more than a scalar ks
// call itself (benchmarks/run.py, "call overhead"). Elements of the top-level
// tensor arguments are counted; KSBIND_GIL_RELEASE_ELEMENTS overrides the bar.
inline size_t gil_release_elements() {
    static const size_t bar = [] {
        const char* text = std::getenv("KSBIND_GIL_RELEASE_ELEMENTS");
        if (text && *text) {
            char* end = nullptr;
            unsigned long long v = std::strtoull(text, &end, 10);
            if (end && *end == '\0') return static_cast<size_t>(v);
        }
        return static_cast<size_t>(2048);
    }();
    return bar;
}

template <class T>
size_t tensor_elements(const T&) { return 0; }
template <size_t Dim, class T>
size_t tensor_elements(const ks::tensor<Dim, T>& t) { return static_cast<size_t>(t.num_elements()); }

template <class... Ts>
bool large_call(const Ts&... values) {
    size_t n = 0;
    ((n += tensor_elements(values)), ...);
    return n >= gil_release_elements();
}

// without_gil(f) when release is true, else f() with the GIL held.
template <class F>
decltype(auto) without_gil_if(bool release, F&& f) {
    if (release) return without_gil(std::forward<F>(f));
    return f();
}

// ------------------------------------------------------------ a full arena

// A ks call (or a converter copying an argument into the arena) ran out of
// arena. A std::bad_alloc, so pybind11 raises MemoryError with this message.
class arena_exhausted : public std::bad_alloc {
public:
    explicit arena_exhausted(std::string message) : message_(std::move(message)) {}
    const char* what() const noexcept override { return message_.c_str(); }

private:
    std::string message_;
};

namespace detail {

// A vjp that ran out of arena: its primal run on the same arguments, in an
// arena of the same size (probe(alloc) calls it), tells whether the vjp's
// need is far above the primal's, which is what ksc's vjp of `index` inside
// `build` does (docs/ks.md#fast-vjps). "" when the primal is not far below.
template <class Probe>
std::string vjp_hint(size_t bytes, Probe& probe) {
    size_t peak = 0;
    try {
        ks::allocator fresh(bytes);
        probe(&fresh);
        peak = static_cast<size_t>(fresh.peak());
    } catch (...) {
        return "";  // the primal does not fit either: the arena is simply too small
    }
    if (peak > bytes / 8) return "";
    return "; its primal needs only " + std::to_string(peak) + " bytes on the same arguments: ksc's vjp keeps "
           "a dense gradient, as big as the whole tensor, for every `index` inside a `build` or `sumbuild`, "
           "so such a vjp needs memory (and time) quadratic in the tensor's size; the prelude's vector "
           "operations avoid it (docs/ks.md#fast-vjps)";
}

struct no_probe {
    void operator()(ks::allocator*) const {}
};

// ksc's allocator refuses any single allocation this big, whatever the arena.
inline bool says_allocation_too_big(const char* what) { return std::strstr(what, "[size < 1000 * 1000000]"); }

// How each runtime reports a full arena: ksc's allocator through
// KS_ASSERT(top_ < max_size_) (or the single-allocation limit above), ksbind's
// bundled one with ks::arena_exhausted ("... arena exhausted ...").
inline bool says_arena_full(const char* what) {
    return std::strstr(what, "[top_ < max_size_]") || says_allocation_too_big(what) ||
           std::strstr(what, "arena exhausted");
}

inline std::string exhausted_message(size_t bytes, const char* what) {
    std::string m = "ks arena exhausted: the call needs more than the arena's " + std::to_string(bytes) +
                    " bytes; raise it with arena_bytes in the config, the KSBIND_ARENA_BYTES environment "
                    "variable, or the module's set_arena_bytes(n)";
    if (says_allocation_too_big(what))
        m += " (but ksc's allocator also refuses any single allocation of 1e9 bytes or more)";
    return m + " [runtime: " + what + "]";
}

// The class that declares ptr_at (ksc's allocator_base), from its member pointer.
template <class M>
struct member_class;
template <class R, class C, class... A>
struct member_class<R (C::*)(A...) const> {
    using type = C;
};

// ksc's allocate() raises peak_ to the new top *before* KS_ASSERT(top_ <
// max_size_) fails, and checks the end only when the top passes peak_: after
// one failure, later allocations below that peak would write past the buffer
// unchecked. Put the peak back under the end (ksc's allocator_base has no
// setter, but is assignable and constructible from (buf, max_size, peak)).
// Chosen only for an allocator with ptr_at(), i.e. ksc's.
template <class Alloc>
auto restore_peak(Alloc& alloc, size_t bytes, int) -> decltype(&Alloc::ptr_at, void()) {
    using Base = typename member_class<decltype(&Alloc::ptr_at)>::type;
    if (static_cast<size_t>(alloc.peak()) < bytes) return;
    Base& base = alloc;
    base = Base(static_cast<unsigned char*>(base.ptr_at(0)), bytes, bytes - 1);
}
// ksbind's bundled allocator checks before it moves: nothing to repair.
template <class Alloc>
void restore_peak(Alloc&, size_t, long) {}

}  // namespace detail

// For catch blocks around ks code (or a converter) that allocates from alloc,
// an arena of `bytes`: frees what the failed call allocated (back to mark),
// undoes ksc's allocator's overrun, and rethrows; a full arena, however the
// runtime reported it, as arena_exhausted (MemoryError).
template <class Mark>
[[noreturn]] void rethrow_ks_failure(ks::allocator& alloc, Mark mark, size_t bytes) {
    // ksc's allocator moves top_ past the end before asserting.
    const bool overran = static_cast<size_t>(alloc.mark()) >= bytes;
    detail::restore_peak(alloc, bytes, 0);
    alloc.reset(mark);
    try {
        throw;
    } catch (const arena_exhausted&) {
        throw;
    } catch (const std::exception& e) {
        if (overran || detail::says_arena_full(e.what())) throw arena_exhausted(detail::exhausted_message(bytes, e.what()));
        throw;
    }
}

// The same for a ks call made at site (captured: what it wrote to std::cerr):
// a full arena's MemoryError names the binding (and, for a vjp whose primal
// needs far less, why: vjp_hint); a KS_ASSERT or a failed check is a
// ks_failure naming the binding, the ks function and the condition.
template <class Mark, class Probe = detail::no_probe>
[[noreturn]] void rethrow_ks_failure(ks::allocator& alloc, Mark mark, size_t bytes, const CallSite& site,
                                     const StderrCapture& captured, Probe&& probe = Probe()) {
    const bool overran = static_cast<size_t>(alloc.mark()) >= bytes;
    detail::restore_peak(alloc, bytes, 0);
    alloc.reset(mark);
    std::string what;
    try {
        throw;
    } catch (const std::exception& e) {
        if (!overran && !detail::says_arena_full(e.what())) rethrow_named(site, captured);
        what = e.what();
    }
    std::string m = failure::who(site) + ": " +
                    (what.rfind("ks arena exhausted", 0) == 0 ? what : detail::exhausted_message(bytes, what.c_str()));
    if constexpr (!std::is_same_v<std::decay_t<Probe>, detail::no_probe>) m += detail::vjp_hint(bytes, probe);
    throw arena_exhausted(m);
}

// ------------------------------------------------------------ arena guards

// Guards the arena for an entry point's whole run. A call that will release
// the GIL (release_gil) takes arena_mutex; a call that keeps the GIL takes it
// only when another entry point holds it (arena_holders), because otherwise
// the GIL already excludes every other arena user. Skipping the mutex saves
// about 20-40 ns per small call. Entry points are entered from pybind11's
// dispatcher with the GIL held, so there is no GIL check here.
class ArenaLock {
public:
    using mark_t = decltype(std::declval<ks::allocator&>().mark());
    explicit ArenaLock(ks::allocator& alloc, bool release_gil = true)
        : alloc_(alloc),
          locked_(release_gil || ks::entry_points::arena_holders.load(std::memory_order_relaxed) != 0) {
        if (locked_) {
            ks::entry_points::lock_arena();
            ks::entry_points::arena_holders.fetch_add(1, std::memory_order_relaxed);
        }
        mark_ = alloc_.mark();
    }
    ~ArenaLock() {
        if (locked_) {
            ks::entry_points::arena_holders.fetch_sub(1, std::memory_order_relaxed);
            ks::entry_points::arena_mutex.unlock();
        }
    }
    ArenaLock(const ArenaLock&) = delete;
    ArenaLock& operator=(const ArenaLock&) = delete;

    // Run the ks call f (with the GIL released if asked). If it fails, what it
    // allocated is garbage: the arena goes back to the mark, so a MemoryError
    // does not leave the arena full for the next call; a full arena becomes
    // arena_exhausted whichever runtime reported it. (A try/catch costs
    // nothing when no exception is thrown; std::uncaught_exceptions() in a
    // destructor would cost a TLS call on every call.)
    template <class F>
    decltype(auto) call(bool release_gil, F&& f) {
        try {
            return without_gil_if(release_gil, std::forward<F>(f));
        } catch (...) {
            rethrow_ks_failure(alloc_, mark_, ks::entry_points::arena_bytes());
        }
    }
    // The same, for a call made at site: a failure names the binding (rethrow_ks_failure);
    // what ks code writes to std::cerr goes to stderr only with logging on. A vjp
    // passes probe, which calls its primal on the same arguments (vjp_hint).
    template <class F, class Probe = detail::no_probe>
    decltype(auto) call(const CallSite& site, bool release_gil, F&& f, Probe&& probe = Probe()) {
        // A call that keeps the GIL is the only such call in the process meanwhile: exclusive.
        StderrCapture captured(ks::entry_points::g_logging.load(std::memory_order_relaxed), !release_gil);
        try {
            return without_gil_if(release_gil, std::forward<F>(f));
        } catch (...) {
            rethrow_ks_failure(alloc_, mark_, ks::entry_points::arena_bytes(), site, captured, probe);
        }
    }

protected:
    ks::allocator& alloc_;
    bool locked_;
    mark_t mark_;
};

// ------------------------------------------------------------ logging

// How many elements of a tensor are printed before "...".
constexpr int logged_elements = 6;

template <class T>
struct Logged {
    const T& value;
};

template <class T>
Logged<T> logged(const T& value) {
    return Logged<T>{value};
}

namespace detail {

template <class T>
struct is_tensor : std::false_type {};
template <size_t D, class T>
struct is_tensor<ks::tensor<D, T>> : std::true_type {};

// Whether T is a std::tuple (ksc's runtime may make ks::Tuple one, or a class of its own).
template <class T>
struct is_std_tuple : std::false_type {};
template <class... Ts>
struct is_std_tuple<std::tuple<Ts...>> : std::true_type {};

// Arity of a ks::Tuple, whether the runtime's Tuple is std::tuple or its own class.
template <class T>
struct tuple_arity;
template <class... Ts>
struct tuple_arity<ks::Tuple<Ts...>> : std::integral_constant<size_t, sizeof...(Ts)> {};

template <class T>
void print(std::ostream& os, const T& v);

template <size_t... I, class T>
void print_tuple(std::ostream& os, const T& t, std::index_sequence<I...>) {
    os << "(";
    ((os << (I == 0 ? "" : ", "), print(os, ks::get<I>(t))), ...);
    os << ")";
}

template <class Size, size_t... I>
void print_size_impl(std::ostream& os, const Size& size, std::index_sequence<I...>) {
    ((os << (I ? "x" : "") << ks::get<I>(size)), ...);
}
template <class Size>
void print_size(std::ostream& os, const Size& size) {
    print_size_impl(os, size, std::make_index_sequence<tuple_arity<Size>::value>());
}
inline void print_size(std::ostream& os, int size) { os << size; }

template <class T>
void print(std::ostream& os, const T& v) {
    if constexpr (std::is_same_v<T, bool>) {
        os << (v ? "true" : "false");
    } else if constexpr (std::is_same_v<T, std::string>) {
        os << '"';
        if (v.size() > 64) os << v.substr(0, 64) << "...(" << v.size() << " chars)";
        else os << v;
        os << '"';
    } else if constexpr (std::is_arithmetic_v<T>) {
        os << v;
    } else if constexpr (is_tensor<T>::value) {
        int n = v.num_elements();
        os << "tensor[";
        print_size(os, v.size());
        os << "](";
        for (int i = 0; i < n && i < logged_elements; ++i) {
            if (i) os << ", ";
            print(os, v.data()[i]);
        }
        if (n > logged_elements) os << ", ...";
        os << ")";
    } else {
        print_tuple(os, v, std::make_index_sequence<tuple_arity<T>::value>());
    }
}

}  // namespace detail

template <class T>
std::ostream& operator<<(std::ostream& os, const Logged<T>& l) {
    detail::print(os, l.value);
    return os;
}

}  // namespace ksbind
