// The support functions of torch- and jax-target modules (ksbind/support.py's table), as C++
// functions of Python-friendly types (int64_t, bool, std::string): the thread's arena
// (ksbind/call_arena.h), logging, and the kernels' CPU capability (ksbind/cpu_capability.h),
// the capability as an index into capability_names and a set of them as a bitmask. Each
// target's registrations of them (a torch library's ops, a jax library's C functions) are
// generated from the table into the torch and jax targets' packages (ksbind/torch_support_registrations.h,
// ksbind/jax_support_registrations.h).
#pragma once

#include <ksbind/call_arena.h>
#include <ksbind/cpu_capability.h>
#include <ksbind/entry_points.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ksbind {
namespace support {

inline void reset_allocator() { ksbind::arenas::reset_allocator(); }
inline int64_t allocator_top() { return static_cast<int64_t>(ksbind::arenas::allocator_top()); }
inline int64_t allocator_peak() { return static_cast<int64_t>(ksbind::arenas::allocator_peak()); }
inline int64_t arena_bytes() { return static_cast<int64_t>(ksbind::arenas::arena_bytes()); }
inline void set_arena_bytes(int64_t bytes) {
    if (bytes <= 0) throw std::invalid_argument("arena_bytes must be positive");
    ksbind::arenas::set_arena_bytes(static_cast<size_t>(bytes));
}
// (ks::entry_points::logging also keeps the failure capture's echo current, which only the
// targets holding the GIL in a call read.)
inline void logging(bool on) { ks::entry_points::logging(on); }
inline int64_t cpu_capability() { return static_cast<int64_t>(ksbind::cpu::selected()); }
// A bit per capability this build has and this CPU runs.
inline int64_t cpu_capabilities() {
    int64_t bits = 0;
    for (int c = 0; c < ksbind::cpu::capability_count; ++c)
        if (ksbind::cpu::usable(static_cast<ksbind::cpu::Capability>(c))) bits |= int64_t{1} << c;
    return bits;
}
// Choose a capability by name (a lower one where this CPU lacks it); returns the one used.
inline int64_t set_cpu_capability(std::string name) {
    (void)ksbind::cpu::select(name);
    return cpu_capability();
}
// At import: the config's arena size (KSBIND_ARENA_BYTES wins) and logging.
inline void configure(int64_t arena, bool log) { ksbind::arenas::configure(static_cast<size_t>(arena), log); }
// At import, on modules with per-CPU kernels: the capability KSBIND_CPU_CAPABILITY asks for;
// returns what a fallback to a lower capability says ("": none).
inline std::string configure_cpu() { return ksbind::cpu::configure_from_env(); }

}  // namespace support
}  // namespace ksbind
