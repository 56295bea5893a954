// The python target's module on Python's C API: each entry point becomes a
// METH_FASTCALL | METH_KEYWORDS method (ksbind::python::method<F, Sig>), and
// the module is created in two phases (PyModuleDef_Init), so its name comes
// from the import: the same generated code serves every module and version
// (see ksbind/backend/compile.py, PLACEHOLDER).
//
// Why not pybind11 here: including pybind11 costs ~5 s of compile time in any
// unit that does (3.1, -O2), most of a python-target build; the python target
// takes and returns plain Python objects, so a small dispatcher is all it
// needs. The behaviour follows pybind11's (the ks target keeps it): keyword or
// positional arguments, a TypeError naming the signature on a bad call, C++
// exceptions mapped to the same Python exceptions.
#pragma once

#include <ksbind/python.h>

#include <cxxabi.h>  // abi::__forced_unwind
#include <cstdint>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace ksbind {
namespace python {

// ------------------------------------------------------------ exceptions

// Raise the C++ exception being handled as a Python exception, as pybind11
// maps them (bad_alloc -> MemoryError, invalid_argument -> ValueError ...).
__attribute__((noinline, cold)) inline void raise_current_exception() {
    try {
        throw;
    } catch (error& e) {
        e.restore();
    } catch (const std::bad_alloc& e) {
        PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (const std::domain_error& e) {
        PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const std::invalid_argument& e) {
        PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const std::length_error& e) {
        PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const std::out_of_range& e) {
        PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const std::range_error& e) {
        PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const std::overflow_error& e) {
        PyErr_SetString(PyExc_OverflowError, e.what());
    } catch (const std::exception& e) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (...) {
        PyErr_SetString(PyExc_RuntimeError, "ksbind: unknown C++ exception");
    }
}

// ------------------------------------------------------------ arguments

// A method's names: Sig::name, Sig::params (parameter names, nullptr-ended)
// and Sig::signature ("f(x: float) -> float", for error messages).
struct Names {
    const char* name;
    const char* const* params;
    Py_ssize_t count;
    const char* signature;
};

template <class Sig>
constexpr Py_ssize_t arity() {
    Py_ssize_t n = 0;
    while (Sig::params[n]) ++n;
    return n;
}

[[noreturn]] __attribute__((noinline, cold)) inline void bad_call(const Names& s, const std::string& problem) {
    throw error(PyExc_TypeError,
                std::string(s.name) + "(): incompatible function arguments: " + problem + ". Expected " + s.signature);
}

// args (positional then keyword values, as METH_FASTCALL | METH_KEYWORDS
// passes them) sorted into one slot per parameter; borrowed references. Not a
// template: one copy serves every method of the module.
__attribute__((noinline)) inline void sort_arguments(const Names& s, PyObject* const* args, Py_ssize_t nargs,
                                                     PyObject* kwnames, PyObject** slots) {
    const Py_ssize_t n = s.count;
    if (nargs > n) {
        std::string given;  // the types received, never the values (a tensor's list may be long)
        for (Py_ssize_t i = 0; i < nargs; ++i) given += std::string(i ? ", " : "") + type_name(args[i]);
        bad_call(s, "takes " + std::to_string(n) + " argument" + (n == 1 ? "" : "s") + ", got " +
                        std::to_string(nargs) + " (" + given + ")");
    }
    for (Py_ssize_t i = 0; i < n; ++i) slots[i] = i < nargs ? args[i] : nullptr;
    Py_ssize_t nkw = kwnames ? tuple_size(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; ++k) {
        PyObject* key = tuple_item(kwnames, k);
        Py_ssize_t i = 0;
        while (i < n && PyUnicode_CompareWithASCIIString(key, s.params[i]) != 0) ++i;
        if (i == n) {
            Object text = Object::steal(PyObject_Str(key));
            const char* name = text ? PyUnicode_AsUTF8AndSize(text.get(), nullptr) : nullptr;
            if (!name) PyErr_Clear();
            bad_call(s, std::string("unexpected keyword argument '") + (name ? name : "?") + "'");
        }
        if (slots[i]) bad_call(s, std::string("multiple values for argument '") + s.params[i] + "'");
        slots[i] = args[nargs + k];
    }
    for (Py_ssize_t i = 0; i < n; ++i)
        if (!slots[i]) bad_call(s, std::string("missing argument '") + s.params[i] + "'");
}

// One argument of a support function (the entry points take PyObject*).
template <class T>
T argument(PyObject* o, const char* name);

template <>
inline PyObject* argument<PyObject*>(PyObject* o, const char*) { return o; }

template <>
inline bool argument<bool>(PyObject* o, const char* name) {
    if (!PyBool_Check(o)) type_error(Where{name}, "a bool", o);
    return o == Py_True;
}

template <>
inline size_t argument<size_t>(PyObject* o, const char* name) {
    if (!PyLong_Check(o) || PyBool_Check(o)) type_error(Where{name}, "an int", o);
    size_t v = PyLong_AsSize_t(o);
    if (v == static_cast<size_t>(-1) && PyErr_Occurred()) {
        PyErr_Clear();
        value_error(Where{name}, "expected a non-negative int that fits in size_t");
    }
    return v;
}

// ------------------------------------------------------------ results

inline Object result(size_t v) { return checked(PyLong_FromSize_t(v)); }
template <class T>
Object result(T&& v) {
    return to_py(std::forward<T>(v));
}

// ------------------------------------------------------------ methods

template <class Sig, class R, class... A, size_t... I>
PyObject* invoke(R (*f)(A...), PyObject* const* slots, std::index_sequence<I...>) {
    if constexpr (std::is_void_v<R>) {
        f(argument<A>(slots[I], Sig::params[I])...);
        Py_RETURN_NONE;
    } else {
        return result(f(argument<A>(slots[I], Sig::params[I])...)).release();
    }
}

template <class R, class... A>
constexpr size_t parameter_count(R (*)(A...)) {
    return sizeof...(A);
}

// The METH_FASTCALL | METH_KEYWORDS function calling F with its arguments
// sorted by name; C++ exceptions become Python exceptions.
template <auto F, class Sig>
PyObject* method(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
    constexpr size_t n = parameter_count(F);
    static_assert(n == static_cast<size_t>(arity<Sig>()), "ksbind: parameter names do not match the function");
    static constexpr Names names{Sig::name, Sig::params, arity<Sig>(), Sig::signature};
    try {
        PyObject* slots[n == 0 ? 1 : n];
        sort_arguments(names, args, nargs, kwnames, slots);
        return invoke<Sig>(F, slots, std::make_index_sequence<n>());
    } catch (abi::__forced_unwind&) {
        throw;  // a thread ended by pthread_exit (interpreter shutdown) must unwind, not become an error
    } catch (...) {
        raise_current_exception();
        return nullptr;
    }
}

// The PyMethodDef of method<F, Sig>, with doc as its docstring.
template <auto F, class Sig>
inline PyMethodDef method_def(const char* doc) {
    return {Sig::name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(&method<F, Sig>)),
            METH_FASTCALL | METH_KEYWORDS, doc};
}

// ------------------------------------------------------------ the module

// Every module's allocator and logging functions are registered by the generated module from
// ksbind/support.py's table, with method_def over ksbind::arenas (ksbind/call_arena.h): each speaks
// of the calling thread's arena.

// Module exec (the second phase of init): apply the config's arena size and
// logging (KSBIND_ARENA_BYTES wins over arena_bytes), once per process: a
// second module object (importlib, a subinterpreter) shares the first's
// settings and leaves them as they are. A bad KSBIND_ARENA_BYTES fails the
// import with a clear message.
inline int configure_module(size_t arena_bytes, bool logging) {
    try {
        ksbind::arenas::configure(arena_bytes, logging);
        return 0;
    } catch (...) {
        raise_current_exception();
        return -1;
    }
}

// The module's slots: its exec function, then what the running interpreter
// knows of what the module supports. Its state is C++ globals shared by
// every module object (settings, atomic) and per-thread arenas, and no Python
// object is kept between calls: so any number of interpreters, each with its
// own GIL (3.12+), and running without the GIL (3.13+): nothing relies on it.
// Chosen at import, not by the headers: a limited-API build compiled against
// older headers runs on newer CPythons, and an older one refuses a slot it
// does not know. The numbers are the stable ABI's (Include/moduleobject.h).
constexpr int mod_multiple_interpreters_slot = 3;                    // Py_mod_multiple_interpreters
constexpr std::uintptr_t per_interpreter_gil_supported = 2;          // Py_MOD_PER_INTERPRETER_GIL_SUPPORTED
constexpr int mod_gil_slot = 4;                                      // Py_mod_gil
constexpr std::uintptr_t gil_not_used = 1;                           // Py_MOD_GIL_NOT_USED
#if defined(Py_mod_multiple_interpreters)
static_assert(Py_mod_multiple_interpreters == mod_multiple_interpreters_slot);
#endif
#if defined(Py_mod_gil)
static_assert(Py_mod_gil == mod_gil_slot);
#endif

// The running CPython's minor version (3.X), from Py_GetVersion ("3.12.1 (main, ...").
inline int running_minor_version() {
    const char* v = Py_GetVersion();
    int minor = 0;
    const char* dot = std::strchr(v, '.');
    for (const char* c = dot ? dot + 1 : v; *c >= '0' && *c <= '9'; ++c) minor = minor * 10 + (*c - '0');
    return minor;
}

// Fills slots (room for 4) and points def at them; returns def. Called once
// per process (PyInit's static), before the first PyModuleDef_Init.
inline PyModuleDef* with_slots(PyModuleDef* def, PyModuleDef_Slot* slots, int (*exec)(PyObject*)) {
    const int minor = running_minor_version();
    int n = 0;
    slots[n++] = {Py_mod_exec, reinterpret_cast<void*>(exec)};
    if (minor >= 12)
        slots[n++] = {mod_multiple_interpreters_slot, reinterpret_cast<void*>(per_interpreter_gil_supported)};
    if (minor >= 13) slots[n++] = {mod_gil_slot, reinterpret_cast<void*>(gil_not_used)};
    slots[n] = {0, nullptr};
    def->m_slots = slots;
    return def;
}

// The module's definition: its name, docstring and method table; no per-module
// state, and its slots are set by with_slots at import. A value to copy into the
// module's static PyModuleDef.
inline PyModuleDef module_def(const char* name, const char* doc, PyMethodDef* methods) {
    PyModuleDef def = {
        PyModuleDef_HEAD_INIT,
        name,
        doc,
        0,
        methods,
        nullptr,  // m_slots: set by with_slots
        nullptr,
        nullptr,
        nullptr,
    };
    return def;
}

}  // namespace python
}  // namespace ksbind

#define KSBIND_CONCAT_(a, b) a##b
#define KSBIND_CONCAT(a, b) KSBIND_CONCAT_(a, b)
#define KSBIND_STRINGIFY_(a) #a
#define KSBIND_STRINGIFY(a) KSBIND_STRINGIFY_(a)
