// pybind11 casters for the torch target's entry values that are not plain C++
// types (ksbind/torch.h): ScalarArg (a number or a 0-dim tensor) and Nested
// (one stacked tensor or a list). Only the module's translation unit includes
// this: it needs torch's Python bindings for the at::Tensor caster.
#pragma once

#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include <ksbind/pybind_numbers.h>
#include <ksbind/torch.h>

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
