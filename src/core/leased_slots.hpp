// N slots of per-call scratch that concurrent calls lease, one each: a busy
// flag per slot, taken with one atomic exchange and given back when the call
// ends (normally or by an exception). Calls never share scratch and never
// wait on each other; a call that finds every slot busy pays for a Scratch
// of its own. What Ffn, Experts and MoeLayer keep so that, after a shape's
// first call, their calls allocate nothing (where no other call holds the
// slot meanwhile).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>

namespace swiglu::detail {

template <class Scratch, std::size_t N>
class LeasedSlots {
public:
    // Runs run(scratch) on the first free slot at or after `first`, else on
    // a Scratch made for this call alone.
    template <class Run>
    void lease(Run&& run, std::size_t first = 0) const {
        for (std::size_t i = first; i < N; ++i) {
            Slot& slot = slots_[i];
            if (slot.busy.exchange(true, std::memory_order_acquire)) continue;
            struct Release {
                Slot& slot;
                ~Release() { slot.busy.store(false, std::memory_order_release); }
            } release{slot};
            run(slot.scratch);
            return;
        }
        Scratch own;
        run(own);
    }
    // Slot i's scratch without its flag: for a caller that holds a lock of
    // its own on it (Ffn's slot 0 belongs to whoever claimed the pool).
    Scratch& unleased(std::size_t i) const { return slots_[i].scratch; }

private:
    struct Slot {
        std::atomic<bool> busy{false};
        Scratch scratch;
    };
    mutable std::array<Slot, N> slots_;
};

}  // namespace swiglu::detail
