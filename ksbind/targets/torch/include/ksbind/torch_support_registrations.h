// Generated from ksbind/support.py by scripts/generate_settings.py (targets/torch/support_wiring.py): do not edit.
// The torch library's support ops (ksbind/support.py's table, over ksbind/support_functions.h),
// registered by ksbind/torch_stable.h.
#pragma once

// The support ops, in the generated ops file's STABLE_TORCH_LIBRARY blocks.
#define KSBIND_STABLE_SUPPORT_SCHEMAS(m) \
    m.def("_ksbind_reset_allocator() -> ()");                         \
    m.def("_ksbind_allocator_top() -> int");                          \
    m.def("_ksbind_allocator_peak() -> int");                         \
    m.def("_ksbind_logging(bool on) -> ()");                          \
    m.def("_ksbind_arena_bytes() -> int");                            \
    m.def("_ksbind_set_arena_bytes(int bytes) -> ()");                \
    m.def("_ksbind_cpu_capability() -> int");                         \
    m.def("_ksbind_cpu_capabilities() -> int");                       \
    m.def("_ksbind_configure(int arena_bytes, bool logging) -> ()");  \
    m.def("_ksbind_configure_cpu() -> str");                          \
    m.def("_ksbind_set_cpu_capability(str name) -> int")

// Their kernels: registered here (KSBIND_STABLE_SUPPORT_IMPLS_HERE), or in a unit that includes
// ksbind/torch_stable_support.h by a call into the shared support object.
#define KSBIND_STABLE_SUPPORT_IMPLS_HERE(m) \
    m.impl("_ksbind_reset_allocator", TORCH_BOX(&ksbind::support::reset_allocator));       \
    m.impl("_ksbind_allocator_top", TORCH_BOX(&ksbind::support::allocator_top));           \
    m.impl("_ksbind_allocator_peak", TORCH_BOX(&ksbind::support::allocator_peak));         \
    m.impl("_ksbind_logging", TORCH_BOX(&ksbind::support::logging));                       \
    m.impl("_ksbind_arena_bytes", TORCH_BOX(&ksbind::support::arena_bytes));               \
    m.impl("_ksbind_set_arena_bytes", TORCH_BOX(&ksbind::support::set_arena_bytes));       \
    m.impl("_ksbind_cpu_capability", TORCH_BOX(&ksbind::support::cpu_capability));         \
    m.impl("_ksbind_cpu_capabilities", TORCH_BOX(&ksbind::support::cpu_capabilities));     \
    m.impl("_ksbind_configure", TORCH_BOX(&ksbind::support::configure));                   \
    m.impl("_ksbind_configure_cpu", TORCH_BOX(&ksbind::support::configure_cpu));           \
    m.impl("_ksbind_set_cpu_capability", TORCH_BOX(&ksbind::support::set_cpu_capability))
