// Converters between plain Python values and ks values (the python target;
// the torch target reuses them for non-tensor values).
//
//   from_py<T>(alloc, handle, "name") -> T   (tensors are copied into the arena)
//   to_py(value) -> pybind11::object          (tensors become nested lists)
//
// Float: float or int (not bool, not str). Integer: int (or anything with
// __index__), not bool, must fit in 32 bits. Bool: bool only. String: str.
// Tuple: a tuple or list of exactly the right length. Tensor N T: nested
// lists/tuples (or any sequence, e.g. a numpy array), N levels deep and
// rectangular; elements that are themselves tensors may differ in size
// (ragged), as ks allows. Wrong values raise TypeError/ValueError naming the
// argument and the position inside it, e.g. "x[2][0]".
#pragma once

#include <pybind11/pybind11.h>

#include <climits>
#include <new>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <knossos.h>
#include <ksbind/entry_points.h>  // create_tensor (it includes this file at its end too)

namespace ksbind {
namespace python {

namespace py = pybind11;

template <class T>
struct tag {};

inline std::string type_name(py::handle h) { return Py_TYPE(h.ptr())->tp_name; }

[[noreturn]] inline void type_error(const std::string& where, const char* expected, py::handle h) {
    throw py::type_error("argument '" + where + "': expected " + expected + ", got " + type_name(h));
}

[[noreturn]] inline void value_error(const std::string& where, const std::string& message) {
    throw py::value_error("argument '" + where + "': " + message);
}

inline bool is_text(py::handle h) { return PyUnicode_Check(h.ptr()) || PyBytes_Check(h.ptr()); }

// ------------------------------------------------------------ scalars

inline ks::Float convert(ks::allocator*, py::handle h, const std::string& where, tag<ks::Float>) {
    PyObject* o = h.ptr();
    if (PyFloat_Check(o)) return static_cast<ks::Float>(PyFloat_AS_DOUBLE(o));
    if (PyBool_Check(o) || is_text(h) || o == Py_None) type_error(where, "a float", h);
    if (PyLong_Check(o) || PyNumber_Check(o)) {
        double d = PyFloat_AsDouble(o);
        if (d == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            type_error(where, "a float", h);
        }
        return static_cast<ks::Float>(d);
    }
    type_error(where, "a float", h);
}

inline ks::Integer convert(ks::allocator*, py::handle h, const std::string& where, tag<ks::Integer>) {
    PyObject* o = h.ptr();
    if (PyBool_Check(o) || PyFloat_Check(o) || !PyIndex_Check(o)) type_error(where, "an int", h);
    PyObject* index = PyNumber_Index(o);
    if (!index) {
        PyErr_Clear();
        type_error(where, "an int", h);
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(index, &overflow);
    Py_DECREF(index);
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        type_error(where, "an int", h);
    }
    if (overflow || v < INT_MIN || v > INT_MAX)
        value_error(where, "integer out of range for ks Integer (32-bit)");
    return static_cast<ks::Integer>(v);
}

inline ks::Bool convert(ks::allocator*, py::handle h, const std::string& where, tag<ks::Bool>) {
    if (!PyBool_Check(h.ptr())) type_error(where, "a bool", h);
    return h.ptr() == Py_True;
}

inline ks::String convert(ks::allocator*, py::handle h, const std::string& where, tag<ks::String>) {
    if (!PyUnicode_Check(h.ptr())) type_error(where, "a str", h);
    Py_ssize_t size = 0;
    const char* data = PyUnicode_AsUTF8AndSize(h.ptr(), &size);
    if (!data) {
        PyErr_Clear();
        value_error(where, "string is not encodable as UTF-8");
    }
    return ks::String(data, static_cast<size_t>(size));
}

// ------------------------------------------------------------ sequences

// Length of a sequence without materializing it (a huge range or array must
// fail on the arena, not by building a list of a billion objects first).
inline Py_ssize_t seq_length(py::handle h, const std::string& where, const char* expected) {
    if (is_text(h) || h.ptr() == Py_None || !PySequence_Check(h.ptr())) type_error(where, expected, h);
    Py_ssize_t n = PySequence_Size(h.ptr());
    if (n < 0) {
        PyErr_Clear();
        type_error(where, expected, h);
    }
    return n;
}

// A list/tuple (fast path) or any sequence that is not text, of exactly
// `length` items (checked before a lazy sequence is materialized); owns a reference.
class Seq {
public:
    Seq(py::handle h, const std::string& where, const char* expected, Py_ssize_t length) {
        if (is_text(h) || h.ptr() == Py_None || !PySequence_Check(h.ptr())) type_error(where, expected, h);
        Py_ssize_t n = PySequence_Size(h.ptr());
        if (n < 0) {
            PyErr_Clear();
            type_error(where, expected, h);
        }
        if (n != length)
            value_error(where, "expected " + std::to_string(length) + " elements, got " + std::to_string(n));
        fast_ = PySequence_Fast(h.ptr(), expected);
        if (!fast_) {
            PyErr_Clear();
            type_error(where, expected, h);
        }
        if (PySequence_Fast_GET_SIZE(fast_) != length) {  // a sequence whose items disagree with its len()
            Py_DECREF(fast_);
            fast_ = nullptr;
            value_error(where, "sequence changed size while being read");
        }
    }
    ~Seq() { Py_XDECREF(fast_); }
    Seq(const Seq&) = delete;
    Seq& operator=(const Seq&) = delete;
    Py_ssize_t size() const { return PySequence_Fast_GET_SIZE(fast_); }
    py::handle operator[](Py_ssize_t i) const { return PySequence_Fast_GET_ITEM(fast_, i); }

private:
    PyObject* fast_ = nullptr;
};

template <class T>
T from_py_at(ks::allocator* alloc, py::handle h, const std::string& where);

template <class Tup, size_t... I>
Tup convert_tuple(ks::allocator* alloc, const Seq& s, const std::string& where, std::index_sequence<I...>) {
    return ks::make_Tuple(
        from_py_at<std::decay_t<decltype(ks::get<I>(std::declval<Tup&>()))>>(alloc, s[I], where + "[" +
                                                                                std::to_string(I) + "]")...);
}

template <class... Ts>
ks::Tuple<Ts...> convert(ks::allocator* alloc, py::handle h, const std::string& where, tag<ks::Tuple<Ts...>>) {
    Py_ssize_t n = seq_length(h, where, "a tuple");
    if (n != static_cast<Py_ssize_t>(sizeof...(Ts)))
        value_error(where, "expected a tuple of " + std::to_string(sizeof...(Ts)) + " values, got " +
                               std::to_string(n));
    Seq s(h, where, "a tuple", n);
    return convert_tuple<ks::Tuple<Ts...>>(alloc, s, where, std::index_sequence_for<Ts...>());
}

// Shape of a rank-Dim nested sequence: sizes[0..Dim), read along element 0.
inline void tensor_shape(py::handle h, const std::string& where, int dim, int rank, int* sizes) {
    Py_ssize_t n = seq_length(h, where, rank == 1 ? "a list (ks Tensor 1)" : "a nested list (ks Tensor)");
    if (n > INT_MAX) value_error(where, "too many elements for a ks tensor");
    sizes[dim] = static_cast<int>(n);
    if (dim + 1 < rank) {
        if (n == 0) {
            for (int d = dim + 1; d < rank; ++d) sizes[d] = 0;
            return;
        }
        PyObject* first = PySequence_GetItem(h.ptr(), 0);
        if (!first) throw py::error_already_set();
        py::object keep = py::reinterpret_steal<py::object>(first);
        tensor_shape(keep, where + "[0]", dim + 1, rank, sizes);
    }
}

template <class T>
void fill_tensor(ks::allocator* alloc, py::handle h, const std::string& where, int dim, int rank,
                 const int* sizes, T*& out) {
    Py_ssize_t n = seq_length(h, where, "a list");
    if (n != sizes[dim])
        value_error(where, "ragged nested list: expected " + std::to_string(sizes[dim]) + " elements, got " +
                               std::to_string(n));
    Seq s(h, where, "a list", n);
    for (Py_ssize_t i = 0; i < s.size(); ++i) {
        std::string at = where + "[" + std::to_string(i) + "]";
        if (dim + 1 < rank) {
            fill_tensor(alloc, s[i], at, dim + 1, rank, sizes, out);
        } else {
            // Constructed in place: ksc's tensor::create leaves the arena memory raw.
            ::new (static_cast<void*>(out++)) T(from_py_at<T>(alloc, s[i], at));
        }
    }
}

template <class Index, size_t... I>
Index make_index(const int* sizes, std::index_sequence<I...>) {
    return ks::make_Tuple(sizes[I]...);
}

template <size_t Dim, class T>
ks::tensor<Dim, T> convert(ks::allocator* alloc, py::handle h, const std::string& where, tag<ks::tensor<Dim, T>>) {
    int sizes[Dim];
    tensor_shape(h, where, 0, Dim, sizes);
    long long total = 1;
    for (int d = 0; d < Dim; ++d) {
        total *= sizes[d];
        if (total > INT_MAX) value_error(where, "too many elements for a ks tensor");
    }
    typename ks::tensor<Dim, T>::index_type index;
    if constexpr (Dim == 1) {
        index = sizes[0];
    } else {
        index = make_index<typename ks::tensor<Dim, T>::index_type>(sizes, std::make_index_sequence<Dim>());
    }
    auto t = ksbind::create_tensor<ks::tensor<Dim, T>>(alloc, index);
    T* out = t.data();
    fill_tensor<T>(alloc, h, where, 0, Dim, sizes, out);
    return t;
}

template <class T>
T from_py_at(ks::allocator* alloc, py::handle h, const std::string& where) {
    return convert(alloc, h, where, tag<T>());
}

// Python -> ks: the entry points' converter for parameters. The common
// exact types of scalar arguments (float for Float, int for Integer, bool)
// are read inline without building the argument's name; anything else, and
// every error, takes the general path, so values and messages are the same.
template <class T>
T from_py(ks::allocator* alloc, py::handle h, const char* name) {
    PyObject* o = h.ptr();
    if constexpr (std::is_same_v<T, ks::Float>) {
        if (PyFloat_CheckExact(o)) return static_cast<ks::Float>(PyFloat_AS_DOUBLE(o));
    } else if constexpr (std::is_same_v<T, ks::Integer>) {
        if (PyLong_CheckExact(o)) {  // not bool (a subclass); PyNumber_Index would return o itself
            int overflow = 0;
            long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
            if (!overflow && v >= INT_MIN && v <= INT_MAX) return static_cast<ks::Integer>(v);
        }
    } else if constexpr (std::is_same_v<T, ks::Bool>) {
        if (PyBool_Check(o)) return o == Py_True;
    }
    return from_py_at<T>(alloc, h, std::string(name));
}

// The arena guard of a python-target call whose arguments hold no tensor and
// whose result is a scalar or string (see entry_points.cpp.j2): its arguments
// are converted before the guard, because they never touch the arena and
// converting them may run Python code (__index__, a sequence's __getitem__),
// during which another thread may take the GIL. What is left under the guard
// (the ks call, and making one float/int/bool/str) runs no Python code, so,
// like the ks target's ArenaLock, the guard takes the arena mutex only when
// the call releases the GIL or another entry point holds the mutex. It still
// resets the arena when the call ends (ks code may allocate temporaries).
class ScalarCallScope : public ArenaLock {
public:
    explicit ScalarCallScope(ks::allocator& alloc, bool release_gil) : ArenaLock(alloc, release_gil) {}
    ~ScalarCallScope() { alloc_.reset(mark_); }
};

// ------------------------------------------------------------ ks -> Python

inline py::object to_py(ks::Float v) { return py::float_(static_cast<double>(v)); }
inline py::object to_py(ks::Integer v) { return py::int_(v); }
inline py::object to_py(ks::Bool v) { return py::bool_(v); }
inline py::object to_py(const ks::String& v) {
    PyObject* s = PyUnicode_DecodeUTF8(v.data(), static_cast<Py_ssize_t>(v.size()), "replace");
    if (!s) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(s);
}

template <class... Ts>
py::object to_py(const ks::Tuple<Ts...>& t);
template <size_t Dim, class T>
py::object to_py(const ks::tensor<Dim, T>& t);

template <class Tup, size_t... I>
py::object tuple_to_py(const Tup& t, std::index_sequence<I...>) {
    py::tuple out(sizeof...(I));
    ((out[I] = to_py(ks::get<I>(t))), ...);
    return std::move(out);
}

template <class... Ts>
py::object to_py(const ks::Tuple<Ts...>& t) {
    return tuple_to_py(t, std::index_sequence_for<Ts...>());
}

template <class T>
py::object nested_list(const T* data, const int* sizes, int dim, int rank, long long stride) {
    py::list out(sizes[dim]);
    long long inner = stride / (sizes[dim] ? sizes[dim] : 1);
    for (int i = 0; i < sizes[dim]; ++i) {
        if (dim + 1 < rank) {
            out[i] = nested_list(data + i * inner, sizes, dim + 1, rank, inner);
        } else {
            out[i] = to_py(data[i]);
        }
    }
    return std::move(out);
}

template <class Size, size_t... I>
void store_sizes(const Size& size, int* sizes, std::index_sequence<I...>) {
    ((sizes[I] = ks::get<I>(size)), ...);
}

template <size_t Dim, class T>
py::object to_py(const ks::tensor<Dim, T>& t) {
    int sizes[Dim];
    if constexpr (Dim == 1) {
        sizes[0] = t.size();
    } else {
        store_sizes(t.size(), sizes, std::make_index_sequence<Dim>());
    }
    long long total = 1;
    for (int d = 0; d < Dim; ++d) total *= sizes[d];
    return nested_list(t.data(), sizes, 0, Dim, total);
}

}  // namespace python
}  // namespace ksbind
