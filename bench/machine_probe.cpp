// Machine probe: peak f32 FMA, bf16 and int8 dot-product throughput, and
// DRAM streaming-read bandwidth.
//
// Peak FLOP/s. The loop is one inline-asm block, so the compiler can neither
// merge nor drop its chains: 12 accumulators, each its own dependency chain
// acc = acc * 1.0f + 0.0f (vfmadd213ps), all initialised to 1.0f inside the
// asm, so every value stays a normal 1.0f (uninitialised registers may hold
// denormals, which halve the rate on some cores). 12 chains cover the FMA
// latency x throughput of current x86 cores (4 cycles x 2 pipes = 8). The
// widest ISA the CPU has is picked at run time (zmm, ymm or xmm), so the
// binary runs on any x86-64.
//
// Peak bf16 and int8 rates, the same way with 14 chains of the dot-product
// instructions oneDNN's bf16 and int8 kernels are built on:
//   vdpbf16ps zmm (AVX512_BF16): 16 f32 lanes, each += 2 bf16 products:
//     64 FLOPs per instruction;
//   vpdpbusd zmm (AVX512_VNNI): 16 s32 lanes, each += 4 u8 x s8 products:
//     128 OPs per instruction.
// (14 chains cover a 5-6 cycle latency at 2 per cycle.) Each runs only when
// __builtin_cpu_supports says the CPU has the instruction; otherwise the f32
// peak stands in for that dtype and the context says so
// (peak_bf16_source: f32 (no avx512_bf16)).
//
// DRAM. A sum reduction with 8 vector accumulators over a 1 GiB buffer
// written before timing (so its pages exist); best of 3 passes. With T
// threads each reads its own slice at the same time, and the rate is all
// bytes over the time from the common start to the last thread's finish.
//
// The measurements are taken in 3 rounds (every loop and thread count once
// per round) and the best of the rounds is kept, so that a burst of activity
// from other processes doesn't spoil a value. Whole probe: ~2-3 s, mostly the
// compute loops (3 x 35 ms per loop and thread count) and writing the 1 GiB
// buffer.
#include "machine_probe.hpp"

#include <benchmark/benchmark.h>
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <thread>

namespace swiglu_bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// ---------------------------------------------------------------- FMA loops

// 12 chains x 16 lanes x 2 FLOPs per iteration.
__attribute__((target("avx512f"))) void fma_loop_avx512(std::uint64_t iters) {
    const float one = 1.0f;
    asm volatile(
        "vbroadcastss %[one], %%zmm12\n\t"      // multiplier 1.0f
        "vpxord %%zmm13, %%zmm13, %%zmm13\n\t"  // addend 0.0f
        "vmovaps %%zmm12, %%zmm0\n\t"
        "vmovaps %%zmm12, %%zmm1\n\t"
        "vmovaps %%zmm12, %%zmm2\n\t"
        "vmovaps %%zmm12, %%zmm3\n\t"
        "vmovaps %%zmm12, %%zmm4\n\t"
        "vmovaps %%zmm12, %%zmm5\n\t"
        "vmovaps %%zmm12, %%zmm6\n\t"
        "vmovaps %%zmm12, %%zmm7\n\t"
        "vmovaps %%zmm12, %%zmm8\n\t"
        "vmovaps %%zmm12, %%zmm9\n\t"
        "vmovaps %%zmm12, %%zmm10\n\t"
        "vmovaps %%zmm12, %%zmm11\n\t"
        ".p2align 5\n"
        "1:\n\t"
        "vfmadd213ps %%zmm13, %%zmm12, %%zmm0\n\t"  // zmm0 = zmm12 * zmm0 + zmm13
        "vfmadd213ps %%zmm13, %%zmm12, %%zmm1\n\t"
        "vfmadd213ps %%zmm13, %%zmm12, %%zmm2\n\t"
        "vfmadd213ps %%zmm13, %%zmm12, %%zmm3\n\t"
        "vfmadd213ps %%zmm13, %%zmm12, %%zmm4\n\t"
        "vfmadd213ps %%zmm13, %%zmm12, %%zmm5\n\t"
        "vfmadd213ps %%zmm13, %%zmm12, %%zmm6\n\t"
        "vfmadd213ps %%zmm13, %%zmm12, %%zmm7\n\t"
        "vfmadd213ps %%zmm13, %%zmm12, %%zmm8\n\t"
        "vfmadd213ps %%zmm13, %%zmm12, %%zmm9\n\t"
        "vfmadd213ps %%zmm13, %%zmm12, %%zmm10\n\t"
        "vfmadd213ps %%zmm13, %%zmm12, %%zmm11\n\t"
        "dec %[n]\n\t"
        "jnz 1b\n\t"
        "vzeroupper\n\t"
        : [n] "+r"(iters)
        : [one] "m"(one)
        : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
          "xmm11", "xmm12", "xmm13", "cc");
}

// 12 chains x 8 lanes x 2 FLOPs per iteration.
__attribute__((target("avx2,fma"))) void fma_loop_avx2(std::uint64_t iters) {
    const float one = 1.0f;
    asm volatile(
        "vbroadcastss %[one], %%ymm12\n\t"
        "vxorps %%ymm13, %%ymm13, %%ymm13\n\t"
        "vmovaps %%ymm12, %%ymm0\n\t"
        "vmovaps %%ymm12, %%ymm1\n\t"
        "vmovaps %%ymm12, %%ymm2\n\t"
        "vmovaps %%ymm12, %%ymm3\n\t"
        "vmovaps %%ymm12, %%ymm4\n\t"
        "vmovaps %%ymm12, %%ymm5\n\t"
        "vmovaps %%ymm12, %%ymm6\n\t"
        "vmovaps %%ymm12, %%ymm7\n\t"
        "vmovaps %%ymm12, %%ymm8\n\t"
        "vmovaps %%ymm12, %%ymm9\n\t"
        "vmovaps %%ymm12, %%ymm10\n\t"
        "vmovaps %%ymm12, %%ymm11\n\t"
        ".p2align 5\n"
        "1:\n\t"
        "vfmadd213ps %%ymm13, %%ymm12, %%ymm0\n\t"
        "vfmadd213ps %%ymm13, %%ymm12, %%ymm1\n\t"
        "vfmadd213ps %%ymm13, %%ymm12, %%ymm2\n\t"
        "vfmadd213ps %%ymm13, %%ymm12, %%ymm3\n\t"
        "vfmadd213ps %%ymm13, %%ymm12, %%ymm4\n\t"
        "vfmadd213ps %%ymm13, %%ymm12, %%ymm5\n\t"
        "vfmadd213ps %%ymm13, %%ymm12, %%ymm6\n\t"
        "vfmadd213ps %%ymm13, %%ymm12, %%ymm7\n\t"
        "vfmadd213ps %%ymm13, %%ymm12, %%ymm8\n\t"
        "vfmadd213ps %%ymm13, %%ymm12, %%ymm9\n\t"
        "vfmadd213ps %%ymm13, %%ymm12, %%ymm10\n\t"
        "vfmadd213ps %%ymm13, %%ymm12, %%ymm11\n\t"
        "dec %[n]\n\t"
        "jnz 1b\n\t"
        "vzeroupper\n\t"
        : [n] "+r"(iters)
        : [one] "m"(one)
        : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
          "xmm11", "xmm12", "xmm13", "cc");
}

// No FMA: 12 chains alternating acc *= 1 and acc += 0; each iteration issues
// 12 mulps and 12 addps = 24 x 4 FLOPs.
void fma_loop_sse2(std::uint64_t iters) {
    const float one = 1.0f;
    asm volatile(
        "movss %[one], %%xmm12\n\t"
        "shufps $0, %%xmm12, %%xmm12\n\t"
        "xorps %%xmm13, %%xmm13\n\t"
        "movaps %%xmm12, %%xmm0\n\t"
        "movaps %%xmm12, %%xmm1\n\t"
        "movaps %%xmm12, %%xmm2\n\t"
        "movaps %%xmm12, %%xmm3\n\t"
        "movaps %%xmm12, %%xmm4\n\t"
        "movaps %%xmm12, %%xmm5\n\t"
        "movaps %%xmm12, %%xmm6\n\t"
        "movaps %%xmm12, %%xmm7\n\t"
        "movaps %%xmm12, %%xmm8\n\t"
        "movaps %%xmm12, %%xmm9\n\t"
        "movaps %%xmm12, %%xmm10\n\t"
        "movaps %%xmm12, %%xmm11\n\t"
        ".p2align 5\n"
        "1:\n\t"
        "mulps %%xmm12, %%xmm0\n\t"
        "addps %%xmm13, %%xmm1\n\t"
        "mulps %%xmm12, %%xmm2\n\t"
        "addps %%xmm13, %%xmm3\n\t"
        "mulps %%xmm12, %%xmm4\n\t"
        "addps %%xmm13, %%xmm5\n\t"
        "mulps %%xmm12, %%xmm6\n\t"
        "addps %%xmm13, %%xmm7\n\t"
        "mulps %%xmm12, %%xmm8\n\t"
        "addps %%xmm13, %%xmm9\n\t"
        "mulps %%xmm12, %%xmm10\n\t"
        "addps %%xmm13, %%xmm11\n\t"
        "addps %%xmm13, %%xmm0\n\t"
        "mulps %%xmm12, %%xmm1\n\t"
        "addps %%xmm13, %%xmm2\n\t"
        "mulps %%xmm12, %%xmm3\n\t"
        "addps %%xmm13, %%xmm4\n\t"
        "mulps %%xmm12, %%xmm5\n\t"
        "addps %%xmm13, %%xmm6\n\t"
        "mulps %%xmm12, %%xmm7\n\t"
        "addps %%xmm13, %%xmm8\n\t"
        "mulps %%xmm12, %%xmm9\n\t"
        "addps %%xmm13, %%xmm10\n\t"
        "mulps %%xmm12, %%xmm11\n\t"
        "dec %[n]\n\t"
        "jnz 1b\n\t"
        : [n] "+r"(iters)
        : [one] "m"(one)
        : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
          "xmm11", "xmm12", "xmm13", "cc");
}

// ---------------------------------------------------------------- bf16 / int8 loops

// 14 chains of vdpbf16ps: acc (f32, 1.0f) += 1.0bf16 * 0 + 1.0bf16 * 0, so
// every accumulator stays 1.0f. 14 x 16 lanes x 2 products x 2 FLOPs per
// iteration.
__attribute__((target("avx512f,avx512bf16"))) void bf16_loop_avx512(std::uint64_t iters) {
    const float one = 1.0f;
    const std::uint32_t bf16_ones = 0x3F803F80u;  // two bf16 1.0
    asm volatile(
        "vpbroadcastd %[ones], %%zmm14\n\t"     // multiplicand: bf16 pairs of 1.0
        "vpxord %%zmm15, %%zmm15, %%zmm15\n\t"  // multiplicand: bf16 zeros
        "vbroadcastss %[one], %%zmm0\n\t"
        "vmovaps %%zmm0, %%zmm1\n\t"
        "vmovaps %%zmm0, %%zmm2\n\t"
        "vmovaps %%zmm0, %%zmm3\n\t"
        "vmovaps %%zmm0, %%zmm4\n\t"
        "vmovaps %%zmm0, %%zmm5\n\t"
        "vmovaps %%zmm0, %%zmm6\n\t"
        "vmovaps %%zmm0, %%zmm7\n\t"
        "vmovaps %%zmm0, %%zmm8\n\t"
        "vmovaps %%zmm0, %%zmm9\n\t"
        "vmovaps %%zmm0, %%zmm10\n\t"
        "vmovaps %%zmm0, %%zmm11\n\t"
        "vmovaps %%zmm0, %%zmm12\n\t"
        "vmovaps %%zmm0, %%zmm13\n\t"
        ".p2align 5\n"
        "1:\n\t"
        "vdpbf16ps %%zmm15, %%zmm14, %%zmm0\n\t"  // zmm0 += pairwise dot(zmm14, zmm15)
        "vdpbf16ps %%zmm15, %%zmm14, %%zmm1\n\t"
        "vdpbf16ps %%zmm15, %%zmm14, %%zmm2\n\t"
        "vdpbf16ps %%zmm15, %%zmm14, %%zmm3\n\t"
        "vdpbf16ps %%zmm15, %%zmm14, %%zmm4\n\t"
        "vdpbf16ps %%zmm15, %%zmm14, %%zmm5\n\t"
        "vdpbf16ps %%zmm15, %%zmm14, %%zmm6\n\t"
        "vdpbf16ps %%zmm15, %%zmm14, %%zmm7\n\t"
        "vdpbf16ps %%zmm15, %%zmm14, %%zmm8\n\t"
        "vdpbf16ps %%zmm15, %%zmm14, %%zmm9\n\t"
        "vdpbf16ps %%zmm15, %%zmm14, %%zmm10\n\t"
        "vdpbf16ps %%zmm15, %%zmm14, %%zmm11\n\t"
        "vdpbf16ps %%zmm15, %%zmm14, %%zmm12\n\t"
        "vdpbf16ps %%zmm15, %%zmm14, %%zmm13\n\t"
        "dec %[n]\n\t"
        "jnz 1b\n\t"
        "vzeroupper\n\t"
        : [n] "+r"(iters)
        : [one] "m"(one), [ones] "m"(bf16_ones)
        : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
          "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "cc");
}

// 14 chains of vpdpbusd: acc (s32, 0) += 1u8 * 0s8 x 4. 14 x 16 lanes x
// 4 products x 2 OPs per iteration.
__attribute__((target("avx512f,avx512vnni"))) void int8_loop_avx512(std::uint64_t iters) {
    const std::uint32_t u8_ones = 0x01010101u;
    asm volatile(
        "vpbroadcastd %[ones], %%zmm14\n\t"     // u8 multiplicand: 1
        "vpxord %%zmm15, %%zmm15, %%zmm15\n\t"  // s8 multiplicand: 0
        "vpxord %%zmm0, %%zmm0, %%zmm0\n\t"
        "vmovdqa32 %%zmm0, %%zmm1\n\t"
        "vmovdqa32 %%zmm0, %%zmm2\n\t"
        "vmovdqa32 %%zmm0, %%zmm3\n\t"
        "vmovdqa32 %%zmm0, %%zmm4\n\t"
        "vmovdqa32 %%zmm0, %%zmm5\n\t"
        "vmovdqa32 %%zmm0, %%zmm6\n\t"
        "vmovdqa32 %%zmm0, %%zmm7\n\t"
        "vmovdqa32 %%zmm0, %%zmm8\n\t"
        "vmovdqa32 %%zmm0, %%zmm9\n\t"
        "vmovdqa32 %%zmm0, %%zmm10\n\t"
        "vmovdqa32 %%zmm0, %%zmm11\n\t"
        "vmovdqa32 %%zmm0, %%zmm12\n\t"
        "vmovdqa32 %%zmm0, %%zmm13\n\t"
        ".p2align 5\n"
        "1:\n\t"
        "vpdpbusd %%zmm15, %%zmm14, %%zmm0\n\t"  // zmm0 += 4-way dot(u8 zmm14, s8 zmm15)
        "vpdpbusd %%zmm15, %%zmm14, %%zmm1\n\t"
        "vpdpbusd %%zmm15, %%zmm14, %%zmm2\n\t"
        "vpdpbusd %%zmm15, %%zmm14, %%zmm3\n\t"
        "vpdpbusd %%zmm15, %%zmm14, %%zmm4\n\t"
        "vpdpbusd %%zmm15, %%zmm14, %%zmm5\n\t"
        "vpdpbusd %%zmm15, %%zmm14, %%zmm6\n\t"
        "vpdpbusd %%zmm15, %%zmm14, %%zmm7\n\t"
        "vpdpbusd %%zmm15, %%zmm14, %%zmm8\n\t"
        "vpdpbusd %%zmm15, %%zmm14, %%zmm9\n\t"
        "vpdpbusd %%zmm15, %%zmm14, %%zmm10\n\t"
        "vpdpbusd %%zmm15, %%zmm14, %%zmm11\n\t"
        "vpdpbusd %%zmm15, %%zmm14, %%zmm12\n\t"
        "vpdpbusd %%zmm15, %%zmm14, %%zmm13\n\t"
        "dec %[n]\n\t"
        "jnz 1b\n\t"
        "vzeroupper\n\t"
        : [n] "+r"(iters)
        : [ones] "m"(u8_ones)
        : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
          "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "cc");
}

// ---------------------------------------------------------------- read loops
// n is a multiple of 128 floats; p is 64-byte aligned.

__attribute__((target("avx512f"))) float read_avx512(const float* p, std::size_t n) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (std::size_t i = 0; i < n; i += 128) {
        a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
        a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
        a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
        a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
        a4 = _mm512_add_ps(a4, _mm512_load_ps(p + i + 64));
        a5 = _mm512_add_ps(a5, _mm512_load_ps(p + i + 80));
        a6 = _mm512_add_ps(a6, _mm512_load_ps(p + i + 96));
        a7 = _mm512_add_ps(a7, _mm512_load_ps(p + i + 112));
    }
    a0 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                       _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, a0);
    float s = 0;
    for (float v : lanes) s += v;
    return s;
}

__attribute__((target("avx2"))) float read_avx2(const float* p, std::size_t n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (std::size_t i = 0; i < n; i += 64) {
        a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
        a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
        a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
        a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
        a4 = _mm256_add_ps(a4, _mm256_load_ps(p + i + 32));
        a5 = _mm256_add_ps(a5, _mm256_load_ps(p + i + 40));
        a6 = _mm256_add_ps(a6, _mm256_load_ps(p + i + 48));
        a7 = _mm256_add_ps(a7, _mm256_load_ps(p + i + 56));
    }
    a0 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                       _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, a0);
    float s = 0;
    for (float v : lanes) s += v;
    return s;
}

float read_sse2(const float* p, std::size_t n) {
    __m128 a0 = _mm_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (std::size_t i = 0; i < n; i += 32) {
        a0 = _mm_add_ps(a0, _mm_load_ps(p + i));
        a1 = _mm_add_ps(a1, _mm_load_ps(p + i + 4));
        a2 = _mm_add_ps(a2, _mm_load_ps(p + i + 8));
        a3 = _mm_add_ps(a3, _mm_load_ps(p + i + 12));
        a4 = _mm_add_ps(a4, _mm_load_ps(p + i + 16));
        a5 = _mm_add_ps(a5, _mm_load_ps(p + i + 20));
        a6 = _mm_add_ps(a6, _mm_load_ps(p + i + 24));
        a7 = _mm_add_ps(a7, _mm_load_ps(p + i + 28));
    }
    a0 = _mm_add_ps(_mm_add_ps(_mm_add_ps(a0, a1), _mm_add_ps(a2, a3)),
                    _mm_add_ps(_mm_add_ps(a4, a5), _mm_add_ps(a6, a7)));
    alignas(16) float lanes[4];
    _mm_store_ps(lanes, a0);
    return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

// One compute loop: runs `iters` iterations of `ops_per_iter` FLOPs (OPs).
struct ComputeLoop {
    void (*run)(std::uint64_t) = nullptr;
    double ops_per_iter = 0;
    explicit operator bool() const { return run != nullptr; }
};

struct Kernels {
    const char* isa;
    ComputeLoop fma;
    float (*read)(const float*, std::size_t);
    ComputeLoop bf16, int8;  // empty when the CPU lacks the instruction
    const char* bf16_source;
    const char* int8_source;
};

Kernels pick_kernels() {
    __builtin_cpu_init();
    Kernels k{};
    if (__builtin_cpu_supports("avx512f")) {
        k.isa = "avx512f";
        k.fma = {fma_loop_avx512, 12 * 16 * 2};
        k.read = read_avx512;
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        k.isa = "avx2+fma";
        k.fma = {fma_loop_avx2, 12 * 8 * 2};
        k.read = read_avx2;
    } else {
        k.isa = "sse2";
        k.fma = {fma_loop_sse2, 24 * 4};
        k.read = read_sse2;
    }
    const bool zmm = __builtin_cpu_supports("avx512f");
    if (zmm && __builtin_cpu_supports("avx512bf16")) {
        k.bf16 = {bf16_loop_avx512, 14 * 16 * 2 * 2};
        k.bf16_source = "vdpbf16ps zmm";
    } else {
        k.bf16_source = "f32 (no avx512_bf16)";
    }
    if (zmm && __builtin_cpu_supports("avx512vnni")) {
        k.int8 = {int8_loop_avx512, 14 * 16 * 4 * 2};
        k.int8_source = "vpdpbusd zmm";
    } else {
        k.int8_source = "f32 (no avx512_vnni)";
    }
    return k;
}

// ---------------------------------------------------------------- threads

std::vector<int> affinity_cpus() {
    std::vector<int> cpus;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &set)) cpus.push_back(c);
    return cpus;
}

// All threads leave wait() together; reusable.
class SpinBarrier {
public:
    explicit SpinBarrier(int n) : n_(n) {}
    void wait() {
        const int gen = gen_.load(std::memory_order_acquire);
        if (count_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_) {
            count_.store(0, std::memory_order_relaxed);
            gen_.fetch_add(1, std::memory_order_acq_rel);
            return;
        }
        while (gen_.load(std::memory_order_acquire) == gen) std::this_thread::yield();
    }

private:
    const int n_;
    std::atomic<int> count_{0};
    std::atomic<int> gen_{0};
};

// Runs fn(i) on `n` new threads, thread i pinned to the i-th CPU of this
// process's affinity set (mod its size); returns when all are done.
void run_pinned(int n, const std::function<void(int)>& fn) {
    static const std::vector<int> cpus = affinity_cpus();
    std::vector<std::thread> threads;
    threads.reserve(n);
    for (int i = 0; i < n; ++i) {
        threads.emplace_back([&fn, i] {
            if (!cpus.empty()) {
                cpu_set_t set;
                CPU_ZERO(&set);
                CPU_SET(cpus[std::size_t(i) % cpus.size()], &set);
                pthread_setaffinity_np(pthread_self(), sizeof set, &set);
            }
            fn(i);
        });
    }
    for (auto& t : threads) t.join();
}

volatile float g_sink = 0;

// ---------------------------------------------------------------- measurements

// Iterations of a compute loop that take about `seconds` on one thread.
std::uint64_t calibrate(const ComputeLoop& loop, double seconds) {
    std::uint64_t iters = 1 << 14;
    for (;;) {
        const auto t0 = Clock::now();
        loop.run(iters);
        const double s = seconds_since(t0);
        if (s > 0.02) return std::max<std::uint64_t>(1, std::uint64_t(double(iters) * seconds / s));
        iters *= 2;
    }
}

// Sum over T threads of each one's rate of `loop`, GFLOP/s (GOP/s); best of
// `reps` runs that all threads start together.
double measure_peak(const ComputeLoop& loop, int threads, std::uint64_t iters, int reps) {
    std::vector<double> rate(std::size_t(threads) * std::size_t(reps), 0.0);
    SpinBarrier barrier(threads);
    run_pinned(threads, [&](int i) {
        loop.run(iters / 4 + 1);  // warm up the core (clock, power state)
        for (int r = 0; r < reps; ++r) {
            barrier.wait();
            const auto t0 = Clock::now();
            loop.run(iters);
            rate[std::size_t(r) * threads + i] =
                double(iters) * loop.ops_per_iter / seconds_since(t0) * 1e-9;
        }
    });
    double best = 0;
    for (int r = 0; r < reps; ++r) {
        double sum = 0;
        for (int i = 0; i < threads; ++i) sum += rate[std::size_t(r) * threads + i];
        best = std::max(best, sum);
    }
    return best;
}

struct ReadBuffer {
    float* data = nullptr;
    std::size_t floats = 0;
    ~ReadBuffer() { std::free(data); }
};

// Allocates `bytes` (falls back to smaller sizes) and writes every page,
// each of `threads` threads its own slice.
void make_read_buffer(ReadBuffer& buf, std::size_t bytes, int threads) {
    const std::size_t align = std::size_t(2) << 20;
    while (bytes >= (std::size_t(64) << 20)) {
        buf.data = static_cast<float*>(std::aligned_alloc(align, bytes));
        if (buf.data) break;
        bytes /= 2;
    }
    if (!buf.data) return;
    madvise(buf.data, bytes, MADV_HUGEPAGE);
    buf.floats = bytes / sizeof(float);
    run_pinned(threads, [&](int i) {
        const std::size_t lo = buf.floats * std::size_t(i) / std::size_t(threads);
        const std::size_t hi = buf.floats * std::size_t(i + 1) / std::size_t(threads);
        std::fill(buf.data + lo, buf.data + hi, 1.0f);
    });
}

// All bytes read over (last finish - first start), GB/s; best of `passes`.
double measure_dram(const Kernels& k, const ReadBuffer& buf, int threads, int passes) {
    // Slices are multiples of 128 floats (the read kernels' step).
    const std::size_t blocks = buf.floats / 128;
    std::vector<Clock::time_point> start(std::size_t(threads) * passes),
        stop(std::size_t(threads) * passes);
    SpinBarrier barrier(threads);
    run_pinned(threads, [&](int i) {
        const std::size_t lo = blocks * std::size_t(i) / std::size_t(threads) * 128;
        const std::size_t hi = blocks * std::size_t(i + 1) / std::size_t(threads) * 128;
        float sum = 0;
        for (int p = 0; p < passes; ++p) {
            barrier.wait();
            start[std::size_t(p) * threads + i] = Clock::now();
            sum += k.read(buf.data + lo, hi - lo);
            stop[std::size_t(p) * threads + i] = Clock::now();
        }
        g_sink = g_sink + sum;
    });
    const double bytes = double(blocks * 128) * sizeof(float);
    double best = 0;
    for (int p = 0; p < passes; ++p) {
        auto t0 = start[std::size_t(p) * threads], t1 = stop[std::size_t(p) * threads];
        for (int i = 1; i < threads; ++i) {
            t0 = std::min(t0, start[std::size_t(p) * threads + i]);
            t1 = std::max(t1, stop[std::size_t(p) * threads + i]);
        }
        best = std::max(best, bytes / std::chrono::duration<double>(t1 - t0).count() * 1e-9);
    }
    return best;
}

std::string read_cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) == 0) {
            const auto colon = line.find(':');
            if (colon == std::string::npos) break;
            auto value = line.substr(colon + 1);
            const auto first = value.find_first_not_of(" \t");
            return first == std::string::npos ? std::string() : value.substr(first);
        }
    }
    return "unknown";
}

// Percentage of CPU time idle over `seconds`, from /proc/stat; -1 if unknown.
double cpu_idle_pct(double seconds) {
    auto sample = [](unsigned long long& idle, unsigned long long& total) {
        std::ifstream in("/proc/stat");
        std::string cpu;
        unsigned long long v[8] = {};
        if (!(in >> cpu) || cpu != "cpu") return false;
        for (auto& x : v)
            if (!(in >> x)) return false;
        idle = v[3] + v[4];  // idle + iowait
        total = 0;
        for (auto x : v) total += x;
        return true;
    };
    unsigned long long i0 = 0, t0 = 0, i1 = 0, t1 = 0;
    if (!sample(i0, t0)) return -1;
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    if (!sample(i1, t1) || t1 <= t0) return -1;
    return 100.0 * double(i1 - i0) / double(t1 - t0);
}

MachineProbe g_probe;

std::string fmt1(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
}

}  // namespace

double MachineProbe::peak(int t, swiglu::Dtype dtype) const {
    // q8_0 and q4_0 are measured against the bf16 peak: what their weights
    // would run at unpacked to bf16 (their int8 kernels are no vpdpbusd ones).
    const bool bf16_peak = dtype == swiglu::Dtype::bf16 || dtype == swiglu::Dtype::q8_0 ||
                           dtype == swiglu::Dtype::q4_0;
    const std::map<int, double>& m = bf16_peak                      ? peak_bf16_gflops
                                     : dtype == swiglu::Dtype::int8 ? peak_int8_gops
                                                                    : peak_gflops;
    if (m.empty()) return 0;
    auto it = m.upper_bound(t);
    if (it == m.begin()) return m.begin()->second;
    --it;
    return it->first == t ? it->second : it->second / it->first * t;
}

double MachineProbe::dram(int t) const {
    if (dram_gbs.empty()) return 0;
    auto it = dram_gbs.upper_bound(t);
    if (it == dram_gbs.begin()) return dram_gbs.begin()->second;
    return std::prev(it)->second;
}

const MachineProbe& machine() { return g_probe; }

const MachineProbe& run_machine_probe(int threads_default) {
    const auto t_start = Clock::now();
    const Kernels k = pick_kernels();
    MachineProbe p;
    p.cpu_model = read_cpu_model();
    p.isa = k.isa;
    p.threads_default = std::max(1, threads_default);
    p.threads = {1, 2};
    if (p.threads_default > 2) p.threads.push_back(p.threads_default);
    const int max_threads = p.threads.back();
    p.idle_pct_before = cpu_idle_pct(0.2);
    if (p.idle_pct_before >= 0 && p.idle_pct_before < 80)
        std::fprintf(stderr,
                     "swiglu_bench: warning: CPUs only %.0f%% idle before the machine probe; other "
                     "processes are running, so the probe and the benchmarks will read low\n",
                     p.idle_pct_before);

    // Three rounds, each measuring every loop and thread count once (compute:
    // best of 2 x 35 ms; DRAM: one pass over 1 GiB), and the best of the
    // rounds is kept: spreading the measurements over ~2 s lets them find a
    // quiet moment when other processes share the machine.
    p.bf16_source = k.bf16_source;
    p.int8_source = k.int8_source;
    struct Peak {
        const ComputeLoop* loop;
        std::map<int, double>* out;
        std::uint64_t iters;
    };
    std::vector<Peak> peaks = {{&k.fma, &p.peak_gflops, 0}};
    if (k.bf16) peaks.push_back({&k.bf16, &p.peak_bf16_gflops, 0});
    if (k.int8) peaks.push_back({&k.int8, &p.peak_int8_gops, 0});
    for (Peak& pk : peaks) pk.iters = calibrate(*pk.loop, 0.035);
    ReadBuffer buf;
    make_read_buffer(buf, std::size_t(1) << 30, max_threads);
    for (int round = 0; round < 3; ++round) {
        for (const Peak& pk : peaks)
            for (int t : p.threads)
                (*pk.out)[t] = std::max((*pk.out)[t], measure_peak(*pk.loop, t, pk.iters, 2));
        if (buf.data)
            for (int t : p.threads)
                p.dram_gbs[t] = std::max(p.dram_gbs[t], measure_dram(k, buf, t, 1));
    }
    // No such instruction: the f32 peak stands in (bf16_source / int8_source
    // say so).
    if (!k.bf16) p.peak_bf16_gflops = p.peak_gflops;
    if (!k.int8) p.peak_int8_gops = p.peak_gflops;
    p.seconds = seconds_since(t_start);
    p.measured = true;
    g_probe = p;
    return g_probe;
}

std::map<int, double> probe_dram_again() {
    std::map<int, double> out;
    if (!g_probe.measured) return out;
    const Kernels k = pick_kernels();
    ReadBuffer buf;
    make_read_buffer(buf, std::size_t(1) << 30, g_probe.threads.back());
    if (!buf.data) return out;
    for (int round = 0; round < 3; ++round)
        for (int t : g_probe.threads) out[t] = std::max(out[t], measure_dram(k, buf, t, 1));
    return out;
}

void add_probe_context(const MachineProbe& p) {
    benchmark::AddCustomContext("cpu_model", p.cpu_model);
    benchmark::AddCustomContext("probe_isa", p.isa);
    benchmark::AddCustomContext("swiglu_threads_default", std::to_string(p.threads_default));
    for (const auto& [t, v] : p.peak_gflops)
        benchmark::AddCustomContext("peak_fp32_gflops_" + std::to_string(t) + "t", fmt1(v));
    for (const auto& [t, v] : p.peak_bf16_gflops)
        benchmark::AddCustomContext("peak_bf16_gflops_" + std::to_string(t) + "t", fmt1(v));
    benchmark::AddCustomContext("peak_bf16_source", p.bf16_source);
    for (const auto& [t, v] : p.peak_int8_gops)
        benchmark::AddCustomContext("peak_int8_gops_" + std::to_string(t) + "t", fmt1(v));
    benchmark::AddCustomContext("peak_int8_source", p.int8_source);
    for (const auto& [t, v] : p.dram_gbs)
        benchmark::AddCustomContext("dram_read_gbs_" + std::to_string(t) + "t", fmt1(v));
    benchmark::AddCustomContext("probe_seconds", fmt1(p.seconds));
    benchmark::AddCustomContext("probe_cpu_idle_pct_before", fmt1(p.idle_pct_before));
}

void print_probe(const MachineProbe& p) {
    std::printf("cpu_model: %s\nprobe_isa: %s\nswiglu_threads_default: %d\n", p.cpu_model.c_str(),
                p.isa.c_str(), p.threads_default);
    for (const auto& [t, v] : p.peak_gflops) std::printf("peak_fp32_gflops_%dt: %.1f\n", t, v);
    for (const auto& [t, v] : p.peak_bf16_gflops) std::printf("peak_bf16_gflops_%dt: %.1f\n", t, v);
    std::printf("peak_bf16_source: %s\n", p.bf16_source.c_str());
    for (const auto& [t, v] : p.peak_int8_gops) std::printf("peak_int8_gops_%dt: %.1f\n", t, v);
    std::printf("peak_int8_source: %s\n", p.int8_source.c_str());
    for (const auto& [t, v] : p.dram_gbs) std::printf("dram_read_gbs_%dt: %.1f\n", t, v);
    std::printf("probe_seconds: %.1f\nprobe_cpu_idle_pct_before: %.1f\n", p.seconds,
                p.idle_pct_before);
}

}  // namespace swiglu_bench
