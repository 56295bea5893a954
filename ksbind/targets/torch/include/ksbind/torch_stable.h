// The torch target's C++: its ops are kernels on PyTorch's LibTorch stable ABI
// (torch/csrc/stable/, torch/headeronly/, the C shim), so the library needs no
// libtorch_python, no pybind11 and no Python.h, and one build runs on every torch from
// the one it targets (TORCH_TARGET_VERSION, set by ksbind/targets/torch/build.py).
//
//   view<T>(tensor, "name")          a ks tensor viewing a CPU tensor's own data (no copy)
//                                    when its dtype and rank match; made contiguous first
//                                    when it is not (the kernel's parameter holds the copy)
//   stacked<T>(alloc, tensor, "name") a ks tensor of tensors viewing one stacked tensor's rows
//   integer(v, "name"), floating(v, "name"), zero_dim<float>(tensor, "name")   ks scalars
//   flat(value)                      a ks result as the op returns it: one Tensor per leaf,
//                                    in a std::tuple (Python re-nests them, ksbind/targets/torch/runtime/)
//
// The elementwise and vmap loops are elementwise_loops.h's, over stable tensors, run on ATen's
// thread pool through torch::stable::parallel_for and compiled per CPU capability.
//
// Errors name the argument. torch turns the C++ exceptions into Python's: invalid_argument
// ValueError, overflow_error OverflowError, bad_alloc MemoryError. No standard exception becomes
// a TypeError, so a type error is a `type_error` (a runtime_error: torch raises RuntimeError),
// which the kernel's box records on the calling thread as it leaves; the runtime takes the record
// (ksbind_take_type_error, by ctypes) when the op's RuntimeError reaches it, and raises TypeError.
#pragma once

#ifndef KSBIND_NO_PYTHON
#define KSBIND_NO_PYTHON 1
#endif

#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/ScalarType.h>

#include <ksbind/call_arena.h>
#include <ksbind/cpu_capability.h>
#include <ksbind/entry_points.h>
#include <ksbind/elementwise_loops.h>
#include <ksbind/ks_value_traits.h>
#include <ksbind/number_ranges.h>
#include <ksbind/support_functions.h>
#include <ksbind/torch_support_registrations.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace ksbind {
namespace torch_stable {

using torch::stable::Tensor;
using ScalarType = torch::headeronly::ScalarType;
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
using loops::shape_text;
using loops::step_elements;

// ------------------------------------------------------------ dtypes and messages

template <class E>
struct dtype_of;
template <>
struct dtype_of<float> {
    static constexpr ScalarType value = ScalarType::Float;
    static constexpr const char* torch_name = "torch.float32";
    static constexpr const char* ks_name = "Float";
    static int32_t shim() { return aoti_torch_dtype_float32(); }
};
template <>
struct dtype_of<int> {
    static constexpr ScalarType value = ScalarType::Int;
    static constexpr const char* torch_name = "torch.int32";
    static constexpr const char* ks_name = "Integer";
    static int32_t shim() { return aoti_torch_dtype_int32(); }
};
template <>
struct dtype_of<bool> {
    static constexpr ScalarType value = ScalarType::Bool;
    static constexpr const char* torch_name = "torch.bool";
    static constexpr const char* ks_name = "Bool";
    static int32_t shim() { return aoti_torch_dtype_bool(); }
};

// The packed form's own leaves (below): sizes and Integer numbers as int64, strings as bytes.
template <>
struct dtype_of<int64_t> {
    static constexpr ScalarType value = ScalarType::Long;
    static constexpr const char* torch_name = "torch.int64";
    static constexpr const char* ks_name = "Integer (packed)";
    static int32_t shim() { return aoti_torch_dtype_int64(); }
};
template <>
struct dtype_of<uint8_t> {
    static constexpr ScalarType value = ScalarType::Byte;
    static constexpr const char* torch_name = "torch.uint8";
    static constexpr const char* ks_name = "String (packed)";
    static int32_t shim() { return aoti_torch_dtype_uint8(); }
};

inline std::string dtype_text(ScalarType t) {
    switch (t) {
        case ScalarType::Float: return "torch.float32";
        case ScalarType::Double: return "torch.float64";
        case ScalarType::Half: return "torch.float16";
        case ScalarType::BFloat16: return "torch.bfloat16";
        case ScalarType::Int: return "torch.int32";
        case ScalarType::Long: return "torch.int64";
        case ScalarType::Short: return "torch.int16";
        case ScalarType::Char: return "torch.int8";
        case ScalarType::Byte: return "torch.uint8";
        case ScalarType::Bool: return "torch.bool";
        case ScalarType::ComplexHalf: return "torch.complex32";
        case ScalarType::ComplexFloat: return "torch.complex64";
        case ScalarType::ComplexDouble: return "torch.complex128";
        default: return "dtype " + std::to_string(static_cast<int>(t));
    }
}

// A TypeError's C++ type: torch raises it as RuntimeError (above), and SharedBox::run records its
// text here, on the thread that called the op, as it leaves the kernel; the runtime takes it
// (ksbind_take_type_error, below). Hidden (-fvisibility=hidden): one record per op library.
struct type_error_exception : std::runtime_error {
    using std::runtime_error::runtime_error;
};
inline thread_local std::string t_type_error;  // the last type error a kernel of this thread raised
inline thread_local std::string t_type_error_taken;  // what ksbind_take_type_error last returned

// Out of line and cold: the kernels inline everything else (ksbind/cpu_capability.h).
[[noreturn]] KSBIND_NOINLINE inline void type_error(const std::string& where, const std::string& message) {
    throw type_error_exception("argument '" + where + "': " + message);
}

[[noreturn]] KSBIND_NOINLINE inline void value_error(const std::string& where, const std::string& message) {
    throw std::invalid_argument("argument '" + where + "': " + message);
}

// Check dtype, device and rank; make t contiguous if it is not (is_contiguous first:
// contiguous() on a contiguous tensor still costs a dispatcher call). The dispatcher has
// already resolved negative and conjugate bits and lazy zeros (its fallbacks run before
// a CPU kernel), and refused nested tensors and tensors of other devices' kernels.
template <class E>
void check_tensor(Tensor& t, int64_t rank, const char* where, const char* ks_type, bool read_expanded = false) {
    if (!t.defined()) type_error(where, std::string("expected a tensor for ks ") + ks_type + ", got an undefined tensor");
    if (t.scalar_type() != dtype_of<E>::value)
        type_error(where, std::string("expected a ") + dtype_of<E>::torch_name + " tensor for ks " + ks_type +
                              ", got " + dtype_text(t.scalar_type()) + " (convert it first, e.g. .to(" +
                              dtype_of<E>::torch_name + "))");
    if (!t.is_cpu()) value_error(where, std::string("expected a CPU tensor for ks ") + ks_type);
    if (t.dim() != rank)
        value_error(where, "expected a " + std::to_string(rank) + "-dimensional tensor for ks " + ks_type +
                               ", got shape " + shape_text(t.sizes()));
    if (t.numel() > INT_MAX)
        value_error(where, "tensor has " + std::to_string(t.numel()) + " elements; ks indexes with 32-bit ints");
    // Each dimension too: a tensor of no elements may still have one of 2^32 or more, which a ks
    // tensor's int sizes would wrap.
    for (int64_t d = 0; d < rank; ++d)
        if (t.size(d) > INT_MAX)
            value_error(where, "dimension " + std::to_string(d) + " has size " + std::to_string(t.size(d)) +
                                   "; ks tensors have 32-bit sizes (shape " + shape_text(t.sizes()) + ")");
    if (t.is_contiguous()) return;
    // The elementwise loops read an expanded tensor (stride 0) in place: copying one,
    // such as the gradient of a sum (a 0-dim tensor expanded to the result's shape),
    // would write a full-size tensor only to read it once.
    if (read_expanded && loops::dense_but_expanded(t.sizes(), t.strides())) return;
    t = torch::stable::contiguous(t);
}

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

// A new contiguous CPU tensor, from the C shim directly: the dispatcher's
// aten::empty (torch::stable::empty) costs microseconds a call more.
// The strides are on the stack up to rank 8: a small op's call would spend a tenth of its
// kernel's time on heap allocations otherwise.
template <class E>
Tensor new_tensor(const int64_t* shape, size_t rank) {
    int64_t small[8];
    std::vector<int64_t> large(rank > 8 ? rank : 0);
    int64_t* strides = rank > 8 ? large.data() : small;
    int64_t stride = 1;
    for (size_t d = rank; d-- > 0;) {
        strides[d] = stride;
        stride *= shape[d];
    }
    AtenTensorHandle handle = nullptr;
    if (aoti_torch_empty_strided(static_cast<int64_t>(rank), shape, strides, dtype_of<E>::shim(),
                                 aoti_torch_device_type_cpu(), 0, &handle) != AOTI_TORCH_SUCCESS)
        throw std::bad_alloc();
    return Tensor(handle);
}

template <class E>
Tensor new_tensor(const std::vector<int64_t>& shape) {
    return new_tensor<E>(shape.data(), shape.size());
}

// ------------------------------------------------------------ arguments

template <class T>
T view(Tensor& t, const char* where) {
    return [&]<size_t D, class E>(ks::tensor<D, E>*) {
        static const std::string ks_type = ks_type_text<T>();
        check_tensor<E>(t, D, where, ks_type.c_str());
        return T(ks_index<D>(t.sizes()), t.template mutable_data_ptr<E>());
    }(static_cast<T*>(nullptr));
}

// An argument the binding's C++ writes into (its config's mutates; the schema says Tensor(a!)):
// viewed in place, never copied, since a contiguous copy would take the write.
template <class T>
T view_written(Tensor& t, const char* where) {
    if (t.defined() && !t.is_contiguous())
        value_error(where, "this binding writes into it (mutates), and it is not contiguous: a contiguous copy "
                           "would take the write; pass a contiguous tensor");
    return view<T>(t, where);
}

template <class T, class Leaf, class Sizes>
T view_rows(ks::allocator* alloc, Leaf* data, const Sizes& sizes, size_t dim) {
    return [&]<size_t D, class E>(ks::tensor<D, E>*) {
        if constexpr (!is_ks_tensor<E>::value) {
            return T(ks_index<D>(sizes, dim), data);
        } else {
            static_assert(D == 1, "tensors of tensors cross as rank 1");
            const int n = static_cast<int>(sizes[dim]);
            int64_t stride = 1;
            for (size_t k = dim + 1; k < sizes.size(); ++k) stride *= sizes[k];
            T out = create_tensor<T>(alloc, n);
            for (int i = 0; i < n; ++i) out.data()[i] = view_rows<E>(alloc, data + i * stride, sizes, dim + 1);
            return out;
        }
    }(static_cast<T*>(nullptr));
}

// A tensor of tensors: one stacked tensor, whose rows the inner ks tensors view.
template <class T>
T stacked(ks::allocator* alloc, Tensor& t, const char* where) {
    using Leaf = typename leaf<T>::type;
    static const std::string ks_type = ks_type_text<T>();
    check_tensor<Leaf>(t, leaf<T>::rank, where, ks_type.c_str());
    return view_rows<T>(alloc, t.template mutable_data_ptr<Leaf>(), t.sizes(), 0);
}

inline int integer(int64_t v, const char* where) {
    if (numbers::exceeds_integer<int>(v))
        throw std::overflow_error(std::string("argument '") + where + "': " + numbers::integer_overflow);
    return static_cast<int>(v);
}

inline float floating(double v, const char*) { return static_cast<float>(v); }

// A differentiable Float argument, which crosses as a 0-dim float32 tensor (autograd
// gives it its gradient; the module's Python layer makes one of a number).
inline float zero_dim(Tensor& t, const char* where) {
    check_tensor<float>(t, 0, where, "Float");
    return *t.const_data_ptr<float>();
}

// ------------------------------------------------------------ the ks call of a plain op

// entry(&alloc, args...) on the kernel's arena, logged when logging is on; a failure names
// the binding (site). Out of line, and one instance per ks signature: a module's plain ops
// differ in the function they call, not in how they call it, and compiling this once per
// signature instead of inline in each kernel makes the ops' unit's compile about a quarter
// shorter (32 bindings with vjps: 64 kernels). The cost is a call through a pointer, as the
// kernels already made (NAME_ks lives in the other unit).
template <class R, class... P>
KSBIND_NOINLINE R call_entry(CallArena& arena, const CallSite& site, const char* symbol,
                             R (*entry)(ks::allocator*, P...), std::type_identity_t<P>... args) {
    if (ks::entry_points::g_logging) {
        std::cerr << symbol << "(";
        const char* sep = "";
        ((std::cerr << sep << ksbind::logged(args), sep = ", "), ...);
        std::cerr << ")" << std::endl;
    }
    return arena.call(site, false, [&] { return entry(&arena.allocator(), args...); });
}

// ------------------------------------------------------------ results

// Numbers come back as 0-dim tensors, as torch.sum's result does.
template <class E>
Tensor scalar_tensor(E v) {
    Tensor out = new_tensor<E>(nullptr, 0);
    *out.template mutable_data_ptr<E>() = v;
    return out;
}

// A ks tensor (of scalars, or of tensors of one shape) as one new tensor: one copy out of the arena.
template <size_t D, class E>
Tensor result_tensor(const ks::tensor<D, E>& t) {
    if constexpr (!is_ks_tensor<E>::value) {
        // A tensor of scalars: its shape is its ks size (on the stack, no vectors to build).
        int64_t shape[D];
        if constexpr (D == 1) {
            shape[0] = t.size();
        } else {
            [&]<size_t... I>(std::index_sequence<I...>) {
                ((shape[I] = ks::get<I>(t.size())), ...);
            }(std::make_index_sequence<D>());
        }
        Tensor out = new_tensor<E>(shape, D);
        E* dst = out.template mutable_data_ptr<E>();
        copy_leaves(t, dst);
        return out;
    }
    using T = ks::tensor<D, E>;
    using Leaf = typename leaf<T>::type;
    std::vector<int64_t> shape;
    first_shape(t, shape);
    if (!has_shape(t, shape.data()))
        throw std::invalid_argument("the result is ragged (a tensor of tensors of different shapes); the op returns "
                                    "one stacked tensor: bind it on the torch target to get a list");
    Tensor out = new_tensor<Leaf>(shape);
    Leaf* dst = out.template mutable_data_ptr<Leaf>();
    copy_leaves(t, dst);
    return out;
}

// flat(value): a std::tuple of one Tensor per leaf of a ks value.
inline std::tuple<Tensor> flat(float v) { return {scalar_tensor(v)}; }
inline std::tuple<Tensor> flat(int v) { return {scalar_tensor(v)}; }
inline std::tuple<Tensor> flat(bool v) { return {scalar_tensor(v)}; }
template <size_t D, class E>
auto flat(const ks::tensor<D, E>& t) {
    if constexpr (holds_no_scalar<E>::value) {
        return std::tuple<>();
    } else {
        return std::tuple<Tensor>(result_tensor(t));
    }
}
template <class... Ts>
auto flat(const ks::Tuple<Ts...>& t) {
    return [&]<size_t... I>(std::index_sequence<I...>) {
        return std::tuple_cat(flat(ks::get<I>(t))...);
    }(std::index_sequence_for<Ts...>());
}

// What an op returns for a result of Leaves: its one Tensor, a tuple of them, or an
// empty list (a vjp whose gradients are all ()).
template <class Leaves>
auto op_result(Leaves&& leaves) {
    constexpr size_t n = std::tuple_size_v<std::remove_cvref_t<Leaves>>;
    if constexpr (n == 0) {
        return std::vector<Tensor>();
    } else if constexpr (n == 1) {
        return std::get<0>(std::forward<Leaves>(leaves));
    } else {
        return std::forward<Leaves>(leaves);
    }
}

// ------------------------------------------------------------ packed values

// A binding whose values no op schema can say (a tensor of tuples or of strings, a string
// result...) is an op over Tensor[] both ways, its values packed depth first (the module's
// Python layer packs and unpacks them: ksbind/targets/torch/runtime/packing.py, the same order):
//   a tensor of scalars      one leaf, viewed as the kernel's parameters are
//   Float, Bool              a 0-dim float32 / bool tensor
//   Integer                  a 0-dim int64 tensor (its range checked here); int32 in results
//   String                   a 1-d uint8 tensor of its UTF-8 bytes
//   a tensor of anything else  a 1-d int64 leaf of its sizes, then each element, in order
//   a tuple                  its elements, in order
//   a value holding no scalar  nothing
class Unpacker {
  public:
    Unpacker(ks::allocator* alloc, std::vector<Tensor>& leaves) : alloc_(alloc), leaves_(leaves) {}

    template <class T>
    T next(const std::string& where) {
        if constexpr (holds_no_scalar<T>::value) {
            return T{};
        } else if constexpr (is_ks_tuple<T>::value) {
            return [&]<class... Ts>(ks::Tuple<Ts...>*) {
                return [&]<size_t... I>(std::index_sequence<I...>) {
                    // Braced: the parts are read in order (a call's arguments are not).
                    std::tuple<Ts...> parts{next<Ts>(where + "[" + std::to_string(I) + "]")...};
                    return ks::make_Tuple(std::get<I>(parts)...);
                }(std::index_sequence_for<Ts...>());
            }(static_cast<T*>(nullptr));
        } else if constexpr (is_ks_tensor<T>::value) {
            return [&]<size_t D, class E>(ks::tensor<D, E>*) -> T {
                if constexpr (std::is_arithmetic_v<E>) {
                    return view<T>(take(where), where.c_str());
                } else {
                    Tensor& sizes = take(where);
                    check_tensor<int64_t>(sizes, 1, where.c_str(), "sizes of a tensor (packed)");
                    if (sizes.size(0) != static_cast<int64_t>(D))
                        value_error(where, "expected " + std::to_string(D) + " sizes, got " +
                                               std::to_string(sizes.size(0)));
                    const int64_t* n = sizes.const_data_ptr<int64_t>();
                    int64_t count = 1;
                    for (size_t d = 0; d < D; ++d) {
                        if (n[d] < 0 || n[d] > INT_MAX) value_error(where, "a size out of range");
                        count *= n[d];
                    }
                    if (count > INT_MAX) value_error(where, "more than 2^31 elements");
                    T out = create_tensor<T>(alloc_, ks_index<D>(n));
                    for (int64_t i = 0; i < count; ++i) out.data()[i] = next<E>(where + "[" + std::to_string(i) + "]");
                    return out;
                }
            }(static_cast<T*>(nullptr));
        } else if constexpr (std::is_same_v<T, std::string>) {
            Tensor& t = take(where);
            check_tensor<uint8_t>(t, 1, where.c_str(), "String");
            return std::string(reinterpret_cast<const char*>(t.const_data_ptr<uint8_t>()), static_cast<size_t>(t.numel()));
        } else if constexpr (std::is_same_v<T, int>) {
            Tensor& t = take(where);
            check_tensor<int64_t>(t, 0, where.c_str(), "Integer");
            return integer(*t.const_data_ptr<int64_t>(), where.c_str());
        } else {
            Tensor& t = take(where);
            check_tensor<T>(t, 0, where.c_str(), dtype_of<T>::ks_name);
            return *t.template const_data_ptr<T>();
        }
    }

    // Every leaf read: more would mean the Python layer and the library disagree.
    void finish() const {
        if (next_ != leaves_.size())
            value_error("leaves", std::to_string(leaves_.size()) + " packed leaves, " + std::to_string(next_) + " read");
    }

  private:
    Tensor& take(const std::string& where) {
        if (next_ >= leaves_.size()) value_error(where, "missing from the packed leaves");
        return leaves_[next_++];
    }

    ks::allocator* alloc_;
    std::vector<Tensor>& leaves_;
    size_t next_ = 0;
};

inline void pack(float v, std::vector<Tensor>& out) { out.push_back(scalar_tensor(v)); }
inline void pack(int v, std::vector<Tensor>& out) { out.push_back(scalar_tensor(v)); }
inline void pack(bool v, std::vector<Tensor>& out) { out.push_back(scalar_tensor(v)); }
inline void pack(const std::string& v, std::vector<Tensor>& out) {
    Tensor t = new_tensor<uint8_t>({static_cast<int64_t>(v.size())});
    if (!v.empty()) std::memcpy(t.mutable_data_ptr<uint8_t>(), v.data(), v.size());
    out.push_back(t);
}
template <class... Ts>
void pack(const ks::Tuple<Ts...>& v, std::vector<Tensor>& out);
template <size_t D, class E>
void pack(const ks::tensor<D, E>& v, std::vector<Tensor>& out) {
    if constexpr (holds_no_scalar<E>::value) {
        return;
    } else if constexpr (std::is_arithmetic_v<E>) {
        out.push_back(result_tensor(v));
    } else {
        std::vector<int64_t> shape = torch_sizes<D>(v.size());
        Tensor sizes = new_tensor<int64_t>({static_cast<int64_t>(D)});
        std::copy(shape.begin(), shape.end(), sizes.mutable_data_ptr<int64_t>());
        out.push_back(sizes);
        for (int i = 0; i < v.num_elements(); ++i) pack(v.data()[i], out);
    }
}
template <class... Ts>
void pack(const ks::Tuple<Ts...>& v, std::vector<Tensor>& out) {
    [&]<size_t... I>(std::index_sequence<I...>) { (pack(ks::get<I>(v), out), ...); }(std::index_sequence_for<Ts...>());
}

template <class T>
std::vector<Tensor> packed(const T& v) {
    std::vector<Tensor> out;
    pack(v, out);
    return out;
}

// ------------------------------------------------------------ the loops' threads

// run_chunk over [begin, end) on ATen's thread pool (through the C shim: no exception
// may cross it, so the first chunk's failure is kept and rethrown here).
template <class Body>
void parallel_chunks(int64_t begin, int64_t end, int64_t grain, Body& body) {
    const size_t bytes = ksbind::arenas::arena_bytes();
    std::exception_ptr failure;
    std::mutex lock;
    torch::stable::parallel_for(begin, end, grain, [&](int64_t b, int64_t e) {
        try {
            run_chunk(body, bytes, b, e);
        } catch (...) {
            std::lock_guard<std::mutex> hold(lock);
            if (!failure) failure = std::current_exception();
        }
    });
    if (failure) std::rethrow_exception(failure);
}

// ------------------------------------------------------------ elementwise mode

// Float32 inputs broadcast against each other and read in place (ksbind/elementwise_loops.h),
// expanded ones included; the kernel's parameters hold them (a contiguous copy where the
// caller's was neither contiguous nor expanded).
template <size_t N>
loops::BroadcastShape<N> broadcast(std::array<Tensor*, N> args, const std::array<const char*, N>& names) {
    loops::BroadcastShape<N> b;
    std::array<torch::headeronly::IntHeaderOnlyArrayRef, N> sizes, strides;
    std::array<const float*, N> data;
    for (size_t i = 0; i < N; ++i) {
        Tensor& t = *args[i];
        check_tensor<float>(t, t.defined() ? t.dim() : 0, names[i], "Float (elementwise)", /*read_expanded=*/true);
        sizes[i] = t.sizes();
        strides[i] = t.strides();
        data[i] = t.template const_data_ptr<float>();
    }
    loops::broadcast_into(b, sizes, strides, data, names);
    return b;
}

// The M float32 results of f(alloc, inputs...) over the broadcast shape of the N inputs.
template <size_t N, size_t M, class F>
auto elementwise(std::array<Tensor*, N> args, const std::array<const char*, N>& names, F f) {
    loops::BroadcastShape<N> b = broadcast<N>(args, names);
    std::array<Tensor, M> outs;
    std::array<float*, M> out{};
    for (size_t k = 0; k < M; ++k) {
        outs[k] = new_tensor<float>(b.shape);
        out[k] = outs[k].template mutable_data_ptr<float>();
    }
    auto body = [&](ks::allocator* alloc, int64_t begin, int64_t end) { elementwise_chunk(b, out, f, alloc, begin, end); };
    parallel_chunks(0, b.numel, 32768, body);
    if constexpr (M == 1) {
        return outs[0];
    } else {
        return std::apply([](auto&... t) { return std::make_tuple(t...); }, outs);
    }
}

// An elementwise binding's value and its partial derivatives, as one Tuple of Floats for the
// loop's outputs (the vjp at dret = 1: a Float for one argument, a Tuple for two).
inline ks::Tuple<ks::Float, ks::Float> with_partials(ks::Float value, ks::Float partial) {
    return ks::make_Tuple(value, partial);
}
inline ks::Tuple<ks::Float, ks::Float, ks::Float> with_partials(ks::Float value, ks::Tuple<ks::Float, ks::Float> partials) {
    return ks::make_Tuple(value, ks::get<0>(partials), ks::get<1>(partials));
}

// ------------------------------------------------------------ vmap mode

template <class T>
struct Batched;

template <size_t D, class E>
struct Batched<ks::tensor<D, E>> {
    E* data = nullptr;
    int64_t batch = 0;
    int64_t stride = 0;
    typename ks::tensor<D, E>::index_type size{};

    Batched(Tensor& t, const char* where) {
        static const std::string ks_type = "(Tensor " + std::to_string(D) + " " + dtype_of<E>::ks_name + "), batched";
        check_tensor<E>(t, D + 1, where, ks_type.c_str());
        batch = t.size(0);
        stride = t.numel() / (batch ? batch : 1);
        size = ks_index<D>(t.sizes(), 1);
        data = t.template mutable_data_ptr<E>();
    }
    ks::tensor<D, E> at(int64_t i) const { return ks::tensor<D, E>(size, data + i * stride); }
    int64_t step_elements() const { return stride; }
};

template <class E>
struct BatchedScalar {
    E* data = nullptr;
    int64_t batch = 0;
    BatchedScalar(Tensor& t, const char* where) {
        static const std::string ks_type = std::string(dtype_of<E>::ks_name) + ", batched";
        check_tensor<E>(t, 1, where, ks_type.c_str());
        batch = t.size(0);
        data = t.template mutable_data_ptr<E>();
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

[[noreturn]] KSBIND_NOINLINE inline void shape_mismatch(int64_t i, const std::vector<int64_t>& got,
                                                        const std::vector<int64_t>& first) {
    throw std::invalid_argument("vmap: step " + std::to_string(i) + " returned a tensor of shape " + shape_text(got) +
                                ", step 0 returned " + shape_text(first) + "; results must have one shape to stack");
}

// loops::parallel_steps on this header's thread pool (parallel_chunks).
template <class Step>
void parallel_steps(int64_t batch, int64_t elements_per_step, Step step) {
    loops::parallel_steps([](int64_t b, int64_t e, int64_t grain, auto& body) { parallel_chunks(b, e, grain, body); },
                          batch, elements_per_step, step);
}

template <class T>
struct Stacker;

template <size_t D, class E>
struct Stacker<ks::tensor<D, E>> {
    int64_t batch;
    Tensor out;
    E* data = nullptr;
    typename ks::tensor<D, E>::index_type size{};
    explicit Stacker(int64_t b) : batch(b) {}
    void put(int64_t i, const ks::tensor<D, E>& v) {
        if (!data) {
            size = v.size();
            std::vector<int64_t> shape{batch};
            for (int64_t d : torch_sizes<D>(v.size())) shape.push_back(d);
            out = new_tensor<E>(shape);
            data = out.template mutable_data_ptr<E>();
        } else if (!(v.size() == size)) {
            shape_mismatch(i, torch_sizes<D>(v.size()), torch_sizes<D>(size));
        }
        size_t n = static_cast<size_t>(v.num_elements());
        if (n) std::memcpy(data + i * static_cast<int64_t>(n), v.data(), n * sizeof(E));
    }
    std::tuple<Tensor> result() {
        if (!data) {
            std::vector<int64_t> shape{batch};
            for (size_t d = 0; d < D; ++d) shape.push_back(0);
            out = new_tensor<E>(shape);
        }
        return {out};
    }
};

template <class E>
struct ScalarStacker {
    Tensor out;
    E* data;
    explicit ScalarStacker(int64_t b) : out(new_tensor<E>({b})), data(out.template mutable_data_ptr<E>()) {}
    void put(int64_t i, E v) { data[i] = v; }
    std::tuple<Tensor> result() { return {out}; }
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
        [&]<size_t... I>(std::index_sequence<I...>) { (std::get<I>(parts).put(i, ks::get<I>(v)), ...); }(
            std::index_sequence_for<Ts...>());
    }
    auto result() {
        return std::apply([](auto&... p) { return std::tuple_cat(p.result()...); }, parts);
    }
};

// ------------------------------------------------------------ the library's own ops

// The module's support functions (ksbind/support.py) are ops of its library, whose kernels are
// ksbind/support_functions.h's C++, registered by ksbind/torch_support_registrations.h's macros
// (generated from the table).

// ------------------------------------------------------------ boxing the kernels

// The stable ABI's boxing (torch/csrc/stable/library.h: unbox the stack's arguments, call,
// box the results), as TORCH_BOX does it, but with the kernel as an argument: one instance
// per kernel signature instead of one per kernel. TORCH_BOX(&kernel) makes the kernel a
// template argument, so each op compiled its own copy of the unboxing and boxing (and the
// kernel inlined into it), about a third of the ops' unit's code.
template <class F>
struct SharedBox;
template <class R, class... P>
struct SharedBox<R(P...)> {
    KSBIND_NOINLINE static void run(StableIValue* stack, uint64_t num_args, uint64_t num_outputs, R (*kernel)(P...)) {
        namespace d = torch::stable::detail;
        constexpr uint64_t outputs = [] {
            if constexpr (ksbind::detail::is_std_tuple<R>::value) return std::tuple_size_v<R>;
            else return 1;
        }();
        STD_TORCH_CHECK(num_args == sizeof...(P), "Registered schema has ", num_args,
                        " args, but the kernel to box has ", sizeof...(P));
        STD_TORCH_CHECK(num_outputs == outputs, "Registered schema has ", num_outputs,
                        " outputs, but the kernel to box has ", outputs);
        std::tuple<d::unbox_type_t<P>...> args = d::unbox_to_tuple<d::unbox_type_t<P>...>(stack);
        try {
            if constexpr (ksbind::detail::is_std_tuple<R>::value) {
                d::box_from_tuple(stack, std::apply(kernel, std::move(args)));
            } else {
                stack[0] = d::from<R>(std::apply(kernel, std::move(args)));
            }
        } catch (const type_error_exception& e) {
            t_type_error = e.what();  // on the calling thread, wherever the kernel's loop threw it
            throw;
        }
    }
};

}  // namespace torch_stable
}  // namespace ksbind

// The type error the last failed kernel of the calling thread raised, once (empty: none), for the
// runtime to raise as TypeError when it has the same text as the op's RuntimeError (a record left
// by a call that never reached the runtime then cannot name another error). Valid until the next
// call on this thread. Exported (the library's one such symbol; `used`: emitted though nothing here
// calls it); read by ctypes.
extern "C" __attribute__((visibility("default"), used)) inline const char* ksbind_take_type_error() noexcept {
    ksbind::torch_stable::t_type_error_taken.swap(ksbind::torch_stable::t_type_error);
    ksbind::torch_stable::t_type_error.clear();
    return ksbind::torch_stable::t_type_error_taken.c_str();
}

// KSBIND_BOX(&kernel): what TORCH_BOX(&kernel) gives (a boxed function for m.impl), as a
// one-call function per kernel into ksbind::torch_stable::SharedBox.
#define KSBIND_BOX(kernel)                                                                             \
    (+[](StableIValue* stack, uint64_t num_args, uint64_t num_outputs) {                               \
        ::ksbind::torch_stable::SharedBox<std::remove_pointer_t<decltype(kernel)>>::run(stack, num_args, \
                                                                                       num_outputs, kernel); \
    })

// The support ops every module's library defines (docs/torch.md): their schemas
// (KSBIND_STABLE_SUPPORT_SCHEMAS) and kernels (KSBIND_STABLE_SUPPORT_IMPLS_HERE) are
// ksbind/torch_support_registrations.h's, registered in the generated ops file's
// STABLE_TORCH_LIBRARY blocks: here (KSBIND_STABLE_SUPPORT_IMPLS) or, in a unit that includes
// ksbind/torch_stable_support.h, by a call into the shared support object compiled once per
// machine (ksbind/torch_stable_support.cpp).
#define KSBIND_STABLE_SUPPORT_IMPLS(m) KSBIND_STABLE_SUPPORT_IMPLS_HERE(m)
