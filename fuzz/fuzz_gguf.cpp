// libFuzzer target: a GGUF file from hostile bytes.
//
// Whatever the input, opening it either succeeds or throws swiglu::Error
// (invalid_argument) with a one-line message that starts with the file's
// label. A file that opens must be self-consistent (its known tensors lie
// inside the input, in rows of whole blocks), each readable tensor must
// decode in full, and discovery and loading over it must give weights of
// the shapes they claim or a one-line invalid_argument / unsupported error.
// Anything else (a crash, a sanitizer report, another exception, a broken
// invariant) aborts, and libFuzzer keeps the input. Every listed block's
// formats under --dtype stored (stored_options) must be a pair a block runs.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include <swiglu/checkpoint.hpp>
#include <swiglu/swiglu.hpp>

#include "formats/format_table.hpp"
#include "io/checkpoint_files.hpp"
#include "io/checkpoint_loader.hpp"
#include "io/gguf.hpp"

#include "fuzz_checks.hpp"

namespace {

using fuzz::broken;
using fuzz::check_message;
using fuzz::kLabel;
using swiglu::Error;
using swiglu::Status;
using swiglu::detail::CheckpointFiles;
using swiglu::detail::GgufFile;

void load(const CheckpointFiles& files, const swiglu::WeightSelector& selector) {
    try {
        const swiglu::LoadedWeights w = swiglu::detail::load_weights(files, selector);
        const auto n = static_cast<std::size_t>(w.d * w.f);
        if (w.d < 1 || w.f < 1 || w.gate.size() != n || w.up.size() != n || w.down.size() != n)
            broken("loaded weights of the wrong size");
    } catch (const Error& e) {
        check_message(e, true);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::optional<GgufFile> file;
    try {
        file.emplace(GgufFile::from_memory(data, size, kLabel));
    } catch (const Error& e) {
        check_message(e, false);
        return 0;
    }
    for (const swiglu::detail::GgufTensor& t : file->tensors()) {
        const swiglu::detail::GgmlType* type = swiglu::detail::ggml_type(t.type);
        if (!type) continue;
        if (t.ne[0] % type->block != 0) broken("a row of partial blocks", t.name);
        const unsigned char* p = file->tensor_data(t);
        if (p < data || p + t.bytes > data + size) broken("tensor_data outside the input", t.name);
    }
    const CheckpointFiles files = CheckpointFiles::single(std::move(*file));
    for (std::string_view name : files.names()) {
        const auto t = files.find(name);
        if (!t) broken("a listed name is not found");
        try {
            files.to_f32(*t);
        } catch (const Error& e) {
            check_message(e, true);
        }
    }
    load(files, {});
    load(files, {0, "", -1});
    load(files, {1, "", -1});
    load(files, {-1, "blk.0.", -1});
    swiglu::Options stored;
    stored.keep_stored = true;
    for (const swiglu::BlockInfo& b : swiglu::detail::list_blocks(files)) {
        if (!b.problem.empty()) continue;
        if (b.d < 1 || b.f < 1) broken("listed block without a shape");
        if (b.import_note.find('\n') != std::string::npos) broken("a note of several lines");
        // What --dtype stored runs a loadable block in: no error, a pair a
        // block runs, and blocks of a size the formats have.
        const swiglu::Options o = swiglu::stored_options(b, stored);
        const swiglu::Dtype down = o.down_dtype.value_or(o.dtype);
        if (o.keep_stored) broken("stored_options left keep_stored set");
        if (down != o.dtype &&
            (swiglu::detail::traits(o.dtype).block == 1 || swiglu::detail::traits(down).block == 1))
            broken("stored_options chose a pair no block runs");
        const std::int64_t block = swiglu::block_values(b, stored);
        if (block != 1 && block != 32 && block != 256) broken("block_values of no format");
    }
    return 0;
}
