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

// What this thread's ks calls wrote to std::cerr (capturing while depth > 0).
struct Captured {
    int depth = 0;
    bool echo = false;  // also write it to stderr (the module's logging is on)
    std::string text;
};

inline Captured& this_thread() {
    thread_local Captured c;
    return c;
}

// Put in front of std::cerr's buffer: text written on a thread inside a ks
// call goes to that thread's Captured, other text on to the buffer it
// replaced. Each module installs its own (its globals are hidden), in a chain.
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
        Captured& c = this_thread();
        if (c.depth > 0) {
            if (c.text.size() < 4096) c.text.append(s, static_cast<size_t>(n));
            if (!c.echo) return n;
        }
        return next_ ? next_->sputn(s, n) : n;
    }
    int sync() override { return next_ ? next_->pubsync() : 0; }

private:
    std::streambuf* next_;
};

// Route std::cerr through a Router, once per module (at its first call).
inline void install() {
    static std::once_flag once;
    std::call_once(once, [] {
        static Router router(std::cerr.rdbuf());
        std::cerr.rdbuf(&router);
    });
}

}  // namespace failure

// Capture what ks code writes to std::cerr on this thread while it lives.
// echo: write it to stderr as well (the module's logging is on).
class StderrCapture {
public:
    explicit StderrCapture(bool echo) : c_(failure::this_thread()), echo_(c_.echo) {
        static const bool installed = (failure::install(), true);
        (void)installed;
        if (c_.depth++ == 0) c_.text.clear();
        c_.echo = echo;
    }
    ~StderrCapture() {
        --c_.depth;
        c_.echo = echo_;
    }
    StderrCapture(const StderrCapture&) = delete;
    StderrCapture& operator=(const StderrCapture&) = delete;

    // The last line written (a check's reason), without ksc's "ERROR: ".
    std::string last_line() const {
        std::string t = c_.text;
        while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
        const size_t nl = t.rfind('\n');
        std::string line = nl == std::string::npos ? t : t.substr(nl + 1);
        if (line.rfind("ERROR: ", 0) == 0) line = line.substr(7);
        return line;
    }

private:
    failure::Captured& c_;
    bool echo_;
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
