// What the torch target's converters (ksbind/torch_stable.h, over the stable ABI's tensors) ask
// of a ks value's type: plain C++ over ks types, no tensor library, kept apart from the tensor
// code that uses it.
#pragma once

#include <knossos.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

namespace ksbind {
namespace ks_values {

template <class T>
struct is_ks_tensor : std::false_type {};
template <size_t D, class E>
struct is_ks_tensor<ks::tensor<D, E>> : std::true_type {};

template <class T>
struct is_ks_tuple : std::false_type {};
template <class... Ts>
struct is_ks_tuple<ks::Tuple<Ts...>> : std::true_type {};

// Element type and rank of ks tensors, however deeply nested.
template <class T>
struct leaf {
    using type = T;
    static constexpr size_t rank = 0;
};
template <size_t D, class E>
struct leaf<ks::tensor<D, E>> {
    using type = typename leaf<E>::type;
    static constexpr size_t rank = D + leaf<E>::rank;
};

// Types made of tuples and tensors only: the tangents of discrete values, which cross as ().
template <class T>
struct holds_no_scalar : std::false_type {};
template <class... Ts>
struct holds_no_scalar<ks::Tuple<Ts...>> : std::bool_constant<(holds_no_scalar<Ts>::value && ...)> {};
template <size_t D, class E>
struct holds_no_scalar<ks::tensor<D, E>> : holds_no_scalar<E> {};

// ks index (int for rank 1, ks::Tuple<int...> above) from a tensor's sizes, starting at dim `first`.
template <size_t D, class Sizes>
auto ks_index(const Sizes& sizes, size_t first = 0) {
    if constexpr (D == 1) {
        return static_cast<int>(sizes[first]);
    } else {
        return [&]<size_t... I>(std::index_sequence<I...>) {
            return ks::make_Tuple(static_cast<int>(sizes[first + I])...);
        }(std::make_index_sequence<D>());
    }
}

// A ks index as a tensor's sizes.
template <size_t D, class Index>
std::vector<int64_t> torch_sizes(const Index& size) {
    if constexpr (D == 1) {
        return {static_cast<int64_t>(size)};
    } else {
        return [&]<size_t... I>(std::index_sequence<I...>) {
            return std::vector<int64_t>{static_cast<int64_t>(ks::get<I>(size))...};
        }(std::make_index_sequence<D>());
    }
}

// The shape a tensor of tensors stacks into, when every inner tensor has the same shape;
// appended to `shape` (an empty tensor of tensors: zeros).
template <class T>
void first_shape(const T& v, std::vector<int64_t>& shape) {
    [&]<size_t D, class E>(ks::tensor<D, E>*) {
        for (int64_t s : torch_sizes<D>(v.size())) shape.push_back(s);
        if constexpr (is_ks_tensor<E>::value) {
            if (v.num_elements() > 0) {
                first_shape(v.data()[0], shape);
            } else {
                for (size_t k = 0; k < leaf<E>::rank; ++k) shape.push_back(0);
            }
        }
    }(static_cast<T*>(nullptr));
}

template <class T>
bool has_shape(const T& v, const int64_t* shape) {
    return [&]<size_t D, class E>(ks::tensor<D, E>*) {
        auto sizes = torch_sizes<D>(v.size());
        if (!std::equal(sizes.begin(), sizes.end(), shape)) return false;
        if constexpr (is_ks_tensor<E>::value) {
            for (int i = 0; i < v.num_elements(); ++i)
                if (!has_shape(v.data()[i], shape + D)) return false;
        }
        return true;
    }(static_cast<T*>(nullptr));
}

// Copy a tensor of tensors' scalars, in order, to dst (advanced past them).
template <class T, class Leaf>
void copy_leaves(const T& v, Leaf*& dst) {
    [&]<size_t D, class E>(ks::tensor<D, E>*) {
        if constexpr (is_ks_tensor<E>::value) {
            for (int i = 0; i < v.num_elements(); ++i) copy_leaves(v.data()[i], dst);
        } else {
            size_t n = static_cast<size_t>(v.num_elements());
            if (n) std::memcpy(dst, v.data(), n * sizeof(E));
            dst += n;
        }
    }(static_cast<T*>(nullptr));
}

}  // namespace ks_values
}  // namespace ksbind
