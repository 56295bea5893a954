// Failures inside ks code, named: which binding, which ks function, what failed.
//
// Shared by every target (ks, python, torch; a new target uses it the same
// way, see docs/errors.md): it needs no Python and no pybind11, only the C++
// standard library, so it serves code that runs without the GIL too.
//
// What ks code does when it fails, on either runtime:
//  - KS_ASSERT(expr) calls ks::fail, which (ksc's runtime) writes
//    "FILE:LINE:Assert failed [EXPR]" to std::cerr and throws a
//    std::runtime_error with that text;
//  - a bounds check (built with KS_BOUNDS_CHECK: a debug build) writes
//    "ERROR: Accessing element I of tensor of size N" to std::cerr and calls
//    abort(), which a debug build turns into a throw (ksbind/debug/knossos.h);
//  - a full arena throws (ksbind's runtime) or asserts (ksc's).
// So a call of ks code is made inside a StderrCapture (what ks code writes to
// std::cerr on this thread goes to a buffer, and on to stderr only when the
// module's logging is on) and a failure is rethrown by rethrow_named with the
// CallSite: a KS_ASSERT or a failed check becomes a ks_failure
// (std::runtime_error: RuntimeError in Python) whose message names the
// binding, the ks function and the condition.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstring>
#include <exception>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <streambuf>
#include <string>

namespace ksbind {

// Where a ks call is made: the Python name and the ks function's structured name.
struct CallSite {
    const char* binding;
    const char* ks_function;
};

// A failure inside ks code, named (RuntimeError in Python).
class ks_failure : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// What a debug build's abort() throws inside ks code (ksbind/debug/knossos.h):
// the reason is what the check wrote to std::cerr just before.
class ks_abort : public std::exception {
public:
    const char* what() const noexcept override { return "ks code called abort()"; }
};

namespace failure {

// This thread's ks calls: how many are in progress (text written to std::cerr
// meanwhile is captured), whether logging is on (echo: written to stderr too),
// and whether anything was captured. Trivially destructible and constant-
// initialised, so a call reaches it with one TLS address and no guard: it
// costs a call a few ns (benchmarks/run.py, "call overhead, ks target").
struct State {
    int depth;
    bool echo;
    bool wrote;
};
inline thread_local State state{0, false, false};

// What was captured: touched only when something is written.
inline std::string& text() {
    thread_local std::string captured;
    return captured;
}

// Calls that the caller guarantees no other thread makes at the same time
// (the ks target's calls that keep the GIL throughout: most small ones) skip
// even that TLS address: their state is a global only the calling thread
// changes, and a writer is that thread when exclusive_check() says so (the
// target sets it: "this thread holds the GIL"). Without it, such calls'
// text is not captured.
inline std::atomic<bool> in_exclusive{false};  // such calls never nest (ks code calls no Python)
inline std::atomic<bool> exclusive_echo{false};  // the module's logging: the target keeps it current
inline bool exclusive_wrote = false;
inline bool (*exclusive_check)() = nullptr;
inline std::string& exclusive_text() {
    static std::string captured;
    return captured;
}

// Put in front of std::cerr's buffer: text written on a thread inside a ks
// call is captured, other text goes on to the buffer it replaced. Each module
// installs its own (its globals are hidden), in a chain.
class Router : public std::streambuf {
public:
    explicit Router(std::streambuf* next) : next_(next) {}

protected:
    int overflow(int c) override {
        if (c == traits_type::eof()) return traits_type::not_eof(c);
        char ch = static_cast<char>(c);
        return xsputn(&ch, 1) == 1 ? c : traits_type::eof();
    }
    std::streamsize xsputn(const char* s, std::streamsize n) override {
        if (in_exclusive.load(std::memory_order_relaxed) && exclusive_check && exclusive_check()) {
            std::string& t = exclusive_text();
            if (t.size() < 4096) t.append(s, static_cast<size_t>(n));
            exclusive_wrote = true;
            if (!exclusive_echo.load(std::memory_order_relaxed)) return n;
        } else if (state.depth > 0) {
            State& st = state;
            std::string& t = text();
            if (t.size() < 4096) t.append(s, static_cast<size_t>(n));
            st.wrote = true;
            if (!st.echo) return n;
        }
        return next_ ? next_->sputn(s, n) : n;
    }
    int sync() override { return next_ ? next_->pubsync() : 0; }

private:
    std::streambuf* next_;
};

inline std::atomic<bool> installed{false};

// Route std::cerr through a Router, once per module (at its first call; out of
// line, so that the calls' inlined code stays small).
__attribute__((noinline, cold)) inline void install() {
    static std::once_flag once;
    std::call_once(once, [] {
        // Never destroyed: std::cerr is flushed at exit (std::ios_base::Init's destructor)
        // after this module's static objects are gone, and must not reach a destroyed buffer
        // (a crash at exit under AddressSanitizer). Reachable from here, so no leak is reported.
        static Router* const router = new Router(std::cerr.rdbuf());
        std::cerr.rdbuf(router);
        installed.store(true, std::memory_order_release);
    });
}

}  // namespace failure

// Capture what ks code writes to std::cerr on this thread while it lives.
// echo: write it to stderr as well (the module's logging is on).
// exclusive: no other thread makes an exclusive call meanwhile (the caller
// holds the GIL throughout, see exclusive_check), which makes it cheaper still.
class StderrCapture {
public:
    explicit StderrCapture(bool echo, bool exclusive = false) : exclusive_(exclusive) {
        if (__builtin_expect(!failure::installed.load(std::memory_order_relaxed), 0)) failure::install();
        if (exclusive_) {
            failure::in_exclusive.store(true, std::memory_order_relaxed);  // echo: exclusive_echo
        } else {
            failure::State& s = failure::state;
            echo_ = s.echo;
            ++s.depth;
            s.echo = echo;
        }
    }
    ~StderrCapture() {
        if (exclusive_) {
            failure::in_exclusive.store(false, std::memory_order_relaxed);
            if (__builtin_expect(failure::exclusive_wrote, 0)) {
                failure::exclusive_text().clear();
                failure::exclusive_wrote = false;
            }
        } else {
            failure::State& s = failure::state;
            s.echo = echo_;
            if (--s.depth == 0 && s.wrote) {
                failure::text().clear();
                s.wrote = false;
            }
        }
    }
    StderrCapture(const StderrCapture&) = delete;
    StderrCapture& operator=(const StderrCapture&) = delete;

    // The last line written (a check's reason), without ksc's "ERROR: ".
    std::string last_line() const {
        std::string t = captured();
        while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
        const size_t nl = t.rfind('\n');
        std::string line = nl == std::string::npos ? t : t.substr(nl + 1);
        if (line.rfind("ERROR: ", 0) == 0) line = line.substr(7);
        return line;
    }

private:
    std::string& captured() const { return exclusive_ ? failure::exclusive_text() : failure::text(); }

    bool exclusive_;
    bool echo_ = false;
};

namespace failure {

inline std::string who(const CallSite& site) {
    return std::string(site.binding) + " (ks function " + site.ks_function + ")";
}

// "FILE:LINE:Assert failed [EXPR]" (both runtimes' ks::fail) with FILE's folder left out
// (knossos.h:1796, not the whole path), or "" for any other text.
inline std::string assertion(const char* what) {
    const char* marker = std::strstr(what, ":Assert failed [");
    if (!marker) return "";
    std::string where(what, static_cast<size_t>(marker - what));
    const size_t slash = where.rfind('/');
    if (slash != std::string::npos) where = where.substr(slash + 1);
    return where + marker;
}

}  // namespace failure

// Inside a catch block around a ks call made at site: rethrow the failure,
// named. A KS_ASSERT and a failed check become ks_failure; other exceptions
// (a full arena, the user's C++ throwing its own) are rethrown as they are.
[[noreturn]] inline void rethrow_named(const CallSite& site, const StderrCapture& captured) {
    try {
        throw;
    } catch (const ks_abort&) {
        std::string reason = captured.last_line();
        throw ks_failure(failure::who(site) + " failed a check of the ks runtime: " +
                         (reason.empty() ? std::string("abort() called") : reason));
    } catch (const ks_failure&) {
        throw;
    } catch (const std::bad_alloc&) {
        throw;
    } catch (const std::runtime_error& e) {
        std::string a = failure::assertion(e.what());
        if (a.empty()) throw;
        throw ks_failure(failure::who(site) + " failed an assertion in ks code: " + a);
    }
}

// f() (a ks call, or a loop of them) made at site, its failures named.
template <class F>
decltype(auto) call_named(const CallSite& site, bool echo, F&& f) {
    StderrCapture captured(echo);
    try {
        return f();
    } catch (...) {
        rethrow_named(site, captured);
    }
}

}  // namespace ksbind
