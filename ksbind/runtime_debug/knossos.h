// A debug build's knossos.h (`debug: true`): first on the include path, it
// declares ks::abort, then includes the runtime's own knossos.h (ksc's or
// ksbind's bundled one) with KS_BOUNDS_CHECK defined by the build.
//
// Why: the runtime's bounds check writes "ERROR: Accessing element I of
// tensor of size N" to std::cerr and calls abort(), unqualified, inside
// namespace ks. Declared here first, ks::abort is the function that call
// finds, and it throws ksbind::ks_abort instead of ending the process; the
// entry point names the binding and quotes the check (ksbind/ks_failure.h).
#pragma once

#include <ksbind/ks_failure.h>

namespace ks {
[[noreturn]] inline void abort() { throw ksbind::ks_abort(); }
}  // namespace ks

#include_next <knossos.h>
