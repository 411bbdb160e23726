// What this process may run on.
#pragma once

namespace swiglu::detail {

// Cores in this process's CPU affinity mask (what `taskset` or a container
// allows), not every core of the machine; at least 1.
int available_cores() noexcept;

}  // namespace swiglu::detail
