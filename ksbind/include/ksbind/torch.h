// Converters between torch tensors and ks values (the torch target), and the
// loops behind the elementwise and vmap modes.
//
//   from_torch<T>(alloc, value, "name") -> T
//       at::Tensor -> ks::tensor<N, E>: a view of the tensor's own data (no
//       copy) when it is a CPU tensor of the matching dtype (Float: float32,
//       Integer: int32, Bool: bool) and rank N. A non-contiguous tensor is
//       made contiguous first (value is replaced by the contiguous copy, so
//       it lives as long as the entry point's parameter). std::tuple of
//       entry values -> ks::Tuple, element by element; scalars pass through.
//   to_torch(value) -> entry value
//       ks::tensor -> a new at::Tensor (one copy out of the arena); ks::Tuple
//       -> std::tuple (whatever the runtime's Tuple is); scalars pass through. pybind11 (in the module's
//       translation unit) turns those into torch.Tensor, tuple, float...
//
// Wrong dtype raises TypeError; wrong rank, device, layout or a size beyond
// ks's 32-bit ints raises ValueError; both name the argument.
//
// Only ATen's core headers are included (not torch/extension.h) so the
// entry points compile in a few seconds; the pybind11 caster for at::Tensor
// lives in the module's translation unit.
#pragma once

// pybind11's exception types alone (type_error, value_error): torch's bindings
// raise them as TypeError/ValueError. Not all of pybind11: the ks unit that
// includes this header compiles without it, several seconds faster.
#include <pybind11/detail/common.h>

#include <ksbind/call_arena.h>
#include <ksbind/cpu_capability.h>
#include <ksbind/entry_points.h>
#include <ksbind/elementwise_loops.h>
#include <ksbind/ks_value_traits.h>
#include <ksbind/number_ranges.h>  // ks Integer's range

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/EmptyTensor.h>
#include <c10/core/ScalarType.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace ksbind {
namespace torch_target {

namespace py = pybind11;
using ks_values::copy_leaves;
using ks_values::first_shape;
using ks_values::has_shape;
using ks_values::holds_no_scalar;
using ks_values::is_ks_tensor;
using ks_values::is_ks_tuple;
using ks_values::ks_index;
using ks_values::leaf;
using ks_values::torch_sizes;
using loops::batch_size;
using loops::elementwise_chunk;
using loops::run_chunk;
using loops::step_elements;

// ------------------------------------------------------------ dtypes

template <class E>
struct dtype_of;
template <>
struct dtype_of<float> {
    static constexpr c10::ScalarType value = c10::ScalarType::Float;
    static constexpr const char* torch_name = "torch.float32";
    static constexpr const char* ks_name = "Float";
};
template <>
struct dtype_of<int> {
    static constexpr c10::ScalarType value = c10::ScalarType::Int;
    static constexpr const char* torch_name = "torch.int32";
    static constexpr const char* ks_name = "Integer";
};
template <>
struct dtype_of<bool> {
    static constexpr c10::ScalarType value = c10::ScalarType::Bool;
    static constexpr const char* torch_name = "torch.bool";
    static constexpr const char* ks_name = "Bool";
};

inline std::string shape_text(c10::IntArrayRef sizes) {
    std::ostringstream os;
    os << "[";
    for (size_t i = 0; i < sizes.size(); ++i) os << (i ? ", " : "") << sizes[i];
    os << "]";
    return os.str();
}

inline std::string dtype_text(c10::ScalarType t) {
    std::string s = c10::toString(t);  // e.g. "Long"
    static const std::pair<const char*, const char*> names[] = {
        {"Float", "torch.float32"}, {"Double", "torch.float64"}, {"Half", "torch.float16"},
        {"BFloat16", "torch.bfloat16"}, {"Int", "torch.int32"}, {"Long", "torch.int64"},
        {"Short", "torch.int16"}, {"Char", "torch.int8"}, {"Byte", "torch.uint8"}, {"Bool", "torch.bool"}};
    for (auto& n : names)
        if (s == n.first) return n.second;
    return s;
}

[[noreturn]] inline void type_error(const std::string& where, const std::string& message) {
    throw py::type_error("argument '" + where + "': " + message);
}

[[noreturn]] inline void value_error(const std::string& where, const std::string& message) {
    throw py::value_error("argument '" + where + "': " + message);
}

// The dispatch keys of tensors whose memory ks must not read raw: torch.func's
// wrappers (vmap's BatchedTensor, grad's TensorWrapper: no storage of their
// own), functionalized tensors, and subclasses with __torch_dispatch__ (wrapper
// subclasses, FakeTensor: their data is not, or not only, in their storage).
inline c10::DispatchKeySet unviewable_keys() {
    return c10::DispatchKeySet({c10::DispatchKey::FuncTorchBatched, c10::DispatchKey::FuncTorchGradWrapper,
                                c10::DispatchKey::Functionalize, c10::DispatchKey::Python});
}

// A tensor of a torch.func transform (vmap, grad...): the entry points of
// bindings with a vjp route those to their Python autograd.Function.
inline c10::DispatchKeySet functorch_keys() {
    return c10::DispatchKeySet({c10::DispatchKey::FuncTorchBatched, c10::DispatchKey::FuncTorchGradWrapper});
}

// Refuse, naming the argument, a tensor whose memory cannot be viewed (checked
// first: a FakeTensor's own device is 'meta', a nested tensor's layout strided).
// (ks_type a C string: a std::string built on every call would allocate.)
inline void check_viewable(const at::Tensor& t, const std::string& where, const char* ks_type) {
    const c10::DispatchKeySet keys = t.key_set();
    if (!t.is_nested() && !keys.has_any(unviewable_keys()) && t.has_storage()) return;
    const std::string for_ks = std::string(" for ks ") + ks_type;  // only on the way to an error
    if (t.is_nested())
        value_error(where, "expected a dense tensor" + for_ks + ", got a nested tensor (pass a list of its tensors: "
                           "t.unbind())");
    if (keys.has_any(functorch_keys()))
        type_error(where, "got a tensor of a torch.func transform (vmap, grad, vjp, jacrev...)" + for_ks +
                              ", outside its transform or given to a vjp binding (NAME_vjp), which takes no part in "
                              "torch.func transforms: call the binding itself, whose Function has the vmap rule and "
                              "calls the vjp");
    if (keys.has(c10::DispatchKey::Python))
        type_error(where, "got a tensor subclass that overrides __torch_dispatch__ (a wrapper subclass, or a "
                          "FakeTensor outside its FakeTensorMode)" + for_ks +
                              ": its data cannot be viewed; pass a plain torch.Tensor");
    type_error(where, "got a tensor without data of its own (e.g. functionalized)" + for_ks +
                          ": pass a plain torch.Tensor");
}

// Replace t by a copy with its negative bit resolved (torch._neg_view, the
// .imag of a conjugate view: its memory holds the negated values), a lazy
// zero tensor by real zeros.
inline void resolve_bits(at::Tensor& t, const std::string& where, const char* ks_type) {
    if (t._is_zerotensor()) {
        t = t.new_zeros(t.sizes());
        return;
    }
    if (t.is_neg()) t = t.resolve_neg();
    if (t.is_conj()) t = t.resolve_conj();
    if (t.numel() > 0 && t.storage().data() == nullptr)
        type_error(where, std::string("got a tensor whose data is not allocated for ks ") + ks_type +
                              ": pass a plain torch.Tensor");
}

// Check dtype, device, layout and rank (rank: the tensor's dim must be
// `rank`); resolve its negative bit; make it contiguous if it is not.
template <class E>
void check_tensor(at::Tensor& t, int64_t rank, const std::string& where, const char* ks_type) {
    if (!t.defined()) type_error(where, std::string("expected a tensor for ks ") + ks_type + ", got an undefined tensor");
    check_viewable(t, where, ks_type);
    if (t.scalar_type() != dtype_of<E>::value)
        type_error(where, std::string("expected a ") + dtype_of<E>::torch_name + " tensor for ks " + ks_type +
                              ", got " + dtype_text(t.scalar_type()) + " (convert it first, e.g. .to(" +
                              dtype_of<E>::torch_name + "))");
    if (!t.device().is_cpu())
        value_error(where, std::string("expected a CPU tensor for ks ") + ks_type + ", got a tensor on device '" +
                               t.device().str() + "'");
    if (t.layout() != c10::kStrided) value_error(where, std::string("expected a dense (strided) tensor for ks ") + ks_type);
    if (t.dim() != rank)
        value_error(where, "expected a " + std::to_string(rank) + "-dimensional tensor for ks " + ks_type +
                               ", got shape " + shape_text(t.sizes()));
    if (t.numel() > INT_MAX) value_error(where, "tensor has " + std::to_string(t.numel()) +
                                                    " elements; ks indexes with 32-bit ints");
    resolve_bits(t, where, ks_type);
    if (!t.is_contiguous()) t = t.contiguous();
}

// ------------------------------------------------------------ entry values

// A Float/Integer/Bool argument: a Python number, or a 0-dim tensor (kept, so
// that autograd can give it a gradient).
template <class E>
struct ScalarArg {
    E value{};
    at::Tensor tensor;  // defined when the caller passed a tensor
};

// A tensor of tensors ((Vec (Vec Float))...): one stacked tensor, whose rows
// the inner ks tensors view, or a list of the inner values (ragged).
template <class Inner>
struct Nested {
    at::Tensor stacked;
    std::vector<Inner> items;
};

template <class T>
std::string ks_type_text() {
    if constexpr (is_ks_tensor<T>::value) {
        return [&]<size_t D, class E>(ks::tensor<D, E>*) {
            return "(Tensor " + std::to_string(D) + " " + ks_type_text<E>() + ")";
        }(static_cast<T*>(nullptr));
    } else {
        return dtype_of<T>::ks_name;
    }
}

// Whether autograd has anything to do: a tensor anywhere in the value requires grad.
inline bool requires_grad(const at::Tensor& t) { return t.defined() && t.requires_grad(); }
template <class E>
bool requires_grad(const ScalarArg<E>& s);
template <class Inner>
bool requires_grad(const Nested<Inner>& n);
template <class T>
bool requires_grad(const std::vector<T>& v);
template <class... Ts>
bool requires_grad(const std::tuple<Ts...>& t);
template <class T>
bool requires_grad(const T&) { return false; }  // numbers, strings

template <class E>
bool requires_grad(const ScalarArg<E>& s) { return requires_grad(s.tensor); }
template <class Inner>
bool requires_grad(const Nested<Inner>& n) {
    return n.stacked.defined() ? n.stacked.requires_grad() : requires_grad(n.items);
}
template <class T>
bool requires_grad(const std::vector<T>& v) {
    for (const T& x : v)
        if (requires_grad(x)) return true;
    return false;
}
template <class... Ts>
bool requires_grad(const std::tuple<Ts...>& t) {
    return std::apply([](const auto&... x) { return (false || ... || requires_grad(x)); }, t);
}

// Whether a torch.func transform is running: functorch includes its dynamic
// layer keys in this thread's dispatch keys while its stack is not empty. (Its
// tensors outside a transform are dead wrappers, which a call refuses.)
inline bool functorch_active() {
    return c10::impl::tls_is_dispatch_key_included(c10::DispatchKey::FuncTorchDynamicLayerFrontMode);
}

// Whether a tensor anywhere in the value belongs to a torch.func transform
// (vmap's BatchedTensor, grad's wrapper): the entry then routes the call to its
// autograd.Function, whose setup_context and vmap rule torch.func uses.
inline bool functorch_wrapped(const at::Tensor& t) { return t.defined() && t.key_set().has_any(functorch_keys()); }
template <class E>
bool functorch_wrapped(const ScalarArg<E>& s) { return functorch_wrapped(s.tensor); }
template <class Inner>
bool functorch_wrapped(const Nested<Inner>& n);
template <class T>
bool functorch_wrapped(const std::vector<T>& v);
template <class... Ts>
bool functorch_wrapped(const std::tuple<Ts...>& t);
template <class T>
bool functorch_wrapped(const T&) { return false; }  // numbers, strings

template <class Inner>
bool functorch_wrapped(const Nested<Inner>& n) {
    return n.stacked.defined() ? functorch_wrapped(n.stacked) : functorch_wrapped(n.items);
}
template <class T>
bool functorch_wrapped(const std::vector<T>& v) {
    for (const T& x : v)
        if (functorch_wrapped(x)) return true;
    return false;
}
template <class... Ts>
bool functorch_wrapped(const std::tuple<Ts...>& t) {
    return std::apply([](const auto&... x) { return (false || ... || functorch_wrapped(x)); }, t);
}

// ------------------------------------------------------------ Python -> ks

template <class E>
E scalar_from(ScalarArg<E>& s, const std::string& where) {
    if (!s.tensor.defined()) return s.value;
    at::Tensor t = s.tensor;  // s.tensor stays the caller's (autograd gives it the gradient)
    const std::string ks_type = dtype_of<E>::ks_name;
    check_viewable(t, where, ks_type.c_str());
    if (t.dim() != 0)
        value_error(where, "expected a number or a 0-dimensional tensor for ks " + ks_type + ", got a tensor of shape " +
                               shape_text(t.sizes()));
    if (!t.device().is_cpu())
        value_error(where, "expected a CPU tensor for ks " + ks_type + ", got a tensor on device '" + t.device().str() + "'");
    if (t.layout() != c10::kStrided) value_error(where, "expected a dense (strided) tensor for ks " + ks_type);
    resolve_bits(t, where, ks_type.c_str());
    const c10::ScalarType st = t.scalar_type();
    // A 0-dim tensor is a number: any floating dtype for Float, any integer one
    // for Integer (autograd casts a gradient back to its input's dtype).
    if constexpr (std::is_same_v<E, float>) {
        switch (st) {
            case c10::ScalarType::Float: return *t.data_ptr<float>();
            case c10::ScalarType::Double: return static_cast<float>(*t.data_ptr<double>());
            case c10::ScalarType::Half: return static_cast<float>(*t.data_ptr<c10::Half>());
            case c10::ScalarType::BFloat16: return static_cast<float>(*t.data_ptr<c10::BFloat16>());
            default: break;
        }
    } else if constexpr (std::is_same_v<E, int>) {
        int64_t v = 0;
        bool integral = true;
        switch (st) {
            case c10::ScalarType::Int: v = *t.data_ptr<int32_t>(); break;
            case c10::ScalarType::Long: v = *t.data_ptr<int64_t>(); break;
            case c10::ScalarType::Short: v = *t.data_ptr<int16_t>(); break;
            case c10::ScalarType::Char: v = *t.data_ptr<int8_t>(); break;
            case c10::ScalarType::Byte: v = *t.data_ptr<uint8_t>(); break;
            default: integral = false;
        }
        if (integral) {
            if (numbers::exceeds_integer<int>(v))
                value_error(where, std::to_string(v) + " does not fit ks Integer (32 bits)");
            return static_cast<int>(v);
        }
    } else {
        if (st == c10::ScalarType::Bool) return *t.data_ptr<bool>();
    }
    type_error(where, "expected a number or a 0-dimensional " + std::string(std::is_same_v<E, float> ? "floating" :
                      std::is_same_v<E, int> ? "integer" : "bool") + " tensor for ks " + ks_type + ", got a " +
                      dtype_text(st) + " tensor");
}

// The ks view of a stacked tensor: a ks tensor of scalars views its data; a
// ks tensor of tensors is an arena array of views of its rows.
template <class T, class Leaf>
T view_stacked(ks::allocator* alloc, Leaf* data, c10::IntArrayRef sizes, size_t dim) {
    return [&]<size_t D, class E>(ks::tensor<D, E>*) {
        if constexpr (!is_ks_tensor<E>::value) {
            return T(ks_index<D>(sizes, dim), data);
        } else {
            static_assert(D == 1, "tensors of tensors cross as rank 1");
            const int n = static_cast<int>(sizes[dim]);
            int64_t stride = 1;
            for (size_t k = dim + 1; k < sizes.size(); ++k) stride *= sizes[k];
            T out = T::create(alloc, n);
            for (int i = 0; i < n; ++i) out.data()[i] = view_stacked<E>(alloc, data + i * stride, sizes, dim + 1);
            return out;
        }
    }(static_cast<T*>(nullptr));
}

template <class T>
struct from_torch_impl;

template <class T>
T from_list(ks::allocator* alloc, auto& items, const std::string& where);

template <size_t D, class E>
struct from_torch_impl<ks::tensor<D, E>> {
    using T = ks::tensor<D, E>;
    // A tensor of scalars: a view of the tensor's own data.
    static T convert(ks::allocator*, at::Tensor& t, const std::string& where) {
        static const std::string ks_type = ks_type_text<T>();
        check_tensor<E>(t, D, where, ks_type.c_str());
        return T(ks_index<D>(t.sizes()), t.data_ptr<E>());
    }
    // A tensor of tensors: stacked (rows viewed) or a list.
    template <class Inner>
    static T convert(ks::allocator* alloc, Nested<Inner>& v, const std::string& where) {
        if (!v.stacked.defined()) return from_list<T>(alloc, v.items, where);
        using Leaf = typename leaf<T>::type;
        static const std::string ks_type = ks_type_text<T>();
        check_tensor<Leaf>(v.stacked, leaf<T>::rank, where, ks_type.c_str());
        return view_stacked<T>(alloc, v.stacked.template data_ptr<Leaf>(), v.stacked.sizes(), 0);
    }
    // A tensor of tuples: a list.
    template <class Entry>
    static T convert(ks::allocator* alloc, std::vector<Entry>& items, const std::string& where) {
        return from_list<T>(alloc, items, where);
    }
    // A tangent of discrete values: nothing to pass.
    static T convert(ks::allocator*, std::tuple<>&, const std::string&) { return T{}; }
};

template <class... Ts>
struct from_torch_impl<ks::Tuple<Ts...>> {
    template <class Entry>
    static ks::Tuple<Ts...> convert(ks::allocator* alloc, Entry& value, const std::string& where) {
        if constexpr (holds_no_scalar<ks::Tuple<Ts...>>::value) {
            return ks::Tuple<Ts...>{};
        } else {
            return [&]<size_t... I>(std::index_sequence<I...>) {
                return ks::make_Tuple(from_torch_impl<Ts>::convert(alloc, std::get<I>(value),
                                                                   where + "[" + std::to_string(I) + "]")...);
            }(std::index_sequence_for<Ts...>());
        }
    }
};

// Scalars (a number or a 0-dim tensor) and strings (pybind11 converted them).
template <class T>
struct from_torch_impl {
    template <class E>
    static T convert(ks::allocator*, ScalarArg<E>& value, const std::string& where) {
        return scalar_from(value, where);
    }
    template <class Entry>
    static T convert(ks::allocator*, Entry& value, const std::string&) {
        return static_cast<T>(value);
    }
};

template <class T>
T from_list(ks::allocator* alloc, auto& items, const std::string& where) {
    using E = std::remove_cvref_t<decltype(*T().data())>;
    if (items.size() > static_cast<size_t>(INT_MAX))
        value_error(where, "list has " + std::to_string(items.size()) + " elements; ks indexes with 32-bit ints");
    T out = T::create(alloc, static_cast<int>(items.size()));
    for (size_t i = 0; i < items.size(); ++i)
        out.data()[i] = from_torch_impl<E>::convert(alloc, items[i], where + "[" + std::to_string(i) + "]");
    return out;
}

template <class T, class Entry>
T from_torch(ks::allocator* alloc, Entry& value, const char* name) {
    return from_torch_impl<T>::convert(alloc, value, std::string(name));
}

// ------------------------------------------------------------ ks -> Python

// Numbers come back as 0-dim tensors, as torch.sum's result does.
template <class E>
at::Tensor scalar_tensor(E v) {
    at::Tensor out = at::detail::empty_cpu({}, dtype_of<E>::value, false, c10::nullopt);
    *out.data_ptr<E>() = v;
    return out;
}
inline at::Tensor to_torch(float v) { return scalar_tensor(v); }
inline at::Tensor to_torch(int v) { return scalar_tensor(v); }
inline at::Tensor to_torch(bool v) { return scalar_tensor(v); }

template <class T>
std::enable_if_t<!is_ks_tensor<T>::value && !is_ks_tuple<T>::value, T> to_torch(const T& v) {
    return v;  // strings
}
template <size_t D, class E>
auto to_torch(const ks::tensor<D, E>& t);
template <class... Ts>
auto to_torch(const ks::Tuple<Ts...>& t);

template <size_t D, class E>
auto to_torch(const ks::tensor<D, E>& t) {
    using T = ks::tensor<D, E>;
    if constexpr (holds_no_scalar<E>::value) {
        return std::tuple<>();
    } else if constexpr (is_ks_tensor<E>::value) {
        // One copy out of the arena into one stacked tensor when the shapes
        // agree; a list of tensors when they do not.
        Nested<decltype(to_torch(std::declval<const E&>()))> out;
        std::vector<int64_t> shape;
        first_shape(t, shape);
        if (has_shape(t, shape.data())) {
            using Leaf = typename leaf<T>::type;
            out.stacked = at::detail::empty_cpu(shape, dtype_of<Leaf>::value, false, c10::nullopt);
            Leaf* dst = out.stacked.template data_ptr<Leaf>();
            copy_leaves(t, dst);
        } else {
            out.items.reserve(static_cast<size_t>(t.num_elements()));
            for (int i = 0; i < t.num_elements(); ++i) out.items.push_back(to_torch(t.data()[i]));
        }
        return out;
    } else if constexpr (is_ks_tuple<E>::value) {
        std::vector<decltype(to_torch(std::declval<const E&>()))> out;
        out.reserve(static_cast<size_t>(t.num_elements()));
        for (int i = 0; i < t.num_elements(); ++i) out.push_back(to_torch(t.data()[i]));
        return out;
    } else {
        auto sizes = torch_sizes<D>(t.size());
        at::Tensor out = at::detail::empty_cpu(sizes, dtype_of<E>::value, false, c10::nullopt);
        size_t n = static_cast<size_t>(t.num_elements());
        if (n) std::memcpy(out.data_ptr<E>(), t.data(), n * sizeof(E));
        return out;
    }
}

// ks::Tuple (std::tuple in the bundled runtime, ksc's own struct in ksc's) ->
// std::tuple, which pybind11 converts.
template <class... Ts>
auto to_torch(const ks::Tuple<Ts...>& t) {
    if constexpr (holds_no_scalar<ks::Tuple<Ts...>>::value) {
        return std::tuple<>();
    } else {
        return [&]<size_t... I>(std::index_sequence<I...>) {
            return std::make_tuple(to_torch(ks::get<I>(t))...);
        }(std::index_sequence_for<Ts...>());
    }
}

// ------------------------------------------------------------ per-thread arenas

// run_chunk over [begin, end) on ATen's thread pool, chunks of at least `grain`.
template <class Body>
void parallel_chunks(int64_t begin, int64_t end, int64_t grain, Body& body) {
    const size_t bytes = ksbind::arenas::arena_bytes();
    at::parallel_for(begin, end, grain, [&](int64_t b, int64_t e) { run_chunk(body, bytes, b, e); });
}

// ------------------------------------------------------------ elementwise mode

// Float tensors broadcast against each other and read in place: no input is
// expanded into a copy. Each input is contiguous (a view when it already is);
// its element strides over the broadcast shape are 0 along broadcast
// dimensions. Dimensions are merged wherever every input allows, so
// same-shaped inputs are one flat dimension and (1000, 1) with (1, 1000) is
// two: 1000 rows of 1000, the first input constant along each row.
template <size_t N>
struct Broadcast : loops::BroadcastShape<N> {
    std::array<at::Tensor, N> inputs;  // contiguous: a copy where the caller's was not (it lives here)
};

template <size_t N>
Broadcast<N> broadcast(std::array<at::Tensor*, N> args, const std::array<const char*, N>& names) {
    Broadcast<N> b;
    std::array<c10::IntArrayRef, N> sizes;
    std::array<const float*, N> data;
    for (size_t i = 0; i < N; ++i) {
        at::Tensor& t = *args[i];
        check_tensor<float>(t, t.defined() ? t.dim() : 0, names[i], "Float (elementwise)");
        b.inputs[i] = t;
        sizes[i] = b.inputs[i].sizes();
        data[i] = b.inputs[i].template data_ptr<float>();
    }
    loops::broadcast_into(b, sizes, data, names);
    return b;
}

inline at::Tensor new_float_tensor(const std::vector<int64_t>& shape) {
    return at::detail::empty_cpu(shape, c10::ScalarType::Float, false, c10::nullopt);
}

// out[k][i] = the k-th result of f(alloc, inputs at i) for every element of
// the broadcast shape, on ATen's thread pool, compiled for the selected CPU
// capability. f returns a Float, or a ks::Tuple of M Floats.
template <size_t N, size_t M, class F>
void elementwise(const Broadcast<N>& b, const std::array<float*, M>& out, F f) {
    auto body = [&](ks::allocator* alloc, int64_t begin, int64_t end) {
        elementwise_chunk(b, out, f, alloc, begin, end);
    };
    parallel_chunks(0, b.numel, 32768, body);
}

// ------------------------------------------------------------ vmap mode

// A batched argument: the leading dimension is the batch, each step sees a
// ks value of the rest (a view: no copy).
template <class T>
struct Batched;

template <size_t D, class E>
struct Batched<ks::tensor<D, E>> {
    E* data = nullptr;
    int64_t batch = 0;
    int64_t stride = 0;
    typename ks::tensor<D, E>::index_type size{};

    Batched(at::Tensor& t, const std::string& where) {
        static const std::string ks_type = "(Tensor " + std::to_string(D) + " " + dtype_of<E>::ks_name + "), batched";
        check_tensor<E>(t, D + 1, where, ks_type.c_str());
        batch = t.size(0);
        stride = t.numel() / (batch ? batch : 1);
        size = ks_index<D>(t.sizes(), 1);
        data = t.data_ptr<E>();
    }
    ks::tensor<D, E> at(int64_t i) const { return ks::tensor<D, E>(size, data + i * stride); }
    int64_t step_elements() const { return stride; }
};

// A scalar result's gradient, batched: a 1-dimensional tensor.
template <class E>
struct BatchedScalar {
    E* data = nullptr;
    int64_t batch = 0;
    BatchedScalar(at::Tensor& t, const std::string& where) {
        static const std::string ks_type = std::string(dtype_of<E>::ks_name) + ", batched";
        check_tensor<E>(t, 1, where, ks_type.c_str());
        batch = t.size(0);
        data = t.data_ptr<E>();
    }
    E at(int64_t i) const { return data[i]; }
    int64_t step_elements() const { return 1; }
};
template <>
struct Batched<float> : BatchedScalar<float> { using BatchedScalar<float>::BatchedScalar; };
template <>
struct Batched<int> : BatchedScalar<int> { using BatchedScalar<int>::BatchedScalar; };
template <>
struct Batched<bool> : BatchedScalar<bool> { using BatchedScalar<bool>::BatchedScalar; };

template <class T>
Batched<T> batched(at::Tensor& t, const char* name) {
    return Batched<T>(t, std::string(name));
}

// Out of line: the vmap kernels inline everything else (ksbind/cpu_capability.h).
[[noreturn]] KSBIND_NOINLINE inline void shape_mismatch(int64_t i, const std::vector<int64_t>& got,
                                                        const std::vector<int64_t>& first) {
    throw py::value_error("vmap: step " + std::to_string(i) + " returned a tensor of shape " + shape_text(got) +
                          ", step 0 returned " + shape_text(first) + "; results must have one shape to stack");
}

// loops::parallel_steps on this header's thread pool (parallel_chunks).
template <class Step>
void parallel_steps(int64_t batch, int64_t elements_per_step, Step step) {
    loops::parallel_steps([](int64_t b, int64_t e, int64_t grain, auto& body) { parallel_chunks(b, e, grain, body); },
                          batch, elements_per_step, step);
}

// Collects step results into one tensor with a leading batch dimension. After
// step 0 has put its result, put() may be called from several threads (each
// step writes its own slice).
template <class T>
struct Stacker;

template <size_t D, class E>
struct Stacker<ks::tensor<D, E>> {
    int64_t batch;
    at::Tensor out;
    typename ks::tensor<D, E>::index_type size{};
    explicit Stacker(int64_t b) : batch(b) {}
    void put(int64_t i, const ks::tensor<D, E>& v) {
        if (!out.defined()) {
            size = v.size();
            std::vector<int64_t> shape{batch};
            for (int64_t d : torch_sizes<D>(v.size())) shape.push_back(d);
            out = at::detail::empty_cpu(shape, dtype_of<E>::value, false, c10::nullopt);
        } else if (!(v.size() == size)) {
            shape_mismatch(i, torch_sizes<D>(v.size()), torch_sizes<D>(size));
        }
        size_t n = static_cast<size_t>(v.num_elements());
        if (n) std::memcpy(out.data_ptr<E>() + i * static_cast<int64_t>(n), v.data(), n * sizeof(E));
    }
    // An empty batch: shape unknown beyond the batch dimension.
    at::Tensor result() {
        if (!out.defined()) {
            std::vector<int64_t> shape{batch};
            for (int d = 0; d < D; ++d) shape.push_back(0);
            out = at::detail::empty_cpu(shape, dtype_of<E>::value, false, c10::nullopt);
        }
        return out;
    }
};

template <class E>
struct ScalarStacker {
    at::Tensor out;
    E* data;
    explicit ScalarStacker(int64_t b)
        : out(at::detail::empty_cpu({b}, dtype_of<E>::value, false, c10::nullopt)), data(out.data_ptr<E>()) {}
    void put(int64_t i, E v) { data[i] = v; }
    at::Tensor result() { return out; }
};
template <>
struct Stacker<float> : ScalarStacker<float> { using ScalarStacker<float>::ScalarStacker; };
template <>
struct Stacker<int> : ScalarStacker<int> { using ScalarStacker<int>::ScalarStacker; };
template <>
struct Stacker<bool> : ScalarStacker<bool> { using ScalarStacker<bool>::ScalarStacker; };

template <class... Ts>
struct Stacker<ks::Tuple<Ts...>> {
    std::tuple<Stacker<Ts>...> parts;
    explicit Stacker(int64_t b) : parts(Stacker<Ts>(b)...) {}
    void put(int64_t i, const ks::Tuple<Ts...>& v) {
        [&]<size_t... I>(std::index_sequence<I...>) {
            (std::get<I>(parts).put(i, ks::get<I>(v)), ...);
        }(std::index_sequence_for<Ts...>());
    }
    auto result() {
        return [&]<size_t... I>(std::index_sequence<I...>) {
            return std::make_tuple(std::get<I>(parts).result()...);
        }(std::index_sequence_for<Ts...>());
    }
};

// The empty tuple (the gradient of a shared Integer/Bool/String argument).
template <>
struct Stacker<ks::Tuple<>> {
    explicit Stacker(int64_t) {}
    void put(int64_t, const ks::Tuple<>&) {}
    std::tuple<> result() { return {}; }
};

}  // namespace torch_target
}  // namespace ksbind
