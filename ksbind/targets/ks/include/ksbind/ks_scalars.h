// The ks target's casters for ks::Float (float) and ks::Integer (int): what
// pybind11's arithmetic caster accepts, with ksbind::pybind::load_number's
// errors (a KeyboardInterrupt raised in an argument's __float__ passes
// through; an int out of range is an OverflowError). Included by the ks
// target's module unit only, after <ksbind/pybind.h> and before any use of
// these casters: an explicit specialization must come before the first.
#pragma once

#include <ksbind/pybind_numbers.h>

namespace pybind11 {
namespace detail {

template <class T>
struct ks_number_caster {
    bool load(handle src, bool convert) { return src && ksbind::pybind::load_number(src, convert, value); }
    static handle cast(T v, return_value_policy, handle) {
        if constexpr (std::is_floating_point<T>::value) return PyFloat_FromDouble(static_cast<double>(v));
        else return PyLong_FromLong(static_cast<long>(v));
    }
    PYBIND11_TYPE_CASTER(T, io_name<std::is_integral<T>::value>("typing.SupportsInt | typing.SupportsIndex", "int",
                                                               "typing.SupportsFloat | typing.SupportsIndex",
                                                               "float"));
};

template <>
struct type_caster<float> : ks_number_caster<float> {};
template <>
struct type_caster<int> : ks_number_caster<int> {};

}  // namespace detail
}  // namespace pybind11
