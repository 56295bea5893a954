// pybind11 support for ksbind modules: tensor classes for the ks target
// (declare_tensor_N<T>(m, "Tensor_N_Elem")), a type caster for ks::Tuple when
// the runtime's Tuple is not std::tuple (ksc's own runtime), and module setup.
//
// Tensor classes are views, never copies:
//  - made from any object exporting a C-contiguous buffer of the right element
//    type and rank (numpy arrays, memoryview, array.array, bytes for Bool...);
//    objects without the buffer protocol but with a zero-copy `.numpy()`
//    (CPU torch tensors not requiring grad) are viewed through it. The source
//    object is kept alive as long as the Tensor.
//  - readable as buffers: numpy.asarray(t), memoryview(t).
//  - entry points accept such buffers directly (implicit conversion).
// A tensor returned by an entry point views the module's arena: it stays
// valid until reset_allocator() (or set_arena_bytes()); copy it
// (numpy.array(t)) to keep it longer.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <climits>
#include <cstring>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <ksbind/entry_points.h>
#include <ksbind/python.h>  // tolist: python::to_py

namespace ksbind {
namespace pybind {

namespace py = pybind11;

// Buffer format characters for each ks element type.
template <class T>
struct element_format;
template <>
struct element_format<float> {
    static constexpr const char* name = "float32 (ks Float)";
    static bool matches(char c) { return c == 'f'; }
    static constexpr char code = 'f';
};
template <>
struct element_format<double> {
    static constexpr const char* name = "float64 (ks Float)";
    static bool matches(char c) { return c == 'd'; }
    static constexpr char code = 'd';
};
template <>
struct element_format<int> {
    static constexpr const char* name = "int32 (ks Integer)";
    static bool matches(char c) { return c == 'i' || (sizeof(long) == 4 && c == 'l'); }
    static constexpr char code = 'i';
};
template <>
struct element_format<long long> {
    static constexpr const char* name = "int64 (ks Integer)";
    static bool matches(char c) { return c == 'q' || (sizeof(long) == 8 && c == 'l'); }
    static constexpr char code = 'q';
};
template <>
struct element_format<bool> {
    static constexpr const char* name = "bool (ks Bool)";
    static bool matches(char c) { return c == '?'; }
    static constexpr char code = '?';
};

// The single type character of a native-order struct format ("f", "<f", "=f").
inline char format_char(const std::string& format) {
    std::string f = format;
    if (!f.empty() && (f[0] == '@' || f[0] == '=' || f[0] == '<')) f = f.substr(1);
    return f.size() == 1 ? f[0] : '\0';
}

template <size_t Dim>
typename ks::tensor_dimension<Dim>::index_type make_size(const std::vector<py::ssize_t>& shape);

template <class Index, size_t... I>
Index tuple_from(const std::vector<py::ssize_t>& shape, std::index_sequence<I...>) {
    return ks::make_Tuple(static_cast<int>(shape[I])...);
}

template <size_t Dim>
auto index_of(const std::vector<py::ssize_t>& shape) {
    using Index = typename ks::tensor<Dim, float>::index_type;
    if constexpr (Dim == 1) {
        return static_cast<int>(shape[0]);
    } else {
        return tuple_from<Index>(shape, std::make_index_sequence<Dim>());
    }
}

template <size_t Dim, class Index, size_t... I>
std::vector<py::ssize_t> shape_of_impl(const Index& size, std::index_sequence<I...>) {
    return {static_cast<py::ssize_t>(ks::get<I>(size))...};
}

template <size_t Dim, class T>
std::vector<py::ssize_t> shape_of(const ks::tensor<Dim, T>& t) {
    if constexpr (Dim == 1) {
        return {static_cast<py::ssize_t>(t.size())};
    } else {
        return shape_of_impl<Dim>(t.size(), std::make_index_sequence<Dim>());
    }
}

// A ks::tensor viewing a buffer's memory; errors name the class.
template <size_t Dim, class T>
ks::tensor<Dim, T> tensor_from_buffer(const py::buffer_info& info, const std::string& cls) {
    using F = element_format<T>;
    if (info.ndim != Dim)
        throw py::value_error(cls + ": expected a " + std::to_string(Dim) + "-dimensional buffer, got " +
                              std::to_string(info.ndim) + " dimensions");
    if (!F::matches(format_char(info.format)) || info.itemsize != static_cast<py::ssize_t>(sizeof(T)))
        throw py::type_error(cls + ": expected elements of type " + F::name + ", got buffer format '" +
                             info.format + "' (" + std::to_string(info.itemsize) + " bytes each)");
    long long total = 1;
    py::ssize_t expected_stride = static_cast<py::ssize_t>(sizeof(T));
    for (int d = Dim - 1; d >= 0; --d) {
        if (info.shape[d] < 0 || info.shape[d] > INT_MAX)
            throw py::value_error(cls + ": dimension too large for a ks tensor");
        if (info.shape[d] > 1 && info.strides[d] != expected_stride)
            throw py::value_error(cls + ": buffer must be C-contiguous (use numpy.ascontiguousarray)");
        expected_stride *= info.shape[d];
        total *= info.shape[d];
        if (total > INT_MAX) throw py::value_error(cls + ": too many elements for a ks tensor");
    }
    return ks::tensor<Dim, T>(index_of<Dim>(info.shape), static_cast<T*>(info.ptr));
}

// The buffer to view for an object: its own, or its zero-copy .numpy() (torch).
inline py::buffer_info request_buffer(py::handle obj, py::object& keep, const std::string& cls) {
    if (PyObject_CheckBuffer(obj.ptr())) return py::reinterpret_borrow<py::buffer>(obj).request();
    if (py::hasattr(obj, "numpy") && py::hasattr(obj, "__dlpack__")) {
        try {
            keep = obj.attr("numpy")();
        } catch (py::error_already_set& e) {
            throw py::type_error(cls + ": cannot view " + std::string(Py_TYPE(obj.ptr())->tp_name) +
                                 " without copying: " + e.what());
        }
        if (PyObject_CheckBuffer(keep.ptr())) return py::reinterpret_borrow<py::buffer>(keep).request();
    }
    throw py::type_error(cls + ": expected an object supporting the buffer protocol (e.g. a numpy array), got " +
                         std::string(Py_TYPE(obj.ptr())->tp_name));
}

template <size_t Dim, class T>
void declare_tensor(py::module_& m, const char* name) {
    using Tensor = ks::tensor<Dim, T>;
    const std::string cls = name;
    py::class_<Tensor> c(m, name, py::buffer_protocol(), py::module_local(),
                         ("A ks::tensor<" + std::to_string(Dim) + ", " + element_format<T>::name +
                          "> viewing memory it does not own (a buffer, or the module's arena).").c_str());
    c.def(py::init([cls](py::object obj) {
              py::object keep;
              return tensor_from_buffer<Dim, T>(request_buffer(obj, keep, cls), cls);
          }),
          py::arg("buffer"), py::keep_alive<1, 2>());
    c.def_buffer([](Tensor& t) -> py::buffer_info {
        std::vector<py::ssize_t> shape = shape_of(t);
        std::vector<py::ssize_t> strides(Dim);
        py::ssize_t stride = sizeof(T);
        for (int d = Dim - 1; d >= 0; --d) {
            strides[d] = stride;
            stride *= shape[d];
        }
        return py::buffer_info(t.data(), sizeof(T), std::string(1, element_format<T>::code), Dim, shape, strides);
    });
    c.def_property_readonly("shape", [](const Tensor& t) {
        std::vector<py::ssize_t> s = shape_of(t);
        py::tuple out(s.size());
        for (size_t i = 0; i < s.size(); ++i) out[i] = py::int_(s[i]);
        return out;
    });
    c.def("size", [](const Tensor& t) { return py::cast(t.size()); }, "The ks size: an int, or a tuple of ints.");
    c.def("num_elements", [](const Tensor& t) { return t.num_elements(); });
    c.def("__len__", [](const Tensor& t) { return shape_of(t)[0]; });
    c.def("__getitem__", [cls](const Tensor& t, py::ssize_t i) {
        // Flat (row-major) element i; negative indices count from the end.
        py::ssize_t n = t.num_elements();
        if (i < 0) i += n;
        if (i < 0 || i >= n) throw py::index_error(cls + ": index out of range");
        return t.data()[i];
    });
    c.def("tolist", [](const Tensor& t) {
        try {
            return py::reinterpret_steal<py::object>(python::to_py(t).release());
        } catch (python::error& e) {
            e.restore();
            throw py::error_already_set();
        }
    }, "The elements as nested lists (a copy).");
    c.def("__repr__", [cls](const Tensor& t) {
        std::ostringstream os;
        os << "<" << cls << " " << ksbind::logged(t) << ">";
        return os.str();
    });
    py::implicitly_convertible<py::buffer, Tensor>();
}

}  // namespace pybind
}  // namespace ksbind

// The seed's spellings.
template <class T>
void declare_tensor_1(pybind11::module_& m, const char* name) { ksbind::pybind::declare_tensor<1, T>(m, name); }
template <class T>
void declare_tensor_2(pybind11::module_& m, const char* name) { ksbind::pybind::declare_tensor<2, T>(m, name); }
template <class T>
void declare_tensor_3(pybind11::module_& m, const char* name) { ksbind::pybind::declare_tensor<3, T>(m, name); }
template <class T>
void declare_tensor_4(pybind11::module_& m, const char* name) { ksbind::pybind::declare_tensor<4, T>(m, name); }
template <class T>
void declare_tensor_5(pybind11::module_& m, const char* name) { ksbind::pybind::declare_tensor<5, T>(m, name); }
template <class T>
void declare_tensor_6(pybind11::module_& m, const char* name) { ksbind::pybind::declare_tensor<6, T>(m, name); }

// ------------------------------------------------------------ ks::Tuple caster

// pybind11 already converts std::tuple (ksbind's bundled ks::Tuple). ksc's own
// runtime has a ks::Tuple class of its own: convert it through std::tuple.
namespace pybind11 {
namespace detail {

template <class... Ts>
class type_caster<ks::Tuple<Ts...>, std::enable_if_t<!ksbind::detail::is_std_tuple<ks::Tuple<Ts...>>::value>> {
    using Tup = ks::Tuple<Ts...>;
    using Std = std::tuple<Ts...>;
    make_caster<Std> inner;

    template <size_t... I>
    static Std to_std(const Tup& t, std::index_sequence<I...>) {
        return Std(ks::get<I>(t)...);
    }
    template <size_t... I>
    static Tup from_std(Std&& s, std::index_sequence<I...>) {
        return ks::make_Tuple(std::get<I>(std::move(s))...);
    }

public:
    PYBIND11_TYPE_CASTER(Tup, const_name("Tuple[") + concat(make_caster<Ts>::name...) + const_name("]"));

    bool load(handle src, bool convert) {
        if (!inner.load(src, convert)) return false;
        value = from_std(cast_op<Std&&>(std::move(inner)), std::index_sequence_for<Ts...>());
        return true;
    }
    static handle cast(const Tup& src, return_value_policy policy, handle parent) {
        return make_caster<Std>::cast(to_std(src, std::index_sequence_for<Ts...>()), policy, parent);
    }
};

}  // namespace detail
}  // namespace pybind11

// ------------------------------------------------------------ short bad-call messages

// pybind11's TypeError for a call whose arguments fit no signature ends with
// "Invoked with: " and the repr() of every argument: all of a big list or
// array.array, pages of numbers. An entry point's function is given a
// method that calls pybind11's dispatcher and, when that raises such a
// TypeError, keeps its signatures and replaces the reprs by each argument's
// type and size (summary). Nothing changes for a call that succeeds but one
// pointer test.
namespace ksbind {
namespace pybind {
namespace bad_calls {

// One argument for a message: its type and its shape, length or short repr, never its contents.
inline std::string summary(PyObject* o) {
    std::string type = Py_TYPE(o)->tp_name;
    if (PyFloat_Check(o) || PyLong_Check(o) || o == Py_None || (PyUnicode_Check(o) && PyUnicode_GetLength(o) <= 40)) {
        PyObject* r = PyObject_Repr(o);
        const char* text = r ? PyUnicode_AsUTF8(r) : nullptr;
        std::string out = text ? std::string(text) : type;
        Py_XDECREF(r);
        PyErr_Clear();
        return out;
    }
    if (PyObject_CheckBuffer(o)) {
        Py_buffer view;
        if (PyObject_GetBuffer(o, &view, PyBUF_FORMAT | PyBUF_STRIDES) == 0) {
            std::string out = type + " of '" + (view.format ? view.format : "B") + "', shape (";
            for (int d = 0; d < view.ndim; ++d) out += (d ? ", " : "") + std::to_string(view.shape[d]);
            out += view.ndim == 1 ? ",)" : ")";
            PyBuffer_Release(&view);
            return out;
        }
        PyErr_Clear();
    }
    PyObject* shape = PyObject_HasAttrString(o, "shape") ? PyObject_GetAttrString(o, "shape") : nullptr;
    if (shape) {
        PyObject* r = PyObject_Str(shape);
        const char* text = r ? PyUnicode_AsUTF8(r) : nullptr;
        std::string out = type + (text ? std::string(" of shape ") + text : std::string());
        Py_XDECREF(r);
        Py_DECREF(shape);
        PyErr_Clear();
        return out;
    }
    PyErr_Clear();
    const Py_ssize_t n = PySequence_Check(o) ? PySequence_Size(o) : -1;
    PyErr_Clear();
    return n >= 0 ? type + " of length " + std::to_string(n) : type;
}

// The TypeError being raised, if it is pybind11's for arguments that fit no
// signature: the same message with the arguments summarised.
inline void shorten(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
    if (!PyErr_ExceptionMatches(PyExc_TypeError)) return;
#if PY_VERSION_HEX >= 0x030C0000
    PyObject* value = PyErr_GetRaisedException();
#else
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
#endif
    PyObject* str = value ? PyObject_Str(value) : nullptr;
    const char* text = str ? PyUnicode_AsUTF8(str) : nullptr;
    const char* invoked = text ? std::strstr(text, "\nInvoked with: ") : nullptr;
    if (!invoked || !std::strstr(text, "(): incompatible function arguments")) {
        Py_XDECREF(str);
        PyErr_Clear();
#if PY_VERSION_HEX >= 0x030C0000
        PyErr_SetRaisedException(value);
#else
        PyErr_Restore(type, value, traceback);
#endif
        return;
    }
    std::string m(text, static_cast<size_t>(invoked - text));
    m += "\nInvoked with: ";
    const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nargs + nkw; ++i) {
        if (i) m += ", ";
        if (i >= nargs) {
            const char* key = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, i - nargs));
            m += std::string(key ? key : "?") + "=";
        }
        m += summary(args[i]);
    }
    if (nargs + nkw == 0) m += "no arguments";
    Py_XDECREF(str);
#if PY_VERSION_HEX < 0x030C0000
    Py_XDECREF(type);
    Py_XDECREF(traceback);
#endif
    Py_XDECREF(value);
    PyErr_SetString(PyExc_TypeError, m.c_str());
}

using Fast = PyObject* (*)(PyObject*, PyObject* const*, Py_ssize_t, PyObject*);
KSBIND_HIDDEN inline Fast dispatcher = nullptr;  // pybind11's, the same for every function of a module

inline PyObject* call(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
    PyObject* result = dispatcher(self, args, nargs, kwnames);
    if (!result) shorten(args, PyVectorcall_NARGS(nargs), kwnames);
    return result;
}

// Give fn (an entry point's pybind11 function) the method above. Only for
// pybind11's vectorcall functions (pybind11 3; an older pybind11 keeps its message).
inline void install(const py::object& fn) {
    if (!PyCFunction_Check(fn.ptr())) return;
    PyMethodDef* def = reinterpret_cast<PyCFunctionObject*>(fn.ptr())->m_ml;
    if (!def || def->ml_flags != (METH_FASTCALL | METH_KEYWORDS)) return;
    Fast meth = reinterpret_cast<Fast>(reinterpret_cast<void (*)()>(def->ml_meth));
    if (meth == &call) return;
    if (dispatcher == nullptr) dispatcher = meth;
    if (meth != dispatcher) return;
    def->ml_meth = reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&call));
}

}  // namespace bad_calls
}  // namespace pybind
}  // namespace ksbind

// ------------------------------------------------------------ module setup

namespace ksbind {
// Module init: apply the config's arena size and logging (KSBIND_ARENA_BYTES
// wins over arena_bytes). A bad KSBIND_ARENA_BYTES fails the import with a
// clear message.
inline void configure_module(size_t arena_bytes, bool logging) {
    try {
        ks::entry_points::configure(arena_bytes, logging);
    } catch (const std::invalid_argument& e) {
        throw pybind11::value_error(e.what());
    }
}
}  // namespace ksbind
