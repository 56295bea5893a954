// What a Python int must fit to become a ks scalar, and the message when it
// does not: one rule for the python target's converters (ksbind/python.h) and
// the pybind11 targets' (ksbind/pybind_numbers.h). What else each accepts
// differs on purpose (see each): the python target takes no bool for Float or
// Integer; the pybind11 targets read numbers as pybind11's casters do.
// Plain C++: no Python or pybind11 header.
#pragma once

#include <cfloat>
#include <limits>

namespace ksbind {
namespace numbers {

inline constexpr const char* float_overflow = "int too large for ks Float (32-bit float)";
inline constexpr const char* integer_overflow = "int out of range for ks Integer (32-bit)";

// An int's value as a double (PyLong_AsDouble) outside ks Float's range: as a
// 32-bit float it would be infinite.
inline bool exceeds_float(double d) { return d > FLT_MAX || d < -FLT_MAX; }

// An int's value (PyLong_AsLongLongAndOverflow: v, and whether it overflowed
// long long) that E (ks Integer: int) cannot hold.
template <class E = int>
bool exceeds_integer(long long v, int overflow = 0) {
    return overflow || v < static_cast<long long>(std::numeric_limits<E>::min()) ||
           v > static_cast<long long>(std::numeric_limits<E>::max());
}

}  // namespace numbers
}  // namespace ksbind
