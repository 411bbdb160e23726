// libFuzzer target: a sharded checkpoint's index (model.safetensors.index.json)
// from hostile bytes.
//
// Whatever the input, reading it either succeeds or throws swiglu::Error
// (invalid_argument) with a one-line message that starts with the index's
// label. An index that reads must name every tensor once, each mapped to a
// plain file name; discovery and loading over it (its shards are absent
// here) must end in a one-line invalid_argument error or, for a name no
// shard is asked for, succeed without mapping anything. Anything else (a
// crash, a sanitizer report, another exception, a broken invariant) aborts,
// and libFuzzer keeps the input.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include <swiglu/checkpoint.hpp>
#include <swiglu/swiglu.hpp>

#include "io/checkpoint_files.hpp"
#include "io/checkpoint_loader.hpp"

#include "fuzz_checks.hpp"

namespace {

using fuzz::broken;
using fuzz::check_message;
using fuzz::kLabel;
using swiglu::Error;
using swiglu::Status;
using swiglu::detail::CheckpointFiles;

void load(const CheckpointFiles& files, const swiglu::WeightSelector& selector) {
    try {
        swiglu::detail::load_weights(files, selector);
        broken("a block loaded from shards that do not exist");
    } catch (const Error& e) {
        check_message(e, false);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    std::optional<CheckpointFiles> files;
    try {
        files.emplace(CheckpointFiles::from_index(text, "/nonexistent-swiglu-fuzz", kLabel));
    } catch (const Error& e) {
        check_message(e, false);
        return 0;
    }
    std::string_view previous;
    for (std::string_view name : files->names()) {
        if (!files->has(name)) broken("a listed name is not found");
        if (!previous.empty() && !(previous < name)) broken("names not sorted and unique");
        previous = name;
    }
    if (files->has("\x01no such tensor") || files->find("\x01no such tensor"))
        broken("found a name that is not there");
    try {
        for (const swiglu::BlockInfo& b : swiglu::detail::list_blocks(*files))
            if (b.problem.empty()) broken("a block listed as loadable without its shards");
    } catch (const Error& e) {
        check_message(e, false);
    }
    load(*files, {});
    load(*files, {0, "", -1});
    load(*files, {0, "", 1});
    load(*files, {-1, "model.layers.0.mlp.", -1});
    if (files->shards_mapped() != 0) broken("a shard mapped that does not exist");
    return 0;
}
