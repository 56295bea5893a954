// Per-thread arenas for the python and torch targets (the ks target keeps one
// module-wide arena, because its results view the arena until
// reset_allocator(); see entry_points.h).
//
// Why per thread: Python code runs in the middle of an entry point's work
// (__float__, __index__, a Sequence's __getitem__, a temporary's __del__, a
// gc callback while a result list is made) and may call back into this or
// another ksbind module, on the same thread, or let another thread run. With
// one arena behind one mutex, such a call deadlocks (the mutex is not
// re-entrant) or, without the mutex, two calls interleave in one arena. So:
//  - each thread calls ks code in its own arena (ThreadArena), made on its
//    first call with the module's arena size and re-made (between calls) when
//    set_arena_bytes changes that size;
//  - a call is a CallArena: it marks the arena on entry and resets it to that
//    mark on exit, so a nested call on the same thread (made from Python code
//    inside a conversion) stacks above the outer call's values and leaves
//    them intact; calls on different threads never share an arena and need
//    no lock at all, so calls that release the GIL run in parallel;
//  - values with destructors (ks::String, tuples holding one) that converters
//    construct in the arena, or that a result holds in the arena, are
//    registered with the innermost CallArena and destroyed when it ends,
//    whether the call succeeded or failed (resetting an arena runs no
//    destructors).
#pragma once

#include <knossos.h>
#include <ksbind/entry_points.h>  // without_gil_if, rethrow_ks_failure, g_logging

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

// KSBIND_HIDDEN (globals of this module's units only): ksbind/entry_points.h.

namespace ksbind {

// ------------------------------------------------------------ destructors

// Blocks of arena memory holding constructed values with destructors, to be
// destroyed when the call that owns them ends. Blocks never overlap (a block
// inside one already held is not added), and ks values' destructors touch
// nothing outside their own block, so the order they run in does not matter.
class Destructors {
public:
    template <class T>
    void adopt(const T* data, size_t count) {
        if constexpr (!std::is_trivially_destructible_v<T>) {
            if (!count) return;
            auto* begin = reinterpret_cast<unsigned char*>(const_cast<T*>(data));
            auto* end = begin + sizeof(T) * count;
            // A result may be (a view of) an argument, or share a block with
            // another part of itself: each value is destroyed once. Blocks are
            // kept by start address, so the check is one lookup (a result of
            // 1e5 inner string tensors is 1e5 blocks).
            auto next = blocks_.upper_bound(begin);
            if (next != blocks_.begin() && std::prev(next)->second.end >= end) return;
            blocks_.emplace(begin, Block{end, count, &destroy<T>});
        }
    }
    // Destroy everything adopted (never throws: destructors of ks values do
    // not), and zero the memory: ksc's generated code assigns into arena
    // memory it never constructed (its tensor::create leaves the memory raw),
    // and a zeroed std::string there is what a fresh arena held, where a
    // destroyed one would have its buffer freed a second time.
    void run() noexcept {
        for (auto& [begin, b] : blocks_) {
            b.destroy(begin, b.count);
            std::memset(begin, 0, static_cast<size_t>(b.end - begin));
        }
        blocks_.clear();
    }
    ~Destructors() { run(); }

private:
    template <class T>
    static void destroy(unsigned char* data, size_t count) noexcept {
        T* p = reinterpret_cast<T*>(data);
        for (size_t i = 0; i < count; ++i) p[i].~T();
    }
    struct Block {
        unsigned char* end;
        size_t count;
        void (*destroy)(unsigned char*, size_t) noexcept;
    };
    std::map<unsigned char*, Block> blocks_;
};

// ------------------------------------------------------------ per-thread arenas

class CallArena;

namespace arenas {

// Every module object made from one built module shares these (they are C++
// globals of its shared library, hidden so that two ksbind modules never
// share them): the size each thread's arena is made with, a generation bumped
// whenever it changes, and whether the config's values were applied yet
// (once per process: making another module object, in a subinterpreter or
// through importlib, never resets what the user set since).
KSBIND_HIDDEN inline std::atomic<size_t> wanted_bytes{0};
KSBIND_HIDDEN inline std::atomic<unsigned long> generation{1};
KSBIND_HIDDEN inline std::atomic<bool> configured{false};

using mark_t = decltype(std::declval<ks::allocator&>().mark());

// An arena of some size, made again at another size only when nothing views
// it. Each thread's call arena (ThreadArena, below) is one, and so is each of
// ATen's worker threads' arena (ksbind/elementwise_loops.h).
struct SizedArena {
    std::unique_ptr<ks::allocator> alloc;
    size_t bytes = 0;

    // Whether it was (re)made: absent or another size. The old one is freed
    // first; a failure to make it leaves none.
    bool resize(size_t n) {
        if (alloc && bytes == n) return false;
        alloc.reset();
        alloc = std::make_unique<ks::allocator>(n);
        bytes = n;
        return true;
    }
};

// One thread's arena and the calls in progress on it.
struct ThreadArena : SizedArena {
    unsigned long generation = 0;
    const unsigned char* base = nullptr;  // address of offset 0 (marks are offsets)
    int depth = 0;                        // calls in progress on this thread
    CallArena* innermost = nullptr;       // the call in progress (the latest nested one)
};

inline ThreadArena& this_thread() {
    thread_local ThreadArena arena;
    return arena;
}

// The size before the module is configured (never seen in practice): the
// environment's or the default.
inline size_t default_bytes() { return ks::entry_points::detail::initial_arena_bytes(); }

// The size a new arena gets: set_arena_bytes's, else the one the module was
// configured with.
inline size_t current_bytes() {
    size_t n = wanted_bytes.load(std::memory_order_acquire);
    return n ? n : default_bytes();
}

// (Re)make this thread's arena at the wanted size; only between calls.
inline void remake(ThreadArena& t) {
    const unsigned long gen = generation.load(std::memory_order_acquire);
    // Nothing views it between calls: results were copied out.
    const bool remade = t.resize(current_bytes());
    t.generation = gen;
    // Both runtimes' marks are byte offsets from the start of the buffer; an
    // empty allocation returns that start without moving the top.
    if (remade) t.base = static_cast<const unsigned char*>(t.alloc->allocate(0));
}

}  // namespace arenas

// The arena guard of one python- or torch-target call (see the top of this
// file). Construct it before converting arguments; it lives until the result
// has been converted.
class CallArena {
public:
    CallArena() : t_(arenas::this_thread()) {
        if (t_.depth == 0 && (!t_.alloc || t_.generation != arenas::generation.load(std::memory_order_acquire)))
            arenas::remake(t_);
        mark_ = t_.alloc->mark();
        outer_ = t_.innermost;
        t_.innermost = this;
        ++t_.depth;
    }
    ~CallArena() {
        destructors_.run();
        if (t_.innermost == this) {
            // Reset to this call's mark, unless something below it was reset
            // already (never throw here: ks::allocator::reset may assert).
            if (t_.alloc->mark() >= mark_) t_.alloc->reset(mark_);
            t_.innermost = outer_;
        } else {
            // Calls that do not end in the order they began (greenlets
            // switching inside a conversion): a call nested in this one is
            // still running, so its values stay; unlink this call only.
            for (CallArena* c = t_.innermost; c; c = c->outer_) {
                if (c->outer_ == this) {
                    c->outer_ = outer_;
                    break;
                }
            }
        }
        --t_.depth;
    }
    CallArena(const CallArena&) = delete;
    CallArena& operator=(const CallArena&) = delete;

    ks::allocator& allocator() { return *t_.alloc; }

    // Whether p lies in what this call (or a call nested in it) allocated:
    // only such values are this call's to destroy (a result may view memory
    // the ks code does not own, e.g. a static table).
    bool allocated_here(const void* p) const {
        auto* q = static_cast<const unsigned char*>(p);
        return q >= t_.base + mark_ && q < t_.base + t_.alloc->mark();
    }

    // Destroy count constructed values at data when this call ends, if this
    // call allocated them.
    template <class T>
    void adopt(const T* data, size_t count) {
        if (count && allocated_here(data)) destructors_.adopt(data, count);
    }

    // Run f, the ks call, with the GIL released if asked. If it fails, what it
    // allocated is garbage: the arena goes back to where it was before f (the
    // arguments stay, to be destroyed when this call ends), ksc's allocator's
    // overrun is undone, and a full arena becomes arena_exhausted (MemoryError).
    template <class F>
    decltype(auto) call(bool release_gil, F&& f);
    // The same for a call made at site: failures name the binding, and what ks
    // code writes to std::cerr reaches stderr only with logging on
    // (rethrow_ks_failure; probe: a vjp's primal, for vjp_hint).
    template <class F, class Probe = detail::no_probe>
    decltype(auto) call(const CallSite& site, bool release_gil, F&& f, Probe&& probe = Probe());

private:
    arenas::ThreadArena& t_;
    arenas::mark_t mark_;
    CallArena* outer_;
    Destructors destructors_;
};

// Register count constructed values at data with the innermost call on this
// thread, to be destroyed when it ends (no-op for trivially destructible T,
// outside a call, and for memory that call did not allocate).
template <class T>
void destroy_after_call(const T* data, size_t count) {
    if constexpr (!std::is_trivially_destructible_v<T>) {
        if (CallArena* c = arenas::this_thread().innermost) c->adopt(data, count);
    }
}

template <class F>
decltype(auto) CallArena::call(bool release_gil, F&& f) {
    const arenas::mark_t mark = t_.alloc->mark();
    try {
        return without_gil_if(release_gil, std::forward<F>(f));
    } catch (...) {
        rethrow_ks_failure(*t_.alloc, mark, t_.bytes);
    }
}

template <class F, class Probe>
decltype(auto) CallArena::call(const CallSite& site, bool release_gil, F&& f, Probe&& probe) {
    const arenas::mark_t mark = t_.alloc->mark();
    StderrCapture captured(ks::entry_points::g_logging.load(std::memory_order_relaxed));
    try {
        return without_gil_if(release_gil, std::forward<F>(f));
    } catch (...) {
        rethrow_ks_failure(*t_.alloc, mark, t_.bytes, site, captured, probe);
    }
}

// T::create(alloc, size) for converters, which copy arguments into the
// calling thread's arena: a full arena is a MemoryError there too, naming
// that arena's size.
template <class Tensor>
Tensor create_tensor(ks::allocator* alloc, const typename Tensor::index_type& size) {
    const arenas::mark_t mark = alloc->mark();
    try {
        return Tensor::create(alloc, size);
    } catch (...) {
        const arenas::ThreadArena& t = arenas::this_thread();
        rethrow_ks_failure(*alloc, mark, t.innermost ? t.bytes : ks::entry_points::arena_bytes());
    }
}

// ------------------------------------------------------------ the module's functions

// reset_allocator, allocator_top, ... of a module whose calls use per-thread
// arenas: each speaks of the calling thread's arena (docs/targets.md).
namespace arenas {

// Reset this thread's arena. Calls reset it themselves when they end; inside
// a call (from Python code a conversion runs) it would free the outer call's
// values, so it refuses.
inline void reset_allocator() {
    ThreadArena& t = this_thread();
    if (t.depth > 0)
        throw std::logic_error("reset_allocator() cannot run inside a call of this module (from Python code "
                               "that an argument's conversion ran)");
    if (t.alloc) t.alloc->reset(0);
}

// Bytes of this thread's arena in use: 0 between calls.
inline size_t allocator_top() {
    ThreadArena& t = this_thread();
    return t.alloc ? static_cast<size_t>(t.alloc->mark()) : 0;
}

// The most bytes this thread's arena has held since it was made (its first
// call, or the first call after set_arena_bytes).
inline size_t allocator_peak() {
    ThreadArena& t = this_thread();
    return t.alloc ? static_cast<size_t>(t.alloc->peak()) : 0;
}

// The size of every thread's arena.
inline size_t arena_bytes() { return current_bytes(); }

// Make every thread's arena this size: this thread's now (so that too big a
// size is a MemoryError here), the others' at their next call. Inside a call
// this thread's arena is re-made after the outermost call ends.
inline void set_arena_bytes(size_t bytes) {
    if (bytes == 0) throw std::invalid_argument("arena_bytes must be positive");
    ThreadArena& t = this_thread();
    if (t.depth == 0) {
        auto probe = std::make_unique<ks::allocator>(bytes);  // a failure leaves everything as it was
        (void)probe;
    }
    wanted_bytes.store(bytes, std::memory_order_release);
    generation.fetch_add(1, std::memory_order_acq_rel);
    if (t.depth == 0) remake(t);
}

// Module init: the config's arena size (KSBIND_ARENA_BYTES wins) and logging,
// applied by the first module object made in the process only; a bad
// KSBIND_ARENA_BYTES fails that import (and the next ones) with a clear message.
inline void configure(size_t config_arena_bytes, bool log) {
    if (configured.load(std::memory_order_acquire)) return;
    size_t env = ks::entry_points::detail::env_arena_bytes();
    wanted_bytes.store(env ? env : config_arena_bytes, std::memory_order_release);
    ks::entry_points::g_logging = log;
    configured.store(true, std::memory_order_release);
}

}  // namespace arenas
}  // namespace ksbind
