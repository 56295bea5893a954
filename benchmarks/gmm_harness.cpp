// The reference side of benchmarks/gmm_overhead.py: examples/gmm's ksc output
// (gmm.cpp, included below, compiled with the torch target's flags and in one
// unit, as ksbind's torch build compiles it with the entry points) called from
// C++ with no Python and no conversion: the data's ks views are made once.
//
//   gmm_harness DATA ARENA_BYTES
//
// DATA (written by gmm_overhead.py, little-endian): int32 n, d, k, m; float32
// gamma; then float32 x (n*d), alphas (k), means (k*d), qs (k*d), ls (k*d(d-1)/2).
// Prints "ready OBJECTIVE DX00" (to check it computes what the binding does),
// then reads counts from stdin: for each count c it makes c (objective, vjp)
// pairs, the arena reset to its mark before each call (as ksbind's CallArena
// resets it after each), and prints c lines "OBJECTIVE_S VJP_S"; EOF ends it.
#include "gmm.cpp"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace {

using Rows = ks::tensor<1, ks::tensor<1, ks::Float>>;

// A ks tensor of n rows of `width` floats viewing `data` (rows made in the arena).
Rows view_rows(ks::allocator* alloc, float* data, int n, int width) {
    Rows out = Rows::create(alloc, n);
    for (int i = 0; i < n; ++i) out.data()[i] = ks::tensor<1, ks::Float>(width, data + static_cast<size_t>(i) * width);
    return out;
}

template <class T>
void read(std::ifstream& in, T* dst, size_t count) {
    in.read(reinterpret_cast<char*>(dst), static_cast<std::streamsize>(count * sizeof(T)));
    if (!in) throw std::runtime_error("data file too short");
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::cerr << "usage: gmm_harness DATA ARENA_BYTES\n";
        return 2;
    }
    std::ifstream in(argv[1], std::ios::binary);
    int32_t header[4];
    float gamma = 0;
    read(in, header, 4);
    read(in, &gamma, 1);
    const int n = header[0], d = header[1], k = header[2], m = header[3], tri = d * (d - 1) / 2;
    std::vector<float> x(static_cast<size_t>(n) * d), alphas(k), means(static_cast<size_t>(k) * d),
        qs(static_cast<size_t>(k) * d), ls(static_cast<size_t>(k) * tri);
    for (auto* v : {&x, &alphas, &means, &qs, &ls}) read(in, v->data(), v->size());

    ks::allocator alloc(std::stoull(argv[2]));
    const Rows xs = view_rows(&alloc, x.data(), n, d), mu = view_rows(&alloc, means.data(), k, d),
               q = view_rows(&alloc, qs.data(), k, d), l = view_rows(&alloc, ls.data(), k, tri);
    const ks::tensor<1, ks::Float> a(k, alphas.data());
    const ks::Tuple<ks::Float, ks::Integer> wishart = ks::make_Tuple(gamma, m);
    const ks::alloc_mark_t mark = alloc.mark();

    auto objective = [&] {
        alloc.reset(mark);
        return ks::gmm_objective$aT1T1fT1fT1T1fT1T1fT1T1f$dfi$b(&alloc, xs, a, mu, q, l, wishart);
    };
    auto vjp = [&] {
        alloc.reset(mark);
        return ks::sufrev$gmm_objective$aT1T1fT1fT1T1fT1T1fT1T1f$dfi$b(
            &alloc, ks::make_Tuple(xs, a, mu, q, l, wishart), 1.0f);
    };

    const float value = objective();
    const float dx00 = ks::get<0>(vjp()).data()[0].data()[0];
    std::printf("ready %.9g %.9g\n", value, dx00);
    std::fflush(stdout);

    volatile float sink = 0;  // results are used: no call is optimised away
    for (std::string line; std::getline(std::cin, line);) {
        const int count = std::stoi(line);
        for (int i = 0; i < count; ++i) {
            auto start = std::chrono::steady_clock::now();
            sink = sink + objective();
            const double t_objective = seconds_since(start);
            start = std::chrono::steady_clock::now();
            sink = sink + ks::get<1>(vjp()).data()[0];
            const double t_vjp = seconds_since(start);
            std::printf("%.9g %.9g\n", t_objective, t_vjp);
        }
        std::fflush(stdout);
    }
    alloc.reset();
    return 0;
}
