// Converters between plain Python values and ks values (the python target),
// on Python's C API alone: no pybind11, so a python-target module's generated
// code compiles in about a second (pybind11 costs ~5 s in any unit that
// includes it; see docs/building.md).
//
//   from_py<T>(alloc, PyObject*, "name") -> T   (tensors are copied into the arena)
//   to_py(value) -> Object                       (a new reference; tensors become nested lists)
//
// Float: float or int (not bool, not str). Integer: int (or anything with
// __index__), not bool, must fit in 32 bits. Bool: bool only. String: str.
// (The pybind11 targets take bools and __int__ too, as pybind11 does:
// ksbind/pybind_numbers.h; the ranges and messages are shared:
// ksbind/number_ranges.h.)
// Tuple: a tuple or list of exactly the right length. Tensor N T: nested
// lists/tuples (or any sequence, e.g. a numpy array), N levels deep and
// rectangular; elements that are themselves tensors may differ in size
// (ragged), as ks allows. Wrong values raise TypeError/ValueError naming the
// argument and the position inside it, e.g. "x[2][0]".
//
// Errors are thrown as ksbind::python::error (a Python exception type and
// message, or an exception Python already raised); the module's methods
// (ksbind/python_module.h) turn it back into the Python exception.
//
// Compiles against the full C API (the ks target's pybind11 modules include
// it) and the limited API (Py_LIMITED_API, the python target: one .abi3.so
// for every CPython from the version it names; docs/packaging.md), where
// CPython's macros (PyFloat_AS_DOUBLE, PyTuple_GET_ITEM...) and type objects'
// fields are not available: the few places that differ use the helpers below.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <climits>
#include <exception>
#include <new>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <knossos.h>
#include <ksbind/call_arena.h>     // create_tensor, destroy_after_call
#include <ksbind/number_ranges.h>  // the ranges of Float and Integer (shared with ksbind/pybind_numbers.h)

// The C API version the code may use: the limited API's when building for it.
#ifdef Py_LIMITED_API
#define KSBIND_PY_API_VERSION Py_LIMITED_API
#else
#define KSBIND_PY_API_VERSION PY_VERSION_HEX
#endif

namespace ksbind {
namespace python {

// CPython's unchecked macros, or (limited API) the functions that check their
// argument: the same values for the objects ksbind passes (an exact float, a
// tuple or list it holds). Setting an item (set_tuple_item, set_list_item,
// below: each steals the item) can fail only under the limited API
// (PyTuple_SetItem refuses a tuple something else also references).
#ifdef Py_LIMITED_API
inline double float_value(PyObject* o) { return PyFloat_AsDouble(o); }
inline Py_ssize_t tuple_size(PyObject* o) { return PyTuple_Size(o); }
inline PyObject* tuple_item(PyObject* o, Py_ssize_t i) { return PyTuple_GetItem(o, i); }
inline Py_ssize_t list_size(PyObject* o) { return PyList_Size(o); }
#else
inline double float_value(PyObject* o) { return PyFloat_AS_DOUBLE(o); }
inline Py_ssize_t tuple_size(PyObject* o) { return PyTuple_GET_SIZE(o); }
inline PyObject* tuple_item(PyObject* o, Py_ssize_t i) { return PyTuple_GET_ITEM(o, i); }
inline Py_ssize_t list_size(PyObject* o) { return PyList_GET_SIZE(o); }
#endif

// An owned reference (a new reference, released when this goes out of scope).
class Object {
public:
    Object() = default;
    static Object steal(PyObject* o) { return Object(o); }
    Object(Object&& other) noexcept : ptr_(other.ptr_) { other.ptr_ = nullptr; }
    Object& operator=(Object&& other) noexcept {
        if (this != &other) {
            Py_XDECREF(ptr_);
            ptr_ = other.ptr_;
            other.ptr_ = nullptr;
        }
        return *this;
    }
    Object(const Object&) = delete;
    Object& operator=(const Object&) = delete;
    ~Object() { Py_XDECREF(ptr_); }
    PyObject* get() const { return ptr_; }
    PyObject* release() {
        PyObject* o = ptr_;
        ptr_ = nullptr;
        return o;
    }
    explicit operator bool() const { return ptr_ != nullptr; }

private:
    explicit Object(PyObject* o) : ptr_(o) {}
    PyObject* ptr_ = nullptr;
};

// A Python exception crossing C++ code: a type and message to raise, or (type
// null) the exception Python has already set, fetched here so that unwinding
// (which may run Py_DECREF) cannot disturb it.
class error : public std::exception {
public:
    error(PyObject* type, std::string message) : type_(type), message_(std::move(message)) {}
    // The exception Python has set (a SystemError if none is: a bug, said out loud).
    static error fetched() {
        error e(nullptr, "");
#if KSBIND_PY_API_VERSION >= 0x030C0000  // PyErr_Fetch is deprecated from 3.12
        e.pvalue_ = PyErr_GetRaisedException();
        if (e.pvalue_) e.ptype_ = Py_NewRef(reinterpret_cast<PyObject*>(Py_TYPE(e.pvalue_)));
#else
#pragma GCC diagnostic push  // deprecated in 3.12's headers, but this build runs on older CPythons too
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
        PyErr_Fetch(&e.ptype_, &e.pvalue_, &e.ptraceback_);
#pragma GCC diagnostic pop
#endif
        if (!e.ptype_) {
            e.type_ = PyExc_SystemError;
            e.message_ = "ksbind: a Python error was expected but none was set";
        }
        return e;
    }
    error(error&& o) noexcept
        : type_(o.type_), message_(std::move(o.message_)), ptype_(o.ptype_), pvalue_(o.pvalue_),
          ptraceback_(o.ptraceback_) {
        o.ptype_ = o.pvalue_ = o.ptraceback_ = nullptr;
    }
    error(const error&) = delete;
    error& operator=(const error&) = delete;
    ~error() override {
        Py_XDECREF(ptype_);
        Py_XDECREF(pvalue_);
        Py_XDECREF(ptraceback_);
    }
    const char* what() const noexcept override { return message_.c_str(); }
    // Raise it in Python (the caller then returns NULL to Python).
    void restore() {
        if (ptype_) {
#if KSBIND_PY_API_VERSION >= 0x030C0000
            PyErr_SetRaisedException(pvalue_);  // steals it
            Py_DECREF(ptype_);
#else
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
            PyErr_Restore(ptype_, pvalue_, ptraceback_);
#pragma GCC diagnostic pop
#endif
            ptype_ = pvalue_ = ptraceback_ = nullptr;
        } else {
            PyErr_SetString(type_, message_.c_str());
        }
    }

private:
    PyObject* type_;
    std::string message_;
    PyObject* ptype_ = nullptr;
    PyObject* pvalue_ = nullptr;
    PyObject* ptraceback_ = nullptr;
};

// A new reference from a C API call, or the error it raised.
inline Object checked(PyObject* o) {
    if (!o) throw error::fetched();
    return Object::steal(o);
}

#ifdef Py_LIMITED_API
inline void set_tuple_item(PyObject* tuple, Py_ssize_t i, PyObject* item) {
    if (PyTuple_SetItem(tuple, i, item) != 0) throw error::fetched();  // item already released
}
inline void set_list_item(PyObject* list, Py_ssize_t i, PyObject* item) {
    if (PyList_SetItem(list, i, item) != 0) throw error::fetched();
}
#else
inline void set_tuple_item(PyObject* tuple, Py_ssize_t i, PyObject* item) { PyTuple_SET_ITEM(tuple, i, item); }
inline void set_list_item(PyObject* list, Py_ssize_t i, PyObject* item) { PyList_SET_ITEM(list, i, item); }
#endif

template <class T>
struct tag {};

// What CPython's messages call h's type (its tp_name): "float", "numpy.ndarray",
// "MyClass". The limited API cannot read tp_name; it is rebuilt from the
// type's __module__ and __name__, as CPython made it: a class defined in
// Python by its name alone, a C type by "module.name" (builtins: the name).
// One difference: a C type made by PyType_FromSpec, which is named like a
// Python class here.
#ifdef Py_LIMITED_API
__attribute__((noinline, cold)) inline std::string type_name(PyObject* h) {
    PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(h));
    auto text = [type](const char* attribute) -> std::string {
        Object value = Object::steal(PyObject_GetAttrString(type, attribute));
        const char* utf8 = value && PyUnicode_Check(value.get()) ? PyUnicode_AsUTF8AndSize(value.get(), nullptr)
                                                                 : nullptr;
        std::string out = utf8 ? utf8 : "";
        if (!utf8) PyErr_Clear();
        return out;
    };
    std::string name = text("__name__");
    if (PyType_GetFlags(Py_TYPE(h)) & Py_TPFLAGS_HEAPTYPE) return name;
    std::string module = text("__module__");
    return module.empty() || module == "builtins" ? name : module + "." + name;
}
#else
inline std::string type_name(PyObject* h) { return Py_TYPE(h)->tp_name; }
#endif

// Where a value sits inside an argument: the argument's name, then an index
// per level ("x[2][0]"). Formatted only for an error message, so converting
// a long list builds no strings.
struct Where {
    const char* name = nullptr;  // the argument's name (the outermost level only)
    const Where* parent = nullptr;
    Py_ssize_t index = 0;
    // Element i of this value; valid while this Where is.
    Where at(Py_ssize_t i) const { return Where{nullptr, this, i}; }
    std::string text() const { return parent ? parent->text() + "[" + std::to_string(index) + "]" : std::string(name); }
};

// Error paths: out of line and cold, so each converter's code stays small
// (and compiles fast).
[[noreturn]] __attribute__((noinline, cold)) inline void type_error(const Where& where, const char* expected,
                                                                    PyObject* h) {
    throw error(PyExc_TypeError, "argument '" + where.text() + "': expected " + expected + ", got " + type_name(h));
}

[[noreturn]] __attribute__((noinline, cold)) inline void value_error(const Where& where, const std::string& message) {
    throw error(PyExc_ValueError, "argument '" + where.text() + "': " + message);
}

[[noreturn]] __attribute__((noinline, cold)) inline void overflow_error(const Where& where,
                                                                        const std::string& message) {
    throw error(PyExc_OverflowError, "argument '" + where.text() + "': " + message);
}

// A C API call on the user's value failed (Python code it ran may have raised
// anything). A TypeError means the value is not what the parameter takes: it
// becomes ours, naming the argument. Anything else (KeyboardInterrupt,
// MemoryError, KeyError, an OverflowError...) is the user's and passes
// through unchanged.
[[noreturn]] __attribute__((noinline, cold)) inline void conversion_failed(const Where& where, const char* expected,
                                                                           PyObject* h) {
    if (PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        type_error(where, expected, h);
    }
    throw error::fetched();
}

inline bool is_text(PyObject* h) { return PyUnicode_Check(h) || PyBytes_Check(h); }

// ------------------------------------------------------------ scalars

inline ks::Float convert(ks::allocator*, PyObject* h, const Where& where, tag<ks::Float>) {
    if (PyFloat_Check(h)) return static_cast<ks::Float>(float_value(h));
    if (PyBool_Check(h) || is_text(h) || h == Py_None) type_error(where, "a float", h);
    if (PyLong_Check(h)) {
        double d = PyLong_AsDouble(h);
        if (d == -1.0 && PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_OverflowError)) conversion_failed(where, "a float", h);
            PyErr_Clear();
            overflow_error(where, numbers::float_overflow);
        }
        if (numbers::exceeds_float(d)) overflow_error(where, numbers::float_overflow);
        return static_cast<ks::Float>(d);
    }
    if (PyNumber_Check(h)) {
        double d = PyFloat_AsDouble(h);  // may run __float__ / __index__
        if (d == -1.0 && PyErr_Occurred()) conversion_failed(where, "a float", h);
        return static_cast<ks::Float>(d);
    }
    type_error(where, "a float", h);
}

inline ks::Integer convert(ks::allocator*, PyObject* h, const Where& where, tag<ks::Integer>) {
    if (PyBool_Check(h) || PyFloat_Check(h) || !PyIndex_Check(h)) type_error(where, "an int", h);
    Object index = Object::steal(PyNumber_Index(h));  // may run __index__
    if (!index) conversion_failed(where, "an int", h);
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(index.get(), &overflow);
    if (v == -1 && PyErr_Occurred()) conversion_failed(where, "an int", h);
    if (numbers::exceeds_integer<ks::Integer>(v, overflow)) overflow_error(where, numbers::integer_overflow);
    return static_cast<ks::Integer>(v);
}

inline ks::Bool convert(ks::allocator*, PyObject* h, const Where& where, tag<ks::Bool>) {
    if (!PyBool_Check(h)) type_error(where, "a bool", h);
    return h == Py_True;
}

inline ks::String convert(ks::allocator*, PyObject* h, const Where& where, tag<ks::String>) {
    if (!PyUnicode_Check(h)) type_error(where, "a str", h);
    Py_ssize_t size = 0;
    const char* data = PyUnicode_AsUTF8AndSize(h, &size);
    if (!data) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeError)) throw error::fetched();
        PyErr_Clear();
        value_error(where, "string is not encodable as UTF-8");
    }
    return ks::String(data, static_cast<size_t>(size));
}

// ------------------------------------------------------------ sequences

inline bool is_sequence(PyObject* h) { return !is_text(h) && h != Py_None && PySequence_Check(h); }

// Length of a sequence without materializing it (a huge range or array must
// fail on the arena, not by building a list of a billion objects first).
// May run the sequence's __len__.
inline Py_ssize_t seq_length(PyObject* h, const Where& where, const char* expected) {
    if (!is_sequence(h)) type_error(where, expected, h);
    Py_ssize_t n = PySequence_Size(h);
    if (n < 0) conversion_failed(where, expected, h);
    return n;
}

// A sequence read once: a tuple holding owned references to its items. Python
// code that runs afterwards (an item's __float__, a __del__, another thread)
// may change or empty the sequence itself; the snapshot, and every item in
// it, stays as it was read. A list or tuple is copied without running any
// Python code. Any other sequence is read by index (its __getitem__ runs)
// only when its len() is the `length` the caller expects: a huge lazy
// sequence (range(10**9) for a pair) is refused before it is materialized.
// The caller checks size() against `length` (and reports its own message)
// before reading any item.
class Snapshot {
public:
    Snapshot(PyObject* h, const Where& where, const char* expected, Py_ssize_t length) {
        if (PyTuple_CheckExact(h)) {
            items_ = Object::steal(Py_NewRef(h));  // immutable: the tuple is its own snapshot
        } else if (PyList_Check(h)) {
            size_ = list_size(h);
            if (size_ != length) return;
            items_ = checked(PyList_AsTuple(h));
        } else {
            size_ = seq_length(h, where, expected);
            if (size_ != length) return;  // not materialized: the caller reports the size
            // Items 0..length-1 by index, as pybind11 reads a sequence: iterating
            // would not stop at len() for a sequence whose __getitem__ never ends.
            items_ = checked(PyTuple_New(length));
            for (Py_ssize_t i = 0; i < length; ++i) {
                PyObject* item = PySequence_GetItem(h, i);  // may run __getitem__
                if (!item) {
                    if (!PyErr_ExceptionMatches(PyExc_IndexError)) conversion_failed(where, expected, h);
                    PyErr_Clear();  // shorter than its len() said
                    size_ = i;
                    return;
                }
                set_tuple_item(items_.get(), i, item);  // steals it
            }
        }
        size_ = tuple_size(items_.get());
    }
    Py_ssize_t size() const { return size_; }
    PyObject* operator[](Py_ssize_t i) const { return tuple_item(items_.get(), i); }

private:
    Object items_;
    Py_ssize_t size_ = 0;
};

[[noreturn]] __attribute__((noinline, cold)) inline void changed_size(const Where& where, Py_ssize_t expected,
                                                                      Py_ssize_t got) {
    value_error(where, "expected " + std::to_string(expected) + " elements, got " + std::to_string(got) +
                           " (ragged, or changed while being read)");
}

template <class T>
T from_py_at(ks::allocator* alloc, PyObject* h, const Where& where);

template <class Tup, size_t... I>
Tup convert_tuple(ks::allocator* alloc, const Snapshot& s, const Where& where, std::index_sequence<I...>) {
    return ks::make_Tuple(
        from_py_at<std::decay_t<decltype(ks::get<I>(std::declval<Tup&>()))>>(alloc, s[I], where.at(I))...);
}

template <class... Ts>
ks::Tuple<Ts...> convert(ks::allocator* alloc, PyObject* h, const Where& where, tag<ks::Tuple<Ts...>>) {
    Snapshot s(h, where, "a tuple", static_cast<Py_ssize_t>(sizeof...(Ts)));
    if (s.size() != static_cast<Py_ssize_t>(sizeof...(Ts)))
        value_error(where, "expected a tuple of " + std::to_string(sizeof...(Ts)) + " values, got " +
                               std::to_string(s.size()));
    return convert_tuple<ks::Tuple<Ts...>>(alloc, s, where, std::index_sequence_for<Ts...>());
}

// Shape of a rank-Dim nested sequence: sizes[0..Dim), read along element 0
// (lengths only, nothing materialized: see seq_length). The elements are read
// afterwards, each sequence once (fill_tensor), and checked against it.
inline void tensor_shape(PyObject* h, const Where& where, int dim, int rank, int* sizes) {
    Py_ssize_t n = seq_length(h, where, rank == 1 ? "a list (ks Tensor 1)" : "a nested list (ks Tensor)");
    if (n > INT_MAX) value_error(where, "too many elements for a ks tensor");
    sizes[dim] = static_cast<int>(n);
    if (dim + 1 < rank) {
        if (n == 0) {
            for (int d = dim + 1; d < rank; ++d) sizes[d] = 0;
            return;
        }
        Object first = Object::steal(PySequence_GetItem(h, 0));
        if (!first) conversion_failed(where, "a nested list (ks Tensor)", h);
        tensor_shape(first.get(), where.at(0), dim + 1, rank, sizes);
    }
}

// Element values into out[0..product of sizes[dim..])), each level's sequence
// snapshotted once and checked against the shape, so no Python code an element
// runs can make this write past the tensor or read a freed item.
template <class T>
void fill_tensor(ks::allocator* alloc, PyObject* h, const Where& where, int dim, int rank, const int* sizes,
                 T*& out) {
    Snapshot s(h, where, rank == 1 ? "a list (ks Tensor 1)" : "a nested list (ks Tensor)", sizes[dim]);
    if (s.size() != sizes[dim]) changed_size(where, sizes[dim], s.size());
    for (Py_ssize_t i = 0; i < s.size(); ++i) {
        Where at = where.at(i);
        if (dim + 1 < rank) {
            fill_tensor(alloc, s[i], at, dim + 1, rank, sizes, out);
        } else {
            *out++ = from_py_at<T>(alloc, s[i], at);
        }
    }
}

template <class Index, size_t... I>
Index make_index(const int* sizes, std::index_sequence<I...>) {
    return ks::make_Tuple(sizes[I]...);
}

template <size_t Dim, class T>
ks::tensor<Dim, T> convert(ks::allocator* alloc, PyObject* h, const Where& where, tag<ks::tensor<Dim, T>>) {
    int sizes[Dim];
    tensor_shape(h, where, 0, Dim, sizes);
    long long total = 1;
    for (size_t d = 0; d < Dim; ++d) {
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
    if constexpr (!std::is_trivially_destructible_v<T>) {
        // Values with destructors (String...): every element constructed now
        // (ksc's tensor::create leaves the memory raw) and destroyed when the
        // call ends, also if a later element fails to convert; then assigned.
        for (long long i = 0; i < total; ++i) ::new (static_cast<void*>(out + i)) T();
        ksbind::destroy_after_call(out, static_cast<size_t>(total));
    } else if constexpr (!std::is_trivially_default_constructible_v<T>) {
        for (long long i = 0; i < total; ++i) ::new (static_cast<void*>(out + i)) T();
    }
    fill_tensor<T>(alloc, h, where, 0, Dim, sizes, out);
    return t;
}

template <class T>
T from_py_at(ks::allocator* alloc, PyObject* h, const Where& where) {
    return convert(alloc, h, where, tag<T>());
}

// Python -> ks: the entry points' converter for parameters. The common
// exact types of scalar arguments (float for Float, int for Integer, bool)
// are read inline without building the argument's name; anything else, and
// every error, takes the general path, so values and messages are the same.
template <class T>
T from_py(ks::allocator* alloc, PyObject* h, const char* name) {
    if constexpr (std::is_same_v<T, ks::Float>) {
        if (PyFloat_CheckExact(h)) return static_cast<ks::Float>(float_value(h));
    } else if constexpr (std::is_same_v<T, ks::Integer>) {
        if (PyLong_CheckExact(h)) {  // not bool (a subclass); PyNumber_Index would return h itself
            int overflow = 0;
            long long v = PyLong_AsLongLongAndOverflow(h, &overflow);
            if (!numbers::exceeds_integer<ks::Integer>(v, overflow)) return static_cast<ks::Integer>(v);
        }
    } else if constexpr (std::is_same_v<T, ks::Bool>) {
        if (PyBool_Check(h)) return h == Py_True;
    }
    return from_py_at<T>(alloc, h, Where{name});
}

// ------------------------------------------------------------ ks -> Python

inline Object to_py(ks::Float v) { return checked(PyFloat_FromDouble(static_cast<double>(v))); }
inline Object to_py(ks::Integer v) { return checked(PyLong_FromLong(v)); }
inline Object to_py(ks::Bool v) { return Object::steal(PyBool_FromLong(v)); }
inline Object to_py(const ks::String& v) {
    return checked(PyUnicode_DecodeUTF8(v.data(), static_cast<Py_ssize_t>(v.size()), "replace"));
}
// A result the entry point already made (a tuple, a list...).
inline Object to_py(Object&& o) { return std::move(o); }

template <class... Ts>
Object to_py(const ks::Tuple<Ts...>& t);
template <size_t Dim, class T>
Object to_py(const ks::tensor<Dim, T>& t);

template <class Tup, size_t... I>
Object tuple_to_py(const Tup& t, std::index_sequence<I...>) {
    Object out = checked(PyTuple_New(sizeof...(I)));
    // set_tuple_item steals each item's reference.
    (set_tuple_item(out.get(), I, to_py(ks::get<I>(t)).release()), ...);
    return out;
}

template <class... Ts>
Object to_py(const ks::Tuple<Ts...>& t) {
    return tuple_to_py(t, std::index_sequence_for<Ts...>());
}

template <class T>
Object nested_list(const T* data, const int* sizes, int dim, int rank, long long stride) {
    Object out = checked(PyList_New(sizes[dim]));
    long long inner = stride / (sizes[dim] ? sizes[dim] : 1);
    for (int i = 0; i < sizes[dim]; ++i) {
        // set_list_item steals the item's reference.
        if (dim + 1 < rank) {
            set_list_item(out.get(), i, nested_list(data + i * inner, sizes, dim + 1, rank, inner).release());
        } else {
            set_list_item(out.get(), i, to_py(data[i]).release());
        }
    }
    return out;
}

template <class Size, size_t... I>
void store_sizes(const Size& size, int* sizes, std::index_sequence<I...>) {
    ((sizes[I] = ks::get<I>(size)), ...);
}

template <size_t Dim, class T>
Object to_py(const ks::tensor<Dim, T>& t) {
    // A result's values with destructors (String...) that this call's ks code
    // made in the arena are destroyed when the call ends (registered first,
    // so also when making the list fails).
    ksbind::destroy_after_call(t.data(), static_cast<size_t>(t.num_elements()));
    int sizes[Dim];
    if constexpr (Dim == 1) {
        sizes[0] = t.size();
    } else {
        store_sizes(t.size(), sizes, std::make_index_sequence<Dim>());
    }
    long long total = 1;
    for (size_t d = 0; d < Dim; ++d) total *= sizes[d];
    return nested_list(t.data(), sizes, 0, Dim, total);
}

}  // namespace python
}  // namespace ksbind
