// ksbind's minimal Knossos runtime (`runtime: bundled`): the surface of ksc's
// knossos.h that ksbind's entry points and hand-written ks C++ rely on (see
// docs/knossos.md), spelled as ksc spells it, so code written against it also
// compiles against ksc's runtime. Header-only; knossos.cpp exists because
// ksc's output ends with #include "knossos.cpp".
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#ifdef KS_BOUNDS_CHECK
#include <iostream>
#endif
#include <cstring>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

// As ksc's knossos.h does (the build passes -DKS_ALLOCATOR= too).
#ifndef KS_ALLOCATOR
#define KS_ALLOCATOR
#endif

namespace ks {

typedef int Integer;
typedef float Float;
typedef bool Bool;
typedef std::string String;

// ------------------------------------------------------------ failures

// ksc's message: "FILE:LINE:Assert failed [EXPR]".
[[noreturn]] inline void fail(const char* file, int line, const char* expr) {
    throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ":Assert failed [" + expr + "]");
}

#define KS_ASSERT(expr) ((expr) ? (void)0 : ::ks::fail(__FILE__, __LINE__, #expr))

// Thrown when the arena is full; derives from std::bad_alloc so that
// pybind11 turns it into Python's MemoryError.
struct arena_exhausted : std::bad_alloc {
    const char* what() const noexcept override {
        return "ks::allocator arena exhausted (raise arena_bytes or KSBIND_ARENA_BYTES)";
    }
};

// ------------------------------------------------------------ tuples

template <class... Ts>
using Tuple = std::tuple<Ts...>;

template <class... Ts>
Tuple<std::decay_t<Ts>...> make_Tuple(Ts&&... ts) {
    return Tuple<std::decay_t<Ts>...>(std::forward<Ts>(ts)...);
}

template <size_t I, class T>
decltype(auto) get(T&& t) {
    return std::get<I>(std::forward<T>(t));
}

// ------------------------------------------------------------ allocator

typedef size_t alloc_mark_t;

// A bump allocator over one arena: allocate() moves the top up, reset(mark)
// moves it back. Results that hold tensors live here until reset.
class allocator {
    size_t max_size_;
    unsigned char* buf_;
    size_t top_;
    size_t peak_;

public:
    explicit allocator(size_t max_size)
        : max_size_(max_size), buf_(static_cast<unsigned char*>(std::malloc(max_size ? max_size : 1))),
          top_(0), peak_(0) {
        if (!buf_) throw std::bad_alloc();
    }
    ~allocator() { std::free(buf_); }
    allocator(const allocator&) = delete;
    allocator& operator=(const allocator&) = delete;

    void* allocate(size_t size) {
        const size_t align = alignof(std::max_align_t);
        size_t start = (top_ + align - 1) / align * align;
        if (start > max_size_ || size > max_size_ - start) throw arena_exhausted();
        top_ = start + size;
        if (top_ > peak_) peak_ = top_;
        return buf_ + start;
    }
    alloc_mark_t mark() const { return top_; }
    void reset(alloc_mark_t m = 0) {
        KS_ASSERT(m <= top_);
        top_ = m;
    }
    size_t peak() const { return peak_; }
    size_t max_size() const { return max_size_; }
};

typedef allocator allocator_base;

// ------------------------------------------------------------ tensors

template <size_t Dim>
struct tensor_dimension {
    // Tuple<int, ..., int> with Dim ints.
    template <size_t... I>
    static auto make(std::index_sequence<I...>) -> Tuple<decltype((void)I, int())...>;
    typedef decltype(make(std::make_index_sequence<Dim>())) index_type;

    static int num_elements(const index_type& size) {
        int n = 1;
        std::apply([&](auto... s) { ((n *= s), ...); }, size);
        return n;
    }
    // Row-major flat offset of an index.
    static int flatten(const index_type& size, const index_type& index) {
        int offset = 0;
        flatten_impl(size, index, offset, std::make_index_sequence<Dim>());
        return offset;
    }
    template <size_t... I>
    static void flatten_impl(const index_type& size, const index_type& index, int& offset,
                             std::index_sequence<I...>) {
        ((offset = offset * std::get<I>(size) + std::get<I>(index)), ...);
    }
};

template <>
struct tensor_dimension<1> {
    typedef int index_type;
    static int num_elements(int size) { return size; }
    static int flatten(int, int index) { return index; }
};

// A view of Dim-dimensional row-major data it does not own (the arena or a
// caller's buffer owns it). Declared as ksc declares it: size_t Dim.
template <size_t Dim, class T>
class tensor {
public:
    typedef typename tensor_dimension<Dim>::index_type index_type;
    typedef T value_type;

    tensor() : size_(), data_(nullptr) {}
    tensor(index_type size, T* data) : size_(size), data_(data) {}

    static tensor create(allocator* alloc, index_type size) {
        int n = tensor_dimension<Dim>::num_elements(size);
        KS_ASSERT(n >= 0);
        T* data = static_cast<T*>(alloc->allocate(sizeof(T) * static_cast<size_t>(n)));
        if constexpr (!std::is_trivially_default_constructible_v<T>) {
            for (int i = 0; i < n; ++i) new (data + i) T();
        }
        return tensor(size, data);
    }

    index_type size() const { return size_; }
    int num_elements() const { return tensor_dimension<Dim>::num_elements(size_); }
    T* data() const { return data_; }

    // As ksc's: t[i] is element i of a vector, row i (a view) of a higher rank;
    // t.index(i) takes a whole index (an int, or a ks::Tuple of Dim ints).
    decltype(auto) operator[](int i) const {
#ifdef KS_BOUNDS_CHECK
        if constexpr (Dim == 1) check(i, size_);
        else check(i, std::get<0>(size_));
#endif
        if constexpr (Dim == 1) {
            return static_cast<T&>(data_[i]);
        } else {
            auto rest = tail(size_, std::make_index_sequence<Dim - 1>());
            return tensor<Dim - 1, T>(rest, data_ + static_cast<size_t>(i) * tensor_dimension<Dim - 1>::num_elements(rest));
        }
    }
    T& index(index_type i) const {
#ifdef KS_BOUNDS_CHECK
        check_all(i, std::make_index_sequence<Dim == 1 ? 0 : Dim>());
#endif
        return data_[tensor_dimension<Dim>::flatten(size_, i)];
    }

private:
#ifdef KS_BOUNDS_CHECK
    // As ksc's runtime checks (a debug build: KS_BOUNDS_CHECK): the reason on
    // std::cerr, then abort() (unqualified, so a debug build's ks::abort throws).
    static void check(int i, int n) {
        if (i < 0 || i >= n) {
            std::cerr << "ERROR: Accessing element " << i << " of tensor of size " << n << std::endl;
            abort();
        }
    }
    template <size_t... I>
    void check_all(const index_type& i, std::index_sequence<I...>) const {
        if constexpr (Dim == 1) check(i, size_);
        else (check(std::get<I>(i), std::get<I>(size_)), ...);
    }
#endif

    template <size_t... I>
    static auto tail(const index_type& size, std::index_sequence<I...>) {
        if constexpr (sizeof...(I) == 1) {
            return std::get<1>(size);
        } else {
            return make_Tuple(std::get<I + 1>(size)...);
        }
    }

    index_type size_;
    T* data_;
};

}  // namespace ks
