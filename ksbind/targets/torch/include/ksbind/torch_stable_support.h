// What the shared support object (ksbind/torch_stable_support.cpp) compiles once per machine,
// toolchain and flags, declared for the torch target's ops' unit: its build forces this header
// in (-include, after the shared precompiled header) when that object is built, and links the
// object into the module (ksbind/backend/pch.py, "companion"). The unit then compiles none of
// it: the support ops' kernels, and the argument checks, result tensors and failure reports
// that every module's kernels share, instantiated here for each dtype a kernel uses (a third
// of a small module's ops' unit). Without this header the unit compiles them itself, as
// weak definitions, the same code.
#pragma once

#include <ksbind/torch_stable.h>

// X(prefix): each shared instantiation, as an explicit instantiation declaration
// (X(extern), here) or definition (X(), in the .cpp).
#define KSBIND_TORCH_SUPPORT_TEMPLATES(KIND)                                                         \
    KSBIND_TORCH_SUPPORT_DTYPE(KIND, float)                                                        \
    KSBIND_TORCH_SUPPORT_DTYPE(KIND, int)                                                          \
    KSBIND_TORCH_SUPPORT_DTYPE(KIND, bool)                                                         \
    KIND template void ksbind::torch_stable::check_tensor<int64_t>(torch::stable::Tensor&, int64_t, const char*,   \
                                                                   const char*, bool);             \
    KIND template void ksbind::torch_stable::check_tensor<uint8_t>(torch::stable::Tensor&, int64_t, const char*,   \
                                                                   const char*, bool);             \
    KIND template torch::stable::Tensor ksbind::torch_stable::new_tensor<int64_t>(           \
        const std::vector<int64_t>&);                                                              \
    KIND template torch::stable::Tensor ksbind::torch_stable::new_tensor<uint8_t>(           \
        const std::vector<int64_t>&);                                                              \
    KIND template void ksbind::rethrow_ks_failure<ksbind::arenas::mark_t>(ks::allocator&,           \
                                                                         ksbind::arenas::mark_t,   \
                                                                         size_t);                  \
    KIND template void ksbind::rethrow_ks_failure<ksbind::arenas::mark_t, ksbind::detail::no_probe&>( \
        ks::allocator&, ksbind::arenas::mark_t, size_t, const ksbind::CallSite&,                   \
        const ksbind::StderrCapture&, ksbind::detail::no_probe&);

#define KSBIND_TORCH_SUPPORT_DTYPE(KIND, E)                                                          \
    KIND template void ksbind::torch_stable::check_tensor<E>(torch::stable::Tensor&, int64_t, const char*,          \
                                                             const char*, bool);                   \
    KIND template torch::stable::Tensor ksbind::torch_stable::new_tensor<E>(                  \
        const std::vector<int64_t>&);                                                              \
    KIND template torch::stable::Tensor ksbind::torch_stable::scalar_tensor<E>(E);            \
    KIND template torch::stable::Tensor ksbind::torch_stable::result_tensor<1, E>(            \
        const ks::tensor<1, E>&);                                                                  \
    KIND template torch::stable::Tensor ksbind::torch_stable::result_tensor<2, E>(            \
        const ks::tensor<2, E>&);

namespace ksbind::torch_stable {
// The support ops' kernels (KSBIND_STABLE_SUPPORT_IMPLS_HERE), registered on m.
void register_support_impls(torch::stable::detail::StableLibrary& m);
}  // namespace ksbind::torch_stable

KSBIND_TORCH_SUPPORT_TEMPLATES(extern)

#undef KSBIND_STABLE_SUPPORT_IMPLS
#define KSBIND_STABLE_SUPPORT_IMPLS(m) ::ksbind::torch_stable::register_support_impls(m)
