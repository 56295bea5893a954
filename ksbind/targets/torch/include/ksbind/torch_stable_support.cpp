// The torch target's shared support object: compiled once per machine, toolchain and flags
// (beside the shared precompiled header, by ksbind/backend/pch.py) and linked into every
// torch module whose ops' unit was compiled with ksbind/torch_stable_support.h, which
// declares what this file defines.
#include <ksbind/torch_stable_support.h>

KSBIND_TORCH_SUPPORT_TEMPLATES()

namespace ksbind::torch_stable {
void register_support_impls(torch::stable::detail::StableLibrary& m) { KSBIND_STABLE_SUPPORT_IMPLS_HERE(m); }
}  // namespace ksbind::torch_stable
