// pybind11 casters for the torch target's entry values that are not plain C++
// types (ksbind/torch.h): ScalarArg (a number or a 0-dim tensor) and Nested
// (one stacked tensor or a list). Only the module's translation unit includes
// this: it needs torch's Python bindings for the at::Tensor caster.
#pragma once

#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/headeronly/version.h>

#include <ksbind/call_arena.h>
#include <ksbind/cpu_capability.h>
#include <ksbind/pybind_numbers.h>
#include <ksbind/torch.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace pybind11 {
namespace detail {

template <class E>
struct type_caster<ksbind::torch_target::ScalarArg<E>> {
    using Value = ksbind::torch_target::ScalarArg<E>;
    PYBIND11_TYPE_CASTER(Value, make_caster<E>::name + const_name(" | torch.Tensor"));

    bool load(handle src, bool convert) {
        if (THPVariable_Check(src.ptr())) {  // kept whole: autograd may need its gradient
            value.tensor = THPVariable_Unpack(src.ptr());
            return true;
        }
        if constexpr (std::is_same_v<E, bool>) {
            make_caster<E> number;
            if (!number.load(src, convert)) return false;
            value.value = cast_op<E>(number);
        } else if (!ksbind::pybind::load_number(src, convert, value.value)) {  // user code's errors pass through
            return false;
        }
        value.tensor = at::Tensor();
        return true;
    }

    static handle cast(const Value& v, return_value_policy policy, handle parent) {
        if (v.tensor.defined()) return make_caster<at::Tensor>::cast(v.tensor, policy, parent);
        return make_caster<E>::cast(v.value, policy, parent);
    }
};

template <class Inner>
struct type_caster<ksbind::torch_target::Nested<Inner>> {
    using Value = ksbind::torch_target::Nested<Inner>;
    using List = std::vector<Inner>;
    PYBIND11_TYPE_CASTER(Value, const_name("torch.Tensor | ") + make_caster<List>::name);

    bool load(handle src, bool convert) {
        if (THPVariable_Check(src.ptr())) {
            value.stacked = THPVariable_Unpack(src.ptr());
            value.items.clear();
            return true;
        }
        make_caster<List> list;
        if (!list.load(src, convert)) return false;
        value.items = cast_op<List&&>(std::move(list));
        value.stacked = at::Tensor();
        return true;
    }

    static handle cast(const Value& v, return_value_policy policy, handle parent) {
        if (v.stacked.defined()) return make_caster<at::Tensor>::cast(v.stacked, policy, parent);
        return make_caster<List>::cast(v.items, policy, parent);
    }
};

}  // namespace detail
}  // namespace pybind11

// ------------------------------------------------------------ module setup

namespace ksbind {
namespace torch_target {

// The torch this module was built against, in the .so's bytes, where ksbind/torch_runtime.py
// reads it without loading the library: when loading fails (an undefined torch symbol), the
// ImportError names both torches. Only the module's translation unit includes this header.
[[gnu::used]] static const char built_against_torch[] = "ksbind-torch-built=" TORCH_VERSION ";";

// A CPU-capability message (a fallback to a lower capability) as a RuntimeWarning.
inline void warn_capability(const std::string& text) {
    if (!text.empty() && PyErr_WarnEx(PyExc_RuntimeWarning, text.c_str(), 1) < 0) throw pybind11::error_already_set();
}

// Module init, after the support functions (ksbind/support.py) are registered: apply
// the config's arena size and logging to each thread's arena (ksbind/call_arena.h;
// KSBIND_ARENA_BYTES wins), choose which compiled copy of the elementwise and vmap
// loops runs (ksbind/cpu_capability.h: KSBIND_CPU_CAPABILITY or the best this CPU
// runs), record the torch it was built against (_torch_version), and register
// _set_cpu_capability, which tests and benchmarks switch it with.
// A bad environment value fails the import with a ValueError naming it.
inline void configure_module(pybind11::module_& m, size_t arena_bytes, bool logging) {
    try {
        ksbind::arenas::configure(arena_bytes, logging);
        warn_capability(ksbind::cpu::configure_from_env());
    } catch (const std::invalid_argument& e) {
        throw pybind11::value_error(e.what());
    }
    // Compared with the running torch by ksbind/torch_runtime.py's extension(): never an older one.
    m.attr("_torch_version") = std::string(TORCH_VERSION);
    m.def("_set_cpu_capability", [](const std::string& name) {
        try {
            warn_capability(ksbind::cpu::select(name));
        } catch (const std::invalid_argument& e) {
            throw pybind11::value_error(e.what());
        }
        return ksbind::cpu::selected_name();
    }, "Run the kernels with another CPU capability (tests, benchmarks); returns the one used "
       "(a lower one, with a RuntimeWarning, when this CPU lacks it).", pybind11::arg("name"));
}

}  // namespace torch_target
}  // namespace ksbind
