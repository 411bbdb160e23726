#include "core/shared_pool.hpp"

#include <map>
#include <mutex>

namespace swiglu::detail {

std::shared_ptr<SharedPool> shared_pool(int threads, void (*on_start)()) {
    // Never destroyed: a block in some static object may outlive any static
    // registry. The registry holds weak references, so a pool ends with the
    // last block that uses it.
    struct Registry {
        std::mutex mutex;
        std::map<int, std::weak_ptr<SharedPool>> pools;
    };
    static Registry* const registry = new Registry;
    std::lock_guard<std::mutex> lock(registry->mutex);
    std::weak_ptr<SharedPool>& slot = registry->pools[threads];
    if (std::shared_ptr<SharedPool> pool = slot.lock()) return pool;
    auto pool = std::make_shared<SharedPool>(threads, on_start);
    slot = pool;
    return pool;
}

}  // namespace swiglu::detail
