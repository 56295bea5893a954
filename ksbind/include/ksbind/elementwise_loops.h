// The torch target's loops over raw pointers (ksbind/torch_stable.h gives them the stable
// ABI's tensors and its thread pool, parallel_chunks): the broadcast of the inputs' shapes, the
// elementwise loops, the worker threads' arenas and the vmap mode's steps, which touch no
// tensor. Plain C++: no tensor library.
#pragma once

#include <knossos.h>
#include <ksbind/call_arena.h>       // arenas::SizedArena, rethrow_ks_failure, g_logging
#include <ksbind/cpu_capability.h>   // cpu::run

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ksbind {
namespace loops {

template <class Sizes>
std::string shape_text(const Sizes& sizes) {
    std::string s = "[";
    for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
    return s + "]";
}

// Float inputs broadcast against each other and read in place: no input is expanded into a
// copy. Each input is dense but for dimensions of stride 0 (an expanded tensor, such as the
// gradient autograd gives the result of a sum: `dense_but_expanded`); its element strides
// over the broadcast shape are 0 along broadcast and expanded dimensions. Dimensions are
// merged wherever every input allows, so same-shaped inputs are one flat dimension and
// (1000, 1) with (1, 1000) is two: 1000 rows of 1000, the first input constant along each row.
template <size_t N>
struct BroadcastShape {
    std::array<const float*, N> data{};
    std::vector<int64_t> shape;  // the result's shape
    int64_t numel = 1;
    std::vector<int64_t> dims;                    // merged, outermost first; never empty
    std::array<std::vector<int64_t>, N> strides;  // per input, per merged dimension
};

// Whether a tensor of these sizes and element strides is read in place by the loops below:
// each dimension of size above 1 has stride 0 or the stride a contiguous tensor of the
// remaining dimensions would have. Contiguous tensors and expanded ones (of a contiguous
// tensor) are; transposed and sliced ones are not (their caller copies them first).
template <class Sizes>
bool dense_but_expanded(const Sizes& sizes, const Sizes& strides) {
    int64_t dense = 1;
    for (size_t k = sizes.size(); k-- > 0;) {
        if (sizes[k] == 1 || strides[k] == 0) continue;
        if (strides[k] != dense) return false;
        dense *= sizes[k];
    }
    return true;
}

// The broadcast of N inputs (their sizes, element strides and data; each input
// `dense_but_expanded`); a shape that does not broadcast is std::invalid_argument
// (ValueError) naming the argument.
template <size_t N, class Sizes>
void broadcast_into(BroadcastShape<N>& b, const std::array<Sizes, N>& sizes, const std::array<Sizes, N>& element_strides,
                    const std::array<const float*, N>& data, const std::array<const char*, N>& names) {
    for (size_t i = 0; i < N; ++i) {
        const Sizes& s = sizes[i];
        // Right-aligned broadcasting, as torch does.
        std::vector<int64_t> merged(std::max(b.shape.size(), static_cast<size_t>(s.size())), 1);
        for (size_t k = 0; k < merged.size(); ++k) {
            int64_t a = k < b.shape.size() ? b.shape[b.shape.size() - 1 - k] : 1;
            int64_t c = k < s.size() ? s[s.size() - 1 - k] : 1;
            if (a != c && a != 1 && c != 1)
                throw std::invalid_argument(std::string("argument '") + names[i] + "': shape " + shape_text(s) +
                                            " does not broadcast with shape " + shape_text(b.shape));
            merged[merged.size() - 1 - k] = a == 1 ? c : a;
        }
        b.shape = merged;
    }
    for (int64_t d : b.shape) b.numel *= d;
    const size_t rank = b.shape.size();
    std::array<std::vector<int64_t>, N> full;  // strides over every dimension of the shape
    for (size_t i = 0; i < N; ++i) {
        b.data[i] = data[i];
        const Sizes& s = sizes[i];
        const Sizes& st = element_strides[i];
        full[i].assign(rank, 0);
        for (size_t k = 0; k < static_cast<size_t>(s.size()); ++k) {  // innermost first
            const size_t at = s.size() - 1 - k;
            full[i][rank - 1 - k] = s[at] == 1 ? 0 : st[at];
        }
    }
    // Merge dimension d into the one inside it when every input steps through both as
    // through one; dimensions of size 1 go.
    for (size_t d = 0; d < rank; ++d) {
        if (b.shape[d] == 1) continue;
        bool merge = !b.dims.empty();
        for (size_t i = 0; merge && i < N; ++i) merge = b.strides[i].back() == full[i][d] * b.shape[d];
        if (merge) {
            b.dims.back() *= b.shape[d];
            for (size_t i = 0; i < N; ++i) b.strides[i].back() = full[i][d];
        } else {
            b.dims.push_back(b.shape[d]);
            for (size_t i = 0; i < N; ++i) b.strides[i].push_back(full[i][d]);
        }
    }
    if (b.dims.empty()) {  // one element (or a 0-dim tensor)
        b.dims.push_back(1);
        for (size_t i = 0; i < N; ++i) b.strides[i].push_back(0);
    }
}

// The inner loop: n elements along the innermost merged dimension, input k read with
// stride bit k of Mask (1: contiguous, 0: constant). A loop per stride pattern, so the
// compiler sees each stride and vectorises.
template <unsigned Mask, size_t N, size_t M, class F, size_t... I>
inline void elementwise_row(F& f, ks::allocator* alloc, const std::array<const float*, N>& in,
                            const std::array<float*, M>& out, int64_t n, std::index_sequence<I...>) {
    const float* p[N] = {in[I]...};
    float* o[M];
    for (size_t k = 0; k < M; ++k) o[k] = out[k];
    for (int64_t j = 0; j < n; ++j) {
        auto r = f(alloc, p[I][((Mask >> I) & 1u) ? j : 0]...);
        if constexpr (M == 1) {
            o[0][j] = r;
        } else {
            [&]<size_t... K>(std::index_sequence<K...>) { ((o[K][j] = ks::get<K>(r)), ...); }(std::make_index_sequence<M>());
        }
    }
}

// Elements [begin, end) of the result: row by row of the innermost merged dimension.
template <size_t N, size_t M, class F>
void elementwise_chunk(const BroadcastShape<N>& b, const std::array<float*, M>& out, F& f, ks::allocator* alloc,
                       int64_t begin, int64_t end) {
    const size_t outer = b.dims.size() - 1;
    const int64_t inner = b.dims[outer];
    unsigned mask = 0;
    for (size_t k = 0; k < N; ++k) mask |= (b.strides[k][outer] == 1 ? 1u : 0u) << k;
    for (int64_t i = begin; i < end;) {
        int64_t pos = i % inner, row = i / inner;
        std::array<const float*, N> in;
        for (size_t k = 0; k < N; ++k) in[k] = b.data[k] + pos * b.strides[k][outer];
        for (size_t d = outer; d-- > 0;) {  // the row's index in each outer dimension
            const int64_t index = row % b.dims[d];
            row /= b.dims[d];
            for (size_t k = 0; k < N; ++k) in[k] += index * b.strides[k][d];
        }
        const int64_t n = std::min(inner - pos, end - i);
        std::array<float*, M> o;
        for (size_t k = 0; k < M; ++k) o[k] = out[k] + i;
        [&]<unsigned... Masks>(std::integer_sequence<unsigned, Masks...>) {
            ((mask == Masks ? (elementwise_row<Masks>(f, alloc, in, o, n, std::make_index_sequence<N>()), true)
                            : false) || ...);
        }(std::make_integer_sequence<unsigned, (1u << N)>());
        i += n;
    }
}

// vmap mode: every batched argument must have the same leading size (ValueError naming the
// one that differs).
inline int64_t batch_size(std::initializer_list<std::pair<int64_t, const char*>> sizes) {
    int64_t b = -1;
    const char* first = nullptr;
    for (auto& [n, name] : sizes) {
        if (b < 0) {
            b = n;
            first = name;
        } else if (n != b) {
            throw std::invalid_argument(std::string("argument '") + name + "': batch size " + std::to_string(n) +
                                        " differs from argument '" + first + "' (" + std::to_string(b) + ")");
        }
    }
    return b < 0 ? 0 : b;
}

// How many elements the steps of one batched argument see (the most of all: it sizes the
// chunks of the steps run in parallel).
inline int64_t step_elements(std::initializer_list<int64_t> sizes) {
    int64_t n = 1;
    for (int64_t s : sizes) n = std::max(n, s);
    return n;
}

// ks code run on ATen's worker threads (elementwise and vmap modes) cannot share the module's
// arena: each thread gets its own, as big as the module's (re-made when set_arena_bytes
// changes that), reset after every chunk. Allocating reserves address space; pages are
// touched only when ks code allocates.
//
// The same kind of arena as a call's (ksbind/call_arena.h: arenas::SizedArena), but not the
// thread's call arena (arenas::this_thread()): the calling thread runs chunks too, inside its
// call, whose arena holds the call's arguments (a chunk would have less room there than on any
// other thread) and whose destructors must not adopt a chunk's values, which are gone when it ends.
inline ks::allocator& worker_allocator(size_t bytes) {
    thread_local arenas::SizedArena arena;
    arena.resize(bytes);  // free first: nothing views a worker arena between chunks
    return *arena.alloc;
}

// body(alloc, begin, end) for one chunk, in this thread's arena, compiled for the selected CPU
// capability (ksbind/cpu_capability.h); the arena is reset afterwards (also when the chunk
// fails: a full worker arena is a MemoryError, as for the module's arena).
template <class Body>
void run_chunk(Body& body, size_t bytes, int64_t begin, int64_t end) {
    ks::allocator& alloc = worker_allocator(bytes);
    const auto mark = alloc.mark();
    // What ks code writes to std::cerr on this worker reaches stderr only with logging on;
    // the caller's thread names the failure (ksbind/ks_failure.h).
    StderrCapture captured(ks::entry_points::g_logging.load(std::memory_order_relaxed));
    try {
        ksbind::cpu::run(body, &alloc, begin, end);
    } catch (...) {
        rethrow_ks_failure(alloc, mark, bytes);
    }
    alloc.reset(mark);
}

// step(alloc, i) for every i in [0, batch): step 0 on the calling thread (it fixes the stacked
// result's shape), the others through parallel_chunks(begin, end, grain, body) (the header's
// thread pool) in chunks of about 32768 elements of the batched arguments; each chunk in its
// thread's arena, each step's temporaries freed before the next; compiled for the selected CPU
// capability, with the ks function inlined.
template <class ParallelChunks, class Step>
void parallel_steps(const ParallelChunks& parallel_chunks, int64_t batch, int64_t elements_per_step, Step step) {
    if (batch <= 0) return;
    auto body = [&](ks::allocator* alloc, int64_t begin, int64_t end) {
        const auto mark = alloc->mark();
        for (int64_t i = begin; i < end; ++i) {
            step(alloc, i);
            alloc->reset(mark);
        }
    };
    run_chunk(body, ksbind::arenas::arena_bytes(), 0, 1);
    parallel_chunks(1, batch, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, elements_per_step)), body);
}

}  // namespace loops
}  // namespace ksbind
