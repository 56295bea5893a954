// A hand-written torch op on PyTorch's LibTorch stable ABI (torch/csrc/stable/): the
// reference benchmarks/stable_op.py times a torch-target call against. Built with
// -DTORCH_TARGET_VERSION for torch 2.10 (0x020a...; 0x0210... would mean 2.16), it needs no
// libtorch_python, no pybind11 and no Python.h, and is loaded with torch.ops.load_library.
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/headeronly/core/ScalarType.h>
#include <torch/headeronly/util/Exception.h>

#include <vector>

using torch::stable::Tensor;

static inline float relu3(float x) { return x < 0.0f ? 0.0f : (x < 1.0f ? x * x * x / 3.0f : x - 2.0f / 3.0f); }

// A new contiguous float32 CPU tensor of x's shape, from the C shim directly: the dispatcher's
// aten::empty_like (torch::stable::empty_like) costs microseconds a call more.
static Tensor empty_float_like(const Tensor& x) {
    auto sizes = x.sizes();
    std::vector<int64_t> strides(sizes.size());
    int64_t stride = 1;
    for (size_t d = sizes.size(); d-- > 0;) {
        strides[d] = stride;
        stride *= sizes[d];
    }
    AtenTensorHandle handle = nullptr;
    STD_TORCH_CHECK(aoti_torch_empty_strided(static_cast<int64_t>(sizes.size()), sizes.data(), strides.data(),
                                             aoti_torch_dtype_float32(), aoti_torch_device_type_cpu(), 0,
                                             &handle) == AOTI_TORCH_SUCCESS, "vrelu3: could not allocate");
    return Tensor(handle);
}

template <bool shim>
Tensor vrelu3(Tensor x) {
    STD_TORCH_CHECK(x.scalar_type() == torch::headeronly::ScalarType::Float, "vrelu3: x must be float32");
    if (!x.is_contiguous()) x = torch::stable::contiguous(x);
    Tensor out = shim ? empty_float_like(x) : torch::stable::empty_like(x);
    const float* __restrict in = x.const_data_ptr<float>();
    float* __restrict o = out.mutable_data_ptr<float>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) o[i] = relu3(in[i]);
    return out;
}

// vrelu3 allocates its result as a hand-written op usually does (torch::stable::empty_like);
// vrelu3_shim through the C shim.
STABLE_TORCH_LIBRARY(ksbind_bench_stable, m) {
    m.def("vrelu3(Tensor x) -> Tensor");
    m.def("vrelu3_shim(Tensor x) -> Tensor");
}

STABLE_TORCH_LIBRARY_IMPL(ksbind_bench_stable, CPU, m) {
    m.impl("vrelu3", TORCH_BOX(&vrelu3<false>));
    m.impl("vrelu3_shim", TORCH_BOX(&vrelu3<true>));
}
