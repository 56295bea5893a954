// Generated from ksbind/support.py by scripts/generate_settings.py (targets/jax/support_wiring.py): do not edit.
// The jax library's support functions (ksbind/support.py's table, over ksbind/support_functions.h),
// as C functions for ctypes (ksbind/targets/jax/runtime/ffi.py); included by ksbind/jax.h.
#pragma once

#define KSBIND_JAX_ALLOCATOR_FUNCTIONS \
    KSBIND_EXPORT int ksbind_jax_reset_allocator(char* err, size_t errlen) {                                                   \
        return ksbind::jax_target::support_call(err, errlen, [&] { ksbind::support::reset_allocator(); });                     \
    }                                                                                                                          \
    KSBIND_EXPORT int ksbind_jax_allocator_top(int64_t* out, char* err, size_t errlen) {                                       \
        return ksbind::jax_target::support_call(err, errlen, [&] { *out = ksbind::support::allocator_top(); });                \
    }                                                                                                                          \
    KSBIND_EXPORT int ksbind_jax_allocator_peak(int64_t* out, char* err, size_t errlen) {                                      \
        return ksbind::jax_target::support_call(err, errlen, [&] { *out = ksbind::support::allocator_peak(); });               \
    }                                                                                                                          \
    KSBIND_EXPORT int ksbind_jax_logging(int on, char* err, size_t errlen) {                                                   \
        return ksbind::jax_target::support_call(err, errlen, [&] { ksbind::support::logging(on != 0); });                      \
    }                                                                                                                          \
    KSBIND_EXPORT int ksbind_jax_arena_bytes(int64_t* out, char* err, size_t errlen) {                                         \
        return ksbind::jax_target::support_call(err, errlen, [&] { *out = ksbind::support::arena_bytes(); });                  \
    }                                                                                                                          \
    KSBIND_EXPORT int ksbind_jax_set_arena_bytes(int64_t bytes, char* err, size_t errlen) {                                    \
        return ksbind::jax_target::support_call(err, errlen, [&] { ksbind::support::set_arena_bytes(bytes); });                \
    }                                                                                                                          \
    KSBIND_EXPORT int ksbind_jax_configure(int64_t arena_bytes, int logging, char* err, size_t errlen) {                       \
        return ksbind::jax_target::support_call(err, errlen, [&] { ksbind::support::configure(arena_bytes, logging != 0); });  \
    }
