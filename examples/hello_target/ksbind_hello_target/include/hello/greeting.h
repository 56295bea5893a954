// The hello target's own C++ (its Target.include_dirs put this folder on the include path).
#pragma once

#include <Python.h>

namespace hello {

// greeting(): the module's greeting text, a new str (nullptr with the error set, as the C API does).
inline PyObject* greeting(const char* text) { return PyUnicode_FromString(text); }

}  // namespace hello
