// One mechanism for every kernel family (element-wise, grouped, panels, s8,
// gradients) to run this CPU's best kernels: the family registers the ISAs
// it has kernels for, each with the function in that ISA's TU that hands out
// its table, and IsaDispatch picks once, walking down the fallbacks of the
// CPU's best ISA (isa.hpp) to the first ISA registered (scalar, the
// reference, at the latest). Tests and benchmarks walk the registrations to
// compare each ISA with the reference.
//
// The families' headers declare their IsaDispatch, so per-ISA TUs include
// this one too: they must call none of its members (templates, compiled only
// where called), or they would compile inline copies with their own flags,
// which the linker may pick for every caller. Registrations, tests and
// benchmarks are baseline TUs.
#pragma once

#include <cstddef>
#include <vector>

#include "kernels/isa.hpp"

namespace swiglu::detail {

// One ISA's kernels of a family.
template <class Table>
struct IsaKernels {
    Isa isa;
    Table table;
};

// One registration: the ISA and its TU's function that returns its kernels.
template <class Table>
struct IsaEntry {
    Isa isa;
    Table (*table)() noexcept;
};

template <class Table>
class IsaDispatch {
public:
    // `entries` (static storage, one of them scalar) lists every ISA of the
    // family in this build.
    template <std::size_t N>
    explicit IsaDispatch(const IsaEntry<Table> (&entries)[N]) noexcept
        : begin_(entries), end_(entries + N), chosen_(kernels_for(pick(best_isa()))) {}

    const IsaEntry<Table>* begin() const noexcept { return begin_; }
    const IsaEntry<Table>* end() const noexcept { return end_; }

    bool has(Isa isa) const noexcept {
        for (const IsaEntry<Table>& e : *this)
            if (e.isa == isa) return true;
        return false;
    }

    // isa's own kernels; Table{} (null) where the family has none for it.
    // Calling them on a CPU without that ISA is undefined.
    Table table(Isa isa) const noexcept {
        for (const IsaEntry<Table>& e : *this)
            if (e.isa == isa) return e.table();
        return Table{};
    }

    // The ISA whose kernels run on a CPU whose best ISA is `cpu`.
    Isa pick(Isa cpu) const noexcept {
        while (cpu != Isa::scalar && !has(cpu)) cpu = isa_fallback(cpu);
        return cpu;
    }

    // This CPU's kernels and their ISA, chosen at construction.
    const IsaKernels<Table>& chosen() const noexcept { return chosen_; }

    // Every registered ISA this CPU runs, with its kernels, in entry order.
    std::vector<IsaKernels<Table>> runnable() const {
        std::vector<IsaKernels<Table>> out;
        for (const IsaEntry<Table>& e : *this)
            if (isa_available(e.isa)) out.push_back({e.isa, e.table()});
        return out;
    }

private:
    IsaKernels<Table> kernels_for(Isa isa) const noexcept { return {isa, table(isa)}; }

    const IsaEntry<Table>* begin_;
    const IsaEntry<Table>* end_;
    IsaKernels<Table> chosen_;
};

// The one IsaDispatch over a family's registrations `Entries` (an array of
// IsaEntry with static storage), built on first use: a family's dispatch()
// returns it.
template <const auto& Entries>
const auto& registered() noexcept {
    static const IsaDispatch dispatch(Entries);
    return dispatch;
}

}  // namespace swiglu::detail
