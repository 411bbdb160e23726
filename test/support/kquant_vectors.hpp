// Expected K-quant blocks for the kquant suite (test_kquant_blocks.cpp):
// ggml's own quantize_row_q{4,5,6}_K_ref and dequantize_row_q{4,5,6}_K
// (ggml d99724f, src/ggml-quants.c, compiled once with gcc -O2 for x86-64,
// no FMA, as ggml-base is built) run on the inputs below by a throwaway
// program (not kept); its blocks, in hex, and some of the values its
// decoder gave, as f32 bits.
#pragma once

#include <cstdint>

namespace swiglu::test::kquant {

// A multiple of 2^-13 in [-4, 4) from a hash of (i, seed): exact in f32.
inline float hash_unit(std::uint32_t i, std::uint32_t seed) {
    std::uint32_t h = (i + seed * 7919u) * 2654435761u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    return float(std::int32_t(h >> 16) - 32768) / 8192.0f;
}
// A bell-shaped value: the mean of four (exact).
inline float bell(std::uint32_t i, std::uint32_t seed) {
    return (hash_unit(i, seed) + hash_unit(i, seed + 1) + hash_unit(i, seed + 2) +
            hash_unit(i, seed + 3)) /
           4.0f;
}
// 512 values whose sub-blocks of 32 differ: scaled by 1/16 .. 8, all zero
// (5), all positive (9), constant -1.5 (12), one outlier of 24 (14).
inline void input_a(float* x, std::uint32_t& n) {
    static const float amp[16] = {1, 0.25f, 2, 1, 0.0625f, 0, 4, 1, 0.5f, 1, 8, 1, 0, 0.125f, 1, 3};
    n = 512;
    for (std::uint32_t i = 0; i < n; ++i) {
        const std::uint32_t s = i / 32;
        float v = bell(i, 1) * amp[s];
        if (s == 9) v = (hash_unit(i, 5) < 0 ? -hash_unit(i, 5) : hash_unit(i, 5)) + 1.0f;
        if (s == 12) v = -1.5f;
        if (s == 14 && i % 32 == 7) v = 24.0f;
        x[i] = v;
    }
}
// 256 small bell-shaped values.
inline void input_b(float* x, std::uint32_t& n) {
    n = 256;
    for (std::uint32_t i = 0; i < n; ++i) x[i] = bell(i, 11) * 0.05f;
}

struct Decoded {
    std::uint32_t index, bits;
};
struct Vector {
    const char* format;  // the GGUF type name
    void (*input)(float*, std::uint32_t&);
    const char* blocks;  // hex, as ggml stores them
    Decoded decoded[8];  // {0, 0} past the last
};

inline const Vector kVectors[] = {
    {"Q4_K",
     input_a,
     "b02506320f03d3531003d7121100ffe2ce8ea53652f9eb985748fced88ca13508a3a691843a9ce777f7861f6"
     "173984cefb3d996caa6adcde4f78a42f9d89cc7b5ac990d20d7a8a5b79cec765d3998d89050c06060b06060b"
     "090d08080b0808080d080506040e080c09090b0905080904af9a6c9b39779a8e9a983559a6258954f95253bb"
     "85b98088828b9f8b6b09743b712809340509ff4805003f486011b3abfa474757399281e18add985a4ff6e484"
     "f740c0f2e8d64176fa86b2eb9897b5958264b73248656cf5255d0bf8690bbb30a88cda3a7e49662db4893765"
     "935075bad010005010309040805080705070b020909080209060306040903050e0104090634261626102704f"
     "003172415252c142423292c25182a1a27243f2532272a212",
     {{0, 0x3fd3b000u},
      {7, 0xbeb10000u},
      {33, 0xbd010000u},
      {100, 0x3f554000u},
      {255, 0xbfb7c000u},
      {300, 0x3f9fe400u},
      {415, 0xbfc1b000u},
      {487, 0xc033d200u}}},
    {"Q5_K",
     input_a,
     "79210a320f03d4531003d6121100fff2cfd74ec45c07cfdfd4d11b579f1fdc14d71d09c984d79fd495ddd8d2"
     "485d9e4fac1c4a6ca4f3d730ae81f8db018436a01574c32196428dffffe1d2fd1f7308adf67921d762c3b7ac"
     "8eff585c290287e5b4a140c308f324b4e29b9ed9a54209010a0a0c0c070d0d07040a0101070101010c010a0d"
     "080c0209020207020b0103085f36e94672fe362e44317ab36c6a13b9f2c4c7981a93202015173f27c6020887"
     "21244734050aff4904003f486011a5ad2b000c000502244a2307262d0526ae002e2cae86268680848b2e8203"
     "2a02822ed47d8c9d6213f0b0039a2e948edab7f5dd7070e3beab80ebc40a52c61f2d682906da606592cbcbec"
     "5cac09e3c5185971520ba667ff94ce4d6a046fcb28a0ec66d02000c04080509020b02000b000805050302050"
     "40e080e0905070b0f030a050d695d2d3d115e18f0061f493a5a4819483642493a11343540485e4c653e45535",
     {{0, 0x3fbc2100u},
      {7, 0xbee89000u},
      {33, 0xbcac5000u},
      {100, 0x3f891480u},
      {255, 0xbfa55400u},
      {300, 0x3fa52800u},
      {415, 0xbfcd5000u},
      {487, 0xc04d5e00u}}},
    {"Q6_K",
     input_a,
     "61e191a4d7f1a76bd85c097ffdc2aa4004c2015d88fe1318e9cd71f499d19cc31351dc836c95bfce1c3f738f"
     "d206185c5f2c655400c42c4bbb0af89c225cfdef1d73f555ea92734db92013c1ea21c2341071ceb02f3000d4"
     "8da08e9d8b14faaf7020d0202020f0d030105030b0009020004050d0c0d090a0c0c080a040c0e0e027eb55ad"
     "58922235f99942f269966ca866d286c12459ab6557e5944dc192645bc3d043d310a39380d1e03252e0329272"
     "208283235320425041627061a3e241a3e0e207fae4d222db010100006680ee23e599a221e291375559796477"
     "1f4390062c003033b2cbc26db47c3d6ad961031f85b7d0381716c96d5f124fa4ed1667b1220f00c81690f3f3"
     "78d1d1cf79826dcc28dcd0e0100020e030004020e010e0f020e0d05070e060006010b0801010f080c0a0c22c"
     "c5b9ce24f72602d9f23f586f4b31d3189cbfa6c75847e5d51b70302f4283419656c6a593b313d1b0f125a4f2"
     "72c3627420e072a194f51261d093528191215c50606460146844282458645454e85494d4541cb4686c585c84"
     "1c8cd09c4cc4f907e7e7545df4f7080802ff80f424d8001e",
     {{0, 0x3fc86a00u},
      {7, 0xbeebc800u},
      {33, 0xbca50c00u},
      {100, 0x3f7a8480u},
      {255, 0xbfb48520u},
      {300, 0x3fa8c000u},
      {415, 0xbfc00000u},
      {487, 0xc03d0000u}}},
    {"Q4_K",
     input_b,
     "e10c4a18f0afacffbbe9ffb7f8fd06f047a86e3caf8c9cab3a211c85644289c8a65a2a09a600108be6a70755"
     "758a235752688a2cf48039b8ba6a35c49c895d94a425398c8927ad8c5d9b8f0d3c26490cc8775656a499577a"
     "788743a43a56da5179008853787c78648873917abf9977f8f6a5c8b057af7c91938ab9bfa00f3469848e9f57"
     "9e21d2d87a67964464528cb5",
     {{0, 0xbcc09000u},
      {7, 0x3d09e800u},
      {33, 0x3d5d9180u},
      {100, 0x3e2a3610u},
      {255, 0x3d70d800u}}},
    {"Q5_K",
     input_b,
     "b6084b18f1acabfffdebfff518fe2711b087cd852bfb479f9de4c1ea9c4c374b9ac1f50dd6149ccf760eac14"
     "3633c4b49e70ec886f1949788453292be8a523b16dc564127d013026fc7f1ecb0b2456bea4c01549f8007351"
     "65d55b882913ac29583b531af3405c09ab270f0b693d740891febdac4923aef6e20e874865ada6a3f40102a6"
     "d0f9e2ca11f623d56f33eff2fd5a9081af6ee8333606737f400f68d3290d2ebf2c53a4a2f4cf3d99c9a5197b",
     {{0, 0xbcef8f00u},
      {7, 0x3d28c400u},
      {33, 0x3d62bd00u},
      {100, 0x3e2dc030u},
      {255, 0x3d72f140u}}},
    {"Q6_K",
     input_b,
     "789c056ccb1fdfab05f11ed16cd5a2ed1795c4b0a732e098d63a79d383d4ca793d0b9fe01da8931a00f7ced7"
     "618b38707284efca8fab6598b0e0b903fd9831157e24cf2fa434955fc1551d511b40ee10c454789b3a1b38e5"
     "388b50c2c166cd080a35ddfb9f2b1a7583e8160f51ca0d2a88c1799066b81614eb684de573ce8782899167ae"
     "034696526e5c9e056858a641c50a1aae911ceca661a5bd2925065c291a5611019577a2474766607543f2cba0"
     "4573759675c40516659657858885651d4f5cc5b263408051398e47614e41abc4d202",
     {{0, 0xbcdece00u},
      {7, 0x3d192da0u},
      {33, 0x3d5a65e0u},
      {100, 0x3e2edc00u},
      {255, 0x3d7dd400u}}},
};

}  // namespace swiglu::test::kquant
