// Python numbers into ks scalars for the pybind11 targets (ks, torch), as
// pybind11's own casters read them, except for errors: pybind11 clears
// whatever Python code raised inside a conversion (a KeyboardInterrupt in an
// argument's __float__ becomes "incompatible function arguments") and calls
// an int too big for the C++ type a wrong type. Here only a TypeError (the
// value is not a number of that kind) makes the argument not match; an int
// out of range raises OverflowError saying so; anything else user code raises
// passes through unchanged (as the python target's converters do).
//
// Which numbers convert differs from the python target's converters
// (ksbind/python.h) on purpose, to match pybind11's casters: a bool has
// __index__, so an Integer argument takes True (and a Float one, converting);
// an object with only __int__ converts to Integer; and in pybind11's first
// overload pass (convert false) a Float argument takes only a float. The range
// each must fit, and its message, are shared (ksbind/number_ranges.h).
#pragma once

#include <pybind11/pybind11.h>

#include <ksbind/number_ranges.h>

#include <stdexcept>
#include <type_traits>

namespace ksbind {
namespace pybind {

// After a failed C API call on src: false (src does not convert) for a
// TypeError, else the exception Python has set, rethrown for pybind11's
// dispatcher to raise unchanged.
inline bool conversion_failed() {
    if (PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        return false;
    }
    throw pybind11::error_already_set();
}

template <class E>
bool load_number(pybind11::handle src, bool convert, E& out) {
    static_assert(std::is_arithmetic_v<E> && !std::is_same_v<E, bool>, "bool keeps pybind11's caster");
    PyObject* o = src.ptr();
    if constexpr (std::is_floating_point_v<E>) {
        if (PyFloat_Check(o)) {
            out = static_cast<E>(PyFloat_AS_DOUBLE(o));
            return true;
        }
        if (!convert || !PyNumber_Check(o)) return false;
        double d = PyFloat_AsDouble(o);  // may run __float__ / __index__
        if (d == -1.0 && PyErr_Occurred()) {
            if (PyLong_Check(o) && PyErr_ExceptionMatches(PyExc_OverflowError)) {
                PyErr_Clear();
                throw std::overflow_error(numbers::float_overflow);
            }
            return conversion_failed();
        }
        if (sizeof(E) == sizeof(float) && PyLong_Check(o) && numbers::exceeds_float(d))
            throw std::overflow_error(numbers::float_overflow);
        out = static_cast<E>(d);
        return true;
    } else {
        if (PyFloat_Check(o)) return false;
        if (!PyIndex_Check(o)) {
            if (!convert || !PyNumber_Check(o)) return false;
            // pybind11 converts objects with __int__ only when converting
            pybind11::object as_int = pybind11::reinterpret_steal<pybind11::object>(PyNumber_Long(o));
            if (!as_int) return conversion_failed();
            return load_number(as_int, false, out);
        }
        pybind11::object index = pybind11::reinterpret_steal<pybind11::object>(PyNumber_Index(o));  // may run __index__
        if (!index) return conversion_failed();
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
        if (v == -1 && PyErr_Occurred()) return conversion_failed();
        if (numbers::exceeds_integer<E>(v, overflow))
            throw std::overflow_error(sizeof(E) == 4 ? numbers::integer_overflow : "int out of range");
        out = static_cast<E>(v);
        return true;
    }
}

}  // namespace pybind
}  // namespace ksbind
