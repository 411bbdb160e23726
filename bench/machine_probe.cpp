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
// (14 chains cover a 5-6 cycle latency at 2 per cycle.) Without VNNI the
// int8 peak is that of AVX2's three-instruction dot product (int8_loop_avx2).
// Each runs only when __builtin_cpu_supports says the CPU has the
// instructions; otherwise the f32 peak stands in for that dtype and the
// context says so (peak_bf16_source: f32 (no avx512_bf16)).
//
// DRAM: read_probe.hpp's streaming read of a 1 GiB buffer (1, 2 or 4
// streams per thread, the best kept).
//
// The measurements are taken in 3 rounds (every loop and thread count once
// per round) and the best of the rounds is kept, so that a burst of activity
// from other processes doesn't spoil a value. Whole probe: ~4 s, mostly the
// compute loops (3 x 35 ms per loop and thread count), writing the 1 GiB
// buffer and reading it 3 x 3 times per thread count.
#include "machine_probe.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <thread>

#include "pinned_threads.hpp"
#include "read_probe.hpp"

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

// Without VNNI an int8 dot product with 32-bit sums is three instructions
// (oneDNN's AVX2 int8 kernels and ggml's are built on them): vpmaddubsw
// (u8 x s8 pairs -> s16), vpmaddwd by ones (s16 pairs -> s32), vpaddd. Six
// chains: acc (s32, 0) += 4-way dot(1u8, 0s8). 6 x 32 products x 2 OPs per
// iteration. Both multiplies share the vector multiply ports, so this is
// half of what vpmaddubsw alone could issue.
__attribute__((target("avx2"))) void int8_loop_avx2(std::uint64_t iters) {
    asm volatile(
        "vpcmpeqb %%ymm14, %%ymm14, %%ymm14\n\t"
        "vpabsb %%ymm14, %%ymm14\n\t"          // u8 multiplicand: 1
        "vpxor %%ymm15, %%ymm15, %%ymm15\n\t"  // s8 multiplicand: 0
        "vpcmpeqw %%ymm13, %%ymm13, %%ymm13\n\t"
        "vpabsw %%ymm13, %%ymm13\n\t"  // s16 ones
        "vpxor %%ymm0, %%ymm0, %%ymm0\n\t"
        "vmovdqa %%ymm0, %%ymm1\n\t"
        "vmovdqa %%ymm0, %%ymm2\n\t"
        "vmovdqa %%ymm0, %%ymm3\n\t"
        "vmovdqa %%ymm0, %%ymm4\n\t"
        "vmovdqa %%ymm0, %%ymm5\n\t"
        ".p2align 5\n"
        "1:\n\t"
        "vpmaddubsw %%ymm15, %%ymm14, %%ymm6\n\t"
        "vpmaddubsw %%ymm15, %%ymm14, %%ymm7\n\t"
        "vpmaddubsw %%ymm15, %%ymm14, %%ymm8\n\t"
        "vpmaddubsw %%ymm15, %%ymm14, %%ymm9\n\t"
        "vpmaddubsw %%ymm15, %%ymm14, %%ymm10\n\t"
        "vpmaddubsw %%ymm15, %%ymm14, %%ymm11\n\t"
        "vpmaddwd %%ymm13, %%ymm6, %%ymm6\n\t"
        "vpmaddwd %%ymm13, %%ymm7, %%ymm7\n\t"
        "vpmaddwd %%ymm13, %%ymm8, %%ymm8\n\t"
        "vpmaddwd %%ymm13, %%ymm9, %%ymm9\n\t"
        "vpmaddwd %%ymm13, %%ymm10, %%ymm10\n\t"
        "vpmaddwd %%ymm13, %%ymm11, %%ymm11\n\t"
        "vpaddd %%ymm6, %%ymm0, %%ymm0\n\t"
        "vpaddd %%ymm7, %%ymm1, %%ymm1\n\t"
        "vpaddd %%ymm8, %%ymm2, %%ymm2\n\t"
        "vpaddd %%ymm9, %%ymm3, %%ymm3\n\t"
        "vpaddd %%ymm10, %%ymm4, %%ymm4\n\t"
        "vpaddd %%ymm11, %%ymm5, %%ymm5\n\t"
        "dec %[n]\n\t"
        "jnz 1b\n\t"
        "vzeroupper\n\t"
        : [n] "+r"(iters)
        :
        : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
          "xmm11", "xmm13", "xmm14", "xmm15", "cc");
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
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        k.isa = "avx2+fma";
        k.fma = {fma_loop_avx2, 12 * 8 * 2};
    } else {
        k.isa = "sse2";
        k.fma = {fma_loop_sse2, 24 * 4};
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
    } else if (__builtin_cpu_supports("avx2")) {
        k.int8 = {int8_loop_avx2, 6 * 32 * 2};
        k.int8_source = "vpmaddubsw+vpmaddwd+vpaddd ymm";
    } else {
        k.int8_source = "f32 (no avx2)";
    }
    return k;
}

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

// Scaling of the f32 peak over threads (T threads / (T x 1 thread)) below
// which the probe keeps measuring: idle cores of the machines here read
// 0.98-1.01 (2 threads against 1: 204 / 103, 233 / 117, 423 / 212 GFLOP/s).
constexpr double kFullScaling = 0.85;

std::string fmt(double v, int decimals = 1) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

}  // namespace

double MachineProbe::peak(int t, swiglu::Dtype dtype) const {
    // GGUF's block formats (q8_0, q4_0, the K-quants) multiply s8 quants:
    // their kernels are int8 dot products, so the int8 peak bounds them.
    const bool int8_peak = dtype == swiglu::Dtype::int8 || swiglu::is_block_dtype(dtype);
    const std::map<int, double>& m = int8_peak                      ? peak_int8_gops
                                     : dtype == swiglu::Dtype::bf16 ? peak_bf16_gflops
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
    DramReader dram(max_threads);
    for (int round = 0; round < 3; ++round) {
        for (const Peak& pk : peaks)
            for (int t : p.threads)
                (*pk.out)[t] = std::max((*pk.out)[t], measure_peak(*pk.loop, t, pk.iters, 2));
        if (dram)
            for (int t : p.threads) p.dram_gbs[t] = std::max(p.dram_gbs[t], dram.measure(t));
    }
    // A shared host can hold one of our cores for seconds: the f32 peak of
    // T threads then reads about that of one, and every T-thread row's % of
    // the peak is against that low figure (a row that later gets both cores
    // reads over 100 %). More rounds of the compute peaks, up to ~3 s, look
    // for a moment with all cores; if none comes, the context says so
    // (probe_cores_scaling).
    // Not fixed up to T x one thread: where the vCPUs are SMT siblings of one
    // core, 2 threads legitimately add little.
    const auto scaling = [&] {
        double worst = 1;
        for (int t : p.threads)
            if (t > 1) worst = std::min(worst, p.peak_gflops[t] / (t * p.peak_gflops[1]));
        return worst;
    };
    const auto t_extra = Clock::now();
    while (scaling() < kFullScaling && seconds_since(t_extra) < 3.0)
        for (const Peak& pk : peaks)
            for (int t : p.threads)
                if (t > 1)
                    (*pk.out)[t] = std::max((*pk.out)[t], measure_peak(*pk.loop, t, pk.iters, 2));
    p.cores_scaling = scaling();
    if (p.cores_scaling < kFullScaling)
        std::fprintf(stderr,
                     "swiglu_bench: warning: T threads reached only %.0f%% of T x one thread's "
                     "f32 peak in the probe (probe_cores_scaling): the host is running something "
                     "else on our cores (or they are SMT siblings), so %% of peak on more than "
                     "one thread is against a low figure\n",
                     100 * p.cores_scaling);
    // No such instruction: the f32 peak stands in (bf16_source / int8_source
    // say so).
    if (!k.bf16) p.peak_bf16_gflops = p.peak_gflops;
    if (!k.int8) p.peak_int8_gops = p.peak_gflops;
    p.dram_streams = dram.best_streams();
    p.seconds = seconds_since(t_start);
    p.measured = true;
    g_probe = p;
    return g_probe;
}

std::map<int, double> probe_dram_again() {
    std::map<int, double> out;
    if (!g_probe.measured) return out;
    DramReader dram(g_probe.threads.back());
    if (!dram) return out;
    for (int round = 0; round < 3; ++round)
        for (int t : g_probe.threads) out[t] = std::max(out[t], dram.measure(t));
    return out;
}

void add_probe_context(const MachineProbe& p) {
    benchmark::AddCustomContext("cpu_model", p.cpu_model);
    benchmark::AddCustomContext("probe_isa", p.isa);
    benchmark::AddCustomContext("swiglu_threads_default", std::to_string(p.threads_default));
    for (const auto& [t, v] : p.peak_gflops)
        benchmark::AddCustomContext("peak_fp32_gflops_" + std::to_string(t) + "t", fmt(v));
    for (const auto& [t, v] : p.peak_bf16_gflops)
        benchmark::AddCustomContext("peak_bf16_gflops_" + std::to_string(t) + "t", fmt(v));
    benchmark::AddCustomContext("peak_bf16_source", p.bf16_source);
    for (const auto& [t, v] : p.peak_int8_gops)
        benchmark::AddCustomContext("peak_int8_gops_" + std::to_string(t) + "t", fmt(v));
    benchmark::AddCustomContext("peak_int8_source", p.int8_source);
    for (const auto& [t, v] : p.dram_gbs)
        benchmark::AddCustomContext("dram_read_gbs_" + std::to_string(t) + "t", fmt(v));
    benchmark::AddCustomContext("dram_read_streams", std::to_string(p.dram_streams));
    benchmark::AddCustomContext("probe_seconds", fmt(p.seconds));
    benchmark::AddCustomContext("probe_cpu_idle_pct_before", fmt(p.idle_pct_before));
    benchmark::AddCustomContext("probe_cores_scaling", fmt(p.cores_scaling, 2));
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
    std::printf("dram_read_streams: %d\n", p.dram_streams);
    std::printf("probe_seconds: %.1f\nprobe_cpu_idle_pct_before: %.1f\n", p.seconds,
                p.idle_pct_before);
    std::printf("probe_cores_scaling: %.2f\n", p.cores_scaling);
}

}  // namespace swiglu_bench
