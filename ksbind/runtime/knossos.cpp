// ksc-generated C++ ends with #include "knossos.cpp". ksbind's runtime is
// header-only, so there is nothing to define here.
#include "knossos.h"
