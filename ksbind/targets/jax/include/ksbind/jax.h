// The jax target's handlers' side: ks values to and from XLA FFI buffers, the
// handlers' generic bodies (plain and vmap calls, elementwise buffers), the
// trace-time shape probe, and the allocator functions, all without Python
// (the library is loaded by ctypes; docs/jax.md). The handlers' translation
// unit includes it; the user's ks code is in another unit, which the
// handlers call through the generated jax_entry_points.h (its elementwise
// loops: ksbind/jax_entry.h), so XLA's FFI headers and these templates
// compile beside the user's C++, not after it.
//
// How a ks type is laid out in buffers ("leaves", in order):
//   Float / Integer / Bool            one 0-dim buffer (f32 / s32 / pred)
//   (Tensor N S), S a scalar          one rank-N buffer, viewed in place
//   (Tensor 1 E), E anything else     E's leaves, each with a leading row axis
//                                     (a tensor of tensors is one stacked buffer,
//                                     a tensor of tuples a tuple of them)
//   (Tuple ...)                       the elements' leaves, one after another
//   a type holding no scalar          no leaf (the tangent of discrete values)
// In a call, a leaf may carry leading batch axes beyond its type's rank: the
// call runs once per batch element (vmap mode, and every mode under jax.vmap).
#pragma once

#ifndef KSBIND_NO_PYTHON
#define KSBIND_NO_PYTHON 1
#endif

#include <knossos.h>
#include <ksbind/call_arena.h>

#include "xla/ffi/api/ffi.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#define KSBIND_EXPORT extern "C" __attribute__((visibility("default")))

namespace ksbind {
namespace jax_target {

namespace ffi = xla::ffi;

// ------------------------------------------------------------ leaves

struct Leaf {
    unsigned char* data;
    const int64_t* dims;  // `rank` sizes
    int rank;
    size_t elsize;
};

struct LeafType {
    ffi::DataType dtype;
    int rank;
    size_t elsize;
};

template <class S>
struct scalar_info;
template <>
struct scalar_info<ks::Float> {
    static constexpr ffi::DataType dtype = ffi::DataType::F32;
    static constexpr const char* name = "float32";
};
template <>
struct scalar_info<ks::Integer> {
    static constexpr ffi::DataType dtype = ffi::DataType::S32;
    static constexpr const char* name = "int32";
};
template <>
struct scalar_info<ks::Bool> {
    static constexpr ffi::DataType dtype = ffi::DataType::PRED;
    static constexpr const char* name = "bool";
};

inline const char* dtype_name(ffi::DataType t) {
    switch (t) {
        case ffi::DataType::F32: return "float32";
        case ffi::DataType::F64: return "float64";
        case ffi::DataType::F16: return "float16";
        case ffi::DataType::BF16: return "bfloat16";
        case ffi::DataType::S32: return "int32";
        case ffi::DataType::S64: return "int64";
        case ffi::DataType::S8: return "int8";
        case ffi::DataType::U8: return "uint8";
        case ffi::DataType::PRED: return "bool";
        default: return "another dtype";
    }
}

inline std::string shape_text(const int64_t* dims, int rank) {
    std::string s = "(";
    for (int i = 0; i < rank; ++i) s += std::to_string(dims[i]) + (rank == 1 || i + 1 < rank ? "," : "") + (i + 1 < rank ? " " : "");
    return s + ")";
}

inline int64_t elements(const int64_t* dims, int rank) {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= dims[i];
    return n;
}

inline int ks_size(int64_t n) {
    if (n > std::numeric_limits<int>::max())
        throw std::length_error("a dimension of " + std::to_string(n) + " is more than a ks tensor holds (2^31 - 1)");
    return static_cast<int>(n);
}

// A leaf one row further in: the row axis dropped.
inline Leaf row_of(const Leaf& l, int64_t r) {
    const int64_t row = elements(l.dims + 1, l.rank - 1);
    return Leaf{l.data + static_cast<size_t>(r * row) * l.elsize, l.dims + 1, l.rank - 1, l.elsize};
}

// A result whose shape is not the one found when tracing.
struct ShapeMismatch : std::runtime_error {
    using std::runtime_error::runtime_error;
};

template <class T>
struct is_scalar : std::bool_constant<std::is_same_v<T, ks::Float> || std::is_same_v<T, ks::Integer> ||
                                      std::is_same_v<T, ks::Bool>> {};

// A type holding no Float, Integer or Bool: tuples and tensors of them only.
template <class T>
struct no_scalar : std::bool_constant<!is_scalar<T>::value> {};
template <size_t D, class E>
struct no_scalar<ks::tensor<D, E>> : no_scalar<E> {};
template <class... Ts>
struct no_scalar<ks::Tuple<Ts...>> : std::bool_constant<(no_scalar<Ts>::value && ...)> {};

template <size_t D>
auto ks_index(const int64_t* dims) {
    if constexpr (D == 1) {
        return ks_size(dims[0]);
    } else {
        return [&]<size_t... I>(std::index_sequence<I...>) {
            return ks::make_Tuple(ks_size(dims[I])...);
        }(std::make_index_sequence<D>());
    }
}

template <size_t D, class Index>
void index_dims(const Index& size, int64_t* out) {
    if constexpr (D == 1) {
        out[0] = size;
    } else {
        [&]<size_t... I>(std::index_sequence<I...>) { ((out[I] = ks::get<I>(size)), ...); }(std::make_index_sequence<D>());
    }
}

// cross<T>: T's leaves (count, types), T from leaves (views), T into leaves
// (shapes checked), and T's leaves' shapes (the probe).
template <class T, class = void>
struct cross;

template <class T>
struct cross<T, std::enable_if_t<no_scalar<T>::value>> {
    static constexpr size_t leaves = 0;
    static void types(LeafType*, int = 0) {}
    static T in(ks::allocator*, const Leaf*) { return T{}; }
    static void out(const T&, const Leaf*, const std::string&) {}
    static void shapes(const T&, int64_t*&, const std::string&) {}
};

template <class S>
struct cross<S, std::enable_if_t<is_scalar<S>::value>> {
    static constexpr size_t leaves = 1;
    static void types(LeafType* t, int extra = 0) { t[0] = {scalar_info<S>::dtype, extra, sizeof(S)}; }
    static S in(ks::allocator*, const Leaf* l) {
        S v;
        std::memcpy(&v, l[0].data, sizeof(S));
        return v;
    }
    static void out(const S& v, const Leaf* l, const std::string&) { std::memcpy(l[0].data, &v, sizeof(S)); }
    static void shapes(const S&, int64_t*&, const std::string&) {}
};

template <size_t D, class S>
struct cross<ks::tensor<D, S>, std::enable_if_t<is_scalar<S>::value>> {
    using T = ks::tensor<D, S>;
    static constexpr size_t leaves = 1;
    static void types(LeafType* t, int extra = 0) { t[0] = {scalar_info<S>::dtype, static_cast<int>(D) + extra, sizeof(S)}; }
    static T in(ks::allocator*, const Leaf* l) { return T(ks_index<D>(l[0].dims), reinterpret_cast<S*>(l[0].data)); }
    static void out(const T& v, const Leaf* l, const std::string& where) {
        int64_t dims[D];
        index_dims<D>(v.size(), dims);
        if (!std::equal(dims, dims + D, l[0].dims))
            throw ShapeMismatch(where + " has shape " + shape_text(dims, D) + ", but shape " +
                                shape_text(l[0].dims, D) + " was found when tracing");
        if (v.num_elements()) std::memcpy(l[0].data, v.data(), sizeof(S) * static_cast<size_t>(v.num_elements()));
    }
    static void shapes(const T& v, int64_t*& out, const std::string&) {
        index_dims<D>(v.size(), out);
        out += D;
    }
};

template <class E>
struct cross<ks::tensor<1, E>, std::enable_if_t<!is_scalar<E>::value && !no_scalar<E>::value>> {
    using T = ks::tensor<1, E>;
    static constexpr size_t leaves = cross<E>::leaves;
    static void types(LeafType* t, int extra = 0) { cross<E>::types(t, extra + 1); }
    static T in(ks::allocator* alloc, const Leaf* l) {
        const int64_t n = l[0].dims[0];
        for (size_t j = 1; j < leaves; ++j)
            if (l[j].dims[0] != n)
                throw std::invalid_argument("the parts of a tensor of tuples have " + std::to_string(n) + " and " +
                                            std::to_string(l[j].dims[0]) + " rows");
        T v = ksbind::create_tensor<T>(alloc, ks_size(n));
        Leaf rows[leaves];
        for (int64_t r = 0; r < n; ++r) {
            for (size_t j = 0; j < leaves; ++j) rows[j] = row_of(l[j], r);
            v.data()[r] = cross<E>::in(alloc, rows);
        }
        return v;
    }
    static void out(const T& v, const Leaf* l, const std::string& where) {
        if (v.size() != l[0].dims[0])
            throw ShapeMismatch(where + " has " + std::to_string(v.size()) + " rows, but " +
                                std::to_string(l[0].dims[0]) + " were found when tracing");
        Leaf rows[leaves];
        for (int r = 0; r < v.size(); ++r) {
            for (size_t j = 0; j < leaves; ++j) rows[j] = row_of(l[j], r);
            cross<E>::out(v.data()[r], rows, where + "[" + std::to_string(r) + "]");
        }
    }
    static void shapes(const T& v, int64_t*& out, const std::string& where) {
        // Each leaf: the row count, then row 0's shape; every row must have that shape.
        if (v.size() == 0)
            throw std::invalid_argument(where + " is an empty tensor of tensors or tuples: the shape of its rows "
                                        "cannot be known; give the binding a result_shape");
        int64_t first[64], other[64];
        int64_t* p = first;
        cross<E>::shapes(v.data()[0], p, where + "[0]");
        const size_t used = static_cast<size_t>(p - first);
        for (int r = 1; r < v.size(); ++r) {
            int64_t* q = other;
            cross<E>::shapes(v.data()[r], q, where);
            if (!std::equal(first, first + used, other))
                throw std::invalid_argument(where + " is ragged: row 0 and row " + std::to_string(r) +
                                            " differ in shape, and a jax array is rectangular");
        }
        LeafType types[leaves];
        cross<E>::types(types);
        int64_t* src = first;
        for (size_t j = 0; j < leaves; ++j) {
            *out++ = v.size();
            for (int k = 0; k < types[j].rank; ++k) *out++ = *src++;
        }
    }
};

template <class... Ts>
struct cross<ks::Tuple<Ts...>, std::enable_if_t<!no_scalar<ks::Tuple<Ts...>>::value>> {
    using T = ks::Tuple<Ts...>;
    static constexpr size_t leaves = (cross<Ts>::leaves + ... + 0);
    template <size_t I>
    static constexpr size_t offset() {
        constexpr size_t counts[] = {cross<Ts>::leaves..., 0};
        size_t o = 0;
        for (size_t k = 0; k < I; ++k) o += counts[k];
        return o;
    }
    static void types(LeafType* t, int extra = 0) {
        [&]<size_t... I>(std::index_sequence<I...>) {
            (cross<Ts>::types(t + offset<I>(), extra), ...);
        }(std::index_sequence_for<Ts...>());
    }
    static T in(ks::allocator* alloc, const Leaf* l) {
        return [&]<size_t... I>(std::index_sequence<I...>) {
            return ks::make_Tuple(cross<Ts>::in(alloc, l + offset<I>())...);
        }(std::index_sequence_for<Ts...>());
    }
    static void out(const T& v, const Leaf* l, const std::string& where) {
        [&]<size_t... I>(std::index_sequence<I...>) {
            (cross<Ts>::out(ks::get<I>(v), l + offset<I>(), where + "[" + std::to_string(I) + "]"), ...);
        }(std::index_sequence_for<Ts...>());
    }
    static void shapes(const T& v, int64_t*& out, const std::string& where) {
        [&]<size_t... I>(std::index_sequence<I...>) {
            (cross<Ts>::shapes(ks::get<I>(v), out, where + "[" + std::to_string(I) + "]"), ...);
        }(std::index_sequence_for<Ts...>());
    }
};

// ------------------------------------------------------------ calls

inline ffi::Error failure(const char* binding, const std::string& what) {
    // A failure inside ks code already names the binding and its ks function (ksbind/ks_failure.h).
    const std::string named = std::string(binding) + " (ks function ";
    if (what.rfind(named, 0) == 0) return ffi::Error(ffi::ErrorCode::kInvalidArgument, "ksbind: " + what);
    return ffi::Error(ffi::ErrorCode::kInvalidArgument, std::string("ksbind: binding '") + binding + "': " + what);
}

// A handler's buffers as leaves, checked against the types (dtype; rank at
// least the type's: the rest are batch axes), with the batch they make. N,
// the leaf count, is the ks type's: fixed-size tables on the stack, so a call
// allocates nothing on the heap before the ks function runs.
inline constexpr int max_batch_axes = 32;

template <size_t N>
struct Batch {
    static constexpr size_t size = N;
    Leaf leaves[N ? N : 1];
    int64_t divisor[N ? N : 1];  // per leaf: step index -> this leaf's batch index
    int batch_axes[N ? N : 1];   // per leaf
    int64_t shape[max_batch_axes];  // the batch's shape
    int rank = 0;                   // its length
    int64_t steps = 1;
};

inline std::string leaf_name(const std::vector<std::string>& names, size_t j, bool result) {
    return j < names.size() ? names[j] : std::string(result ? "result part " : "argument part ") + std::to_string(j);
}

template <size_t N, class Buffers>
void add_leaves(Batch<N>& b, const LeafType* types, Buffers& bufs, bool result,
                const std::vector<std::string>& names) {
    for (size_t j = 0; j < N; ++j) {
        auto buf = [&] {
            if constexpr (std::is_same_v<Buffers, ffi::RemainingRets>) {
                auto r = bufs.template get<ffi::AnyBuffer>(j);
                if (r.has_error()) throw std::invalid_argument("missing result buffer " + std::to_string(j));
                return **r;
            } else {
                auto r = bufs.template get<ffi::AnyBuffer>(j);
                if (r.has_error()) throw std::invalid_argument("missing argument buffer " + std::to_string(j));
                return *r;
            }
        }();
        // The leaf's name, made only for a message.
        auto what = [&] { return leaf_name(names, j, result); };
        if (buf.element_type() != types[j].dtype)
            throw std::invalid_argument(what() + " is " + dtype_name(buf.element_type()) + ", expected " +
                                        dtype_name(types[j].dtype));
        auto dims = buf.dimensions();
        const int rank = static_cast<int>(dims.size());
        if (rank < types[j].rank)
            throw std::invalid_argument(what() + " has rank " + std::to_string(rank) + ", expected " +
                                        std::to_string(types[j].rank));
        const int axes = rank - types[j].rank;
        if (axes > max_batch_axes)
            throw std::invalid_argument(what() + " has " + std::to_string(axes) + " batch axes, more than " +
                                        std::to_string(max_batch_axes));
        b.leaves[j] = Leaf{static_cast<unsigned char*>(buf.untyped_data()), dims.begin() + axes, types[j].rank,
                           types[j].elsize};
        b.batch_axes[j] = axes;
        // The batch is the longest prefix; every other leaf's must begin it.
        const int common = std::min(axes, b.rank);
        for (int k = 0; k < common; ++k)
            if (b.shape[k] != dims[k]) throw std::invalid_argument(what() + ": batch axes do not agree with the others'");
        if (axes > b.rank) {
            for (int k = b.rank; k < axes; ++k) b.shape[k] = dims[k];
            b.rank = axes;
        }
    }
}

template <size_t N>
void finish_batch(Batch<N>& b) {
    b.steps = elements(b.shape, b.rank);
    for (size_t j = 0; j < N; ++j) b.divisor[j] = elements(b.shape + b.batch_axes[j], b.rank - b.batch_axes[j]);
}

template <size_t N>
Leaf step_leaf(const Batch<N>& b, size_t j, int64_t step) {
    const Leaf& l = b.leaves[j];
    if (!b.batch_axes[j]) return l;
    const int64_t i = step / b.divisor[j];
    return Leaf{l.data + static_cast<size_t>(i * elements(l.dims, l.rank)) * l.elsize, l.dims, l.rank, l.elsize};
}

template <class... Args>
std::vector<LeafType> arg_types() {
    std::vector<LeafType> t((cross<Args>::leaves + ... + 0));
    size_t o = 0;
    ((cross<Args>::types(t.data() + o), o += cross<Args>::leaves), ...);
    return t;
}

template <class T>
std::vector<LeafType> result_types() {
    std::vector<LeafType> t(cross<T>::leaves);
    cross<T>::types(t.data());
    return t;
}

template <class... Args, size_t... I>
auto args_from(ks::allocator* alloc, const Leaf* l, std::index_sequence<I...>) {
    constexpr size_t counts[] = {cross<Args>::leaves..., 0};
    size_t offsets[sizeof...(Args) + 1] = {};
    for (size_t k = 0; k < sizeof...(Args); ++k) offsets[k + 1] = offsets[k] + counts[k];
    return std::tuple<Args...>(cross<Args>::in(alloc, l + offsets[I])...);
}

// One plain or vmap call: the ks function once per batch element (once for a
// plain call), each result checked against its traced shape and copied into
// XLA's buffer. A failure (KS_ASSERT, a ks exception, a full arena, a shape
// that is not the traced one) is an INVALID_ARGUMENT error with its message.
template <class Ret, class... Args, class F>
ffi::Error call(const CallSite& site, const std::vector<std::string>& names, ffi::RemainingArgs args,
                ffi::RemainingRets rets, F&& f) {
    const char* binding = site.binding;
    try {
        constexpr size_t n_in = (cross<Args>::leaves + ... + 0), n_out = cross<Ret>::leaves;
        static const std::vector<LeafType> in_types = arg_types<Args...>();
        static const std::vector<LeafType> out_types = result_types<Ret>();
        if (args.size() != n_in || rets.size() != n_out)
            return failure(binding, "called with " + std::to_string(args.size()) + " arguments and " +
                                    std::to_string(rets.size()) + " results; it takes " + std::to_string(n_in) +
                                    " and " + std::to_string(n_out));
        Batch<n_in> in;
        add_leaves(in, in_types.data(), args, false, names);
        Batch<n_out> out;
        static const std::vector<std::string> no_names;
        add_leaves(out, out_types.data(), rets, true, no_names);
        finish_batch(in);
        for (size_t j = 0; j < n_out; ++j)
            if (out.batch_axes[j] != in.rank)
                return failure(binding, "result part " + std::to_string(j) + " lacks the batch axes of the arguments");
        std::copy(in.shape, in.shape + in.rank, out.shape);
        out.rank = in.rank;
        finish_batch(out);
        Leaf step_in[n_in ? n_in : 1], step_out[n_out ? n_out : 1];
        static const std::string result_where = "the result";
        CallArena arena;
        ks::allocator& alloc = arena.allocator();
        const auto mark = alloc.mark();
        for (int64_t s = 0; s < in.steps; ++s) {
            for (size_t j = 0; j < n_in; ++j) step_in[j] = step_leaf(in, j, s);
            for (size_t j = 0; j < n_out; ++j) step_out[j] = step_leaf(out, j, s);
            arena.call(site, false, [&] {
                auto values = args_from<Args...>(&alloc, step_in, std::index_sequence_for<Args...>());
                if (ks::entry_points::g_logging) std::cerr << binding << ": step " << s << " of " << in.steps << std::endl;
                Ret r = std::apply([&](auto&... a) { return f(&alloc, a...); }, values);
                cross<Ret>::out(r, step_out, result_where);
                return 0;
            });
            alloc.reset(mark);  // each step's values are copied out: the next step reuses the arena
        }
        return ffi::Error::Success();
    } catch (const ShapeMismatch& e) {
        return failure(binding, std::string(e.what()) + " (a result shape that depends on argument values needs "
                                "result_shape: in the binding's config entry; docs/jax.md)");
    } catch (const std::exception& e) {
        return failure(binding, e.what());
    }
}

// Elementwise loops this long or longer are split over XLA's intra-op thread
// pool (as XLA splits its own fused loops); shorter ones run on the calling
// thread, where a task hand-off would cost more than it saves.
inline constexpr int64_t parallel_elements = 1 << 15;

// The state the calling thread and its pool tasks share: chunks handed out by
// an atomic counter, so the caller works too and only ever waits for chunks a
// running task holds (no deadlock when the pool is busy or the caller is one
// of its threads). Shared-owned: a task may start after the caller returned.
struct ChunkedLoop {
    int64_t n = 0, chunk = 0, chunks = 0;
    std::atomic<int64_t> next{0}, done{0};
    std::mutex m;
    std::condition_variable cv;
    std::string error;  // the first failure's message
};

// Run body(begin, end) over [0, n) on the caller and up to `threads` pool tasks.
template <class Body>
void run_chunks(ffi::ThreadPool& pool, int64_t n, const Body& body) {
    const int64_t threads = pool.num_threads();
    if (n < parallel_elements || threads < 2) {
        body(int64_t{0}, n);
        return;
    }
    auto loop = std::make_shared<ChunkedLoop>();
    loop->n = n;
    loop->chunks = std::min<int64_t>(4 * (threads + 1), (n + 4095) / 4096);
    loop->chunk = (n + loop->chunks - 1) / loop->chunks;
    loop->chunks = (n + loop->chunk - 1) / loop->chunk;
    // body is the caller's (its lambdas capture the caller's frame): a task
    // touches it only for a chunk it claimed, and the caller waits for those.
    auto work = [loop, &body] {
        for (int64_t c; (c = loop->next.fetch_add(1)) < loop->chunks;) {
            try {
                body(c * loop->chunk, std::min(loop->n, (c + 1) * loop->chunk));
            } catch (const std::exception& e) {
                std::lock_guard<std::mutex> lock(loop->m);
                if (loop->error.empty()) loop->error = e.what();
            }
            if (loop->done.fetch_add(1) + 1 == loop->chunks) {
                std::lock_guard<std::mutex> lock(loop->m);
                loop->cv.notify_all();
            }
        }
    };
    for (int64_t t = 0; t < std::min<int64_t>(threads, loop->chunks - 1); ++t)
        pool.Schedule([loop, work] { work(); });
    work();
    {
        std::unique_lock<std::mutex> lock(loop->m);
        loop->cv.wait(lock, [&] { return loop->done.load() == loop->chunks; });
    }
    if (!loop->error.empty()) throw std::runtime_error(loop->error);
}

// An elementwise call: NIn float32 buffers of one shape (the wrapper broadcast
// them), NOut results of that shape. The loop itself, with the scalar ks
// function inlined, is in the user's translation unit (ksbind/jax_entry.h,
// elementwise_chunk): `chunk(in, out, begin, end)` runs it over [begin, end);
// long arrays are split over XLA's intra-op pool (each thread its own arena).
template <size_t NIn, size_t NOut, class Chunk>
ffi::Error elementwise(const CallSite& site, ffi::ThreadPool pool, ffi::RemainingArgs args, ffi::RemainingRets rets,
                       Chunk&& chunk) {
    const char* binding = site.binding;
    try {
        if (args.size() != NIn || rets.size() != NOut) return failure(binding, "wrong number of buffers");
        const float* in[NIn];
        float* out[NOut];
        int64_t n = -1;
        for (size_t j = 0; j < NIn; ++j) {
            auto b = args.get<ffi::AnyBuffer>(j);
            if (b.has_error() || b->element_type() != ffi::DataType::F32)
                return failure(binding, "argument " + std::to_string(j) + " is not float32");
            const int64_t m = static_cast<int64_t>(b->element_count());
            if (n >= 0 && m != n) return failure(binding, "the arguments differ in size (they are broadcast first)");
            n = m;
            in[j] = static_cast<const float*>(b->untyped_data());
        }
        for (size_t j = 0; j < NOut; ++j) {
            auto b = rets.get<ffi::AnyBuffer>(j);
            if (b.has_error() || (*b)->element_type() != ffi::DataType::F32 ||
                static_cast<int64_t>((*b)->element_count()) != n)
                return failure(binding, "result " + std::to_string(j) + " is not float32 of the arguments' size");
            out[j] = static_cast<float*>((*b)->untyped_data());
        }
        if (ks::entry_points::g_logging) std::cerr << binding << " elementwise over " << n << " elements" << std::endl;
        run_chunks(pool, n, [&](int64_t begin, int64_t end) { chunk(in, out, begin, end); });
        return ffi::Error::Success();
    } catch (const std::exception& e) {
        return failure(binding, e.what());
    }
}

// ------------------------------------------------------------ the shape probe

// Text for ctypes (an error, a str result): copied into the caller's buffer, cut to fit.
inline void copy_text(char* out, size_t outlen, const std::string& text) {
    if (outlen == 0) return;
    size_t n = std::min(text.size(), outlen - 1);
    std::memcpy(out, text.data(), n);
    out[n] = '\0';
}

inline int probe_error(char* err, size_t errlen, const std::string& what) {
    copy_text(err, errlen, what);
    return 1;
}

// Ones, not zeros: an Integer argument the ks code divides by must not trap
// (SIGFPE would end the process), and a Float one it divides by gives no inf.
inline void fill_ones(unsigned char* data, int64_t n, ffi::DataType t) {
    for (int64_t i = 0; i < n; ++i) {
        if (t == ffi::DataType::F32) {
            const float one = 1.0f;
            std::memcpy(data + i * sizeof(float), &one, sizeof(float));
        } else if (t == ffi::DataType::S32) {
            const int one = 1;
            std::memcpy(data + i * sizeof(int), &one, sizeof(int));
        } else {
            data[i] = 1;
        }
    }
}

// Trace-time result shapes: the ks function called once on arguments of
// the traced shapes filled with ones (in_dims: every argument leaf's dims, in
// order); out_dims receives every result leaf's. 0, or 1 with a message in err.
template <class Ret, class... Args, class F>
int probe(const CallSite& site, const int64_t* in_dims, int64_t* out_dims, char* err, size_t errlen, F&& f) {
    const char* binding = site.binding;
    try {
        static const std::vector<LeafType> in_types = arg_types<Args...>();
        std::vector<std::vector<unsigned char>> zeros(in_types.size());  // filled with ones below
        std::vector<Leaf> leaves(in_types.size());
        const int64_t* d = in_dims;
        for (size_t j = 0; j < in_types.size(); ++j) {
            const int64_t n = elements(d, in_types[j].rank);
            zeros[j].assign(static_cast<size_t>(n) * in_types[j].elsize + 1, 0);
            fill_ones(zeros[j].data(), n, in_types[j].dtype);
            leaves[j] = Leaf{zeros[j].data(), d, in_types[j].rank, in_types[j].elsize};
            d += in_types[j].rank;
        }
        CallArena arena;
        ks::allocator& alloc = arena.allocator();
        arena.call(site, false, [&] {
            auto values = args_from<Args...>(&alloc, leaves.data(), std::index_sequence_for<Args...>());
            Ret r = std::apply([&](auto&... a) { return f(&alloc, a...); }, values);
            int64_t* o = out_dims;
            cross<Ret>::shapes(r, o, "the result");
            return 0;
        });
        return 0;
    } catch (const std::exception& e) {
        return probe_error(err, errlen, std::string("binding '") + binding + "': finding the result's shape by "
                                        "calling it on ones failed: " + e.what());
    }
}

}  // namespace jax_target
}  // namespace ksbind

// ------------------------------------------------------------ the module's functions

// The module's support functions (ksbind/support.py), as C functions for ctypes: generated from
// the table into ksbind/jax_support_registrations.h (KSBIND_JAX_ALLOCATOR_FUNCTIONS, expanded by the
// handlers' unit), each over ksbind/support_functions.h's C++ through support_call.
namespace ksbind {
namespace jax_target {

// f() with its C++ error as a code ctypes' caller maps to a Python type (ksbind/targets/jax/runtime/ffi.py's
// _support_call): 0 none, 1 RuntimeError, 2 MemoryError, 3 ValueError; the message in err.
template <class F>
int support_call(char* err, size_t errlen, F&& f) noexcept {
    try {
        f();
        return 0;
    } catch (const std::bad_alloc&) {
        probe_error(err, errlen, "out of memory (std::bad_alloc)");
        return 2;
    } catch (const std::invalid_argument& e) {
        probe_error(err, errlen, e.what());
        return 3;
    } catch (const std::exception& e) {
        probe_error(err, errlen, e.what());
        return 1;
    }
}

}  // namespace jax_target
}  // namespace ksbind

#include <ksbind/support_functions.h>
#include <ksbind/jax_support_registrations.h>
