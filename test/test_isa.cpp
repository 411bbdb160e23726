// The ISA table (kernels/isa.hpp) and the families' dispatch
// (kernels/isa_dispatch.hpp): fallbacks, availability, and each family's
// choice of this CPU's kernels.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "kernels/bf16_gemv.hpp"
#include "kernels/gradient_gemm.hpp"
#include "kernels/grouped_gemm.hpp"
#include "kernels/kernel_table.hpp"
#include "kernels/panel_gemm.hpp"
#include "kernels/s8_gemm.hpp"

using namespace swiglu::detail;

namespace {

// The family's choice is the widest ISA it registers that this CPU runs, and
// the one its fallback walk from this CPU's best ISA meets.
template <class Table>
void check_choice(const IsaDispatch<Table>& dispatch) {
    Isa widest = Isa::scalar;
    for (const IsaEntry<Table>& e : dispatch)
        if (isa_available(e.isa) && e.isa > widest) widest = e.isa;
    CAPTURE(isa_name(widest));
    CHECK(dispatch.chosen().isa == widest);
    CHECK(dispatch.pick(best_isa()) == widest);
    CHECK(dispatch.has(Isa::scalar));
    CHECK(dispatch.runnable().size() >= 1);
}

}  // namespace

TEST_SUITE("isa") {

TEST_CASE("each ISA falls back to a narrower one and runs only where it does") {
    std::set<std::string> names;
    for (Isa isa : kIsas) {
        const IsaInfo& info = isa_info(isa);
        CAPTURE(info.name);
        CHECK(info.isa == isa);
        CHECK(names.insert(info.name).second);
        if (isa == Isa::scalar) {
            CHECK(info.fallback == Isa::scalar);
            CHECK(isa_available(isa));
            continue;
        }
        CHECK(info.fallback < isa);
        if (isa_available(isa)) CHECK(isa_available(info.fallback));
    }
    CHECK(isa_available(best_isa()));
    for (Isa isa : kIsas)
        if (isa > best_isa()) CHECK(!isa_available(isa));
    MESSAGE("best ISA: " << std::string(isa_name(best_isa())));
}

TEST_CASE("every family runs the widest ISA it registers that this CPU runs") {
    check_choice(kernel_dispatch());
    check_choice(grouped_dispatch());
    check_choice(panel_dispatch());
    check_choice(gradient_dispatch());
    check_choice(s8_dispatch());
    // The int8 mode's s8 kernel is never the reference.
    CHECK((s8_gemm() == nullptr) == (s8_dispatch().chosen().isa == Isa::scalar));
    check_choice(bf16_gemv_dispatch());
    // The bf16 mode's one-row kernel is never the reference either.
    CHECK((bf16_gemv() == nullptr) == (bf16_gemv_dispatch().chosen().isa == Isa::scalar));
    CHECK(bf16_gemv_dispatch().pick(Isa::avx512_vnni) == Isa::avx512);
    // AVX-512 CPUs without VNNI run AVX2's grouped kernels.
    CHECK(grouped_dispatch().pick(Isa::avx512) == Isa::avx2_fma);
    CHECK(grouped_dispatch().pick(Isa::avx512_vnni) == Isa::avx512_vnni);
    CHECK(panel_dispatch().pick(Isa::sse2) == Isa::scalar);
    CHECK(panel_dispatch().pick(Isa::avx512_vnni) == Isa::avx512);
}

#if SWIGLU_X86
TEST_CASE("the AVX-512 VNNI grouped kernels unpack with AVX2's") {
    const GroupedKernels vnni = grouped_kernels(Isa::avx512_vnni);
    const GroupedKernels avx2 = grouped_kernels(Isa::avx2_fma);
    const bool same = vnni.q8_0.unpack == avx2.q8_0.unpack && vnni.q4_0.unpack == avx2.q4_0.unpack;
    CHECK(same);
    const bool own_gemms = vnni.q8_0.gemm != avx2.q8_0.gemm && vnni.q4_0.gemm != avx2.q4_0.gemm;
    CHECK(own_gemms);
}
#endif

}  // TEST_SUITE("isa")
