// libFuzzer target: a safetensors file from hostile bytes.
//
// Whatever the input, opening it either succeeds or throws swiglu::Error
// (invalid_argument) with a one-line message that starts with the file's
// label. A file that opens must be self-consistent (its tensors tile the data
// exactly, inside the input), every tensor must read in full or be refused as
// unsupported, and loading a block from it must give weights of the shapes it
// claims or a one-line invalid_argument / unsupported error; every block
// listed must describe itself or say why it would not load. Anything else
// (a crash, a sanitizer report, another exception, a broken invariant)
// aborts, and libFuzzer keeps the input.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include <swiglu/checkpoint.hpp>
#include <swiglu/swiglu.hpp>

#include "io/checkpoint_loader.hpp"
#include "io/safetensors.hpp"

#include "fuzz_checks.hpp"

namespace {

using fuzz::broken;
using fuzz::check_message;
using fuzz::kLabel;
using swiglu::Error;
using swiglu::Status;
using swiglu::detail::SafetensorsFile;
using swiglu::detail::TensorInfo;

void check_file(const SafetensorsFile& file, const std::uint8_t* data, std::size_t size) {
    if (8 + file.header_length() + file.data_size() != size) broken("lengths do not add up");
    std::uint64_t position = 0;
    for (const TensorInfo& t : file.tensors()) {
        if (t.offset != position) broken("tensors do not tile the data", t.name);
        position += t.bytes;
        if (position > file.data_size()) broken("tensor past the data", t.name);
        if (file.find(t.name) != &t) broken("find() disagrees with tensors()", t.name);
        const unsigned char* p = file.tensor_data(t);
        if (p < data || p + t.bytes > data + size) broken("tensor_data outside the input", t.name);
        try {
            const std::vector<float> v = file.to_f32(t);
            if (v.size() != static_cast<std::size_t>(t.elements)) broken("to_f32 size", t.name);
        } catch (const Error& e) {
            if (e.status() != Status::unsupported) broken("to_f32 failed", e.what());
            check_message(e, true);
        }
    }
    if (position != file.data_size()) broken("data not covered by tensors");
}

void load(const SafetensorsFile& file, const swiglu::WeightSelector& selector) {
    try {
        const swiglu::LoadedWeights w = swiglu::detail::load_weights(file, selector);
        const auto n = static_cast<std::size_t>(w.d * w.f);
        if (w.d < 1 || w.f < 1 || w.gate.size() != n || w.up.size() != n || w.down.size() != n)
            broken("loaded weights of the wrong size");
        (void)w.gate_view();
        (void)w.up_view();
        (void)w.down_view();
    } catch (const Error& e) {
        check_message(e, true);
    }
}

// Every block discovery lists either describes itself (d, f >= 1) or says
// in one line why it would not load; each loads by its own prefix.
void list(const SafetensorsFile& file) {
    for (const swiglu::BlockInfo& b : swiglu::detail::list_blocks(file)) {
        if (b.problem.empty() && (b.d < 1 || b.f < 1))
            broken("listed block without a shape", b.prefix);
        if (b.problem.find('\n') != std::string::npos) broken("problem of more than one line");
        swiglu::WeightSelector selector;
        selector.prefix = b.prefix;
        if (!b.prefix.empty()) load(file, selector);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::optional<SafetensorsFile> file;
    try {
        file.emplace(SafetensorsFile::from_memory(data, size, kLabel));
    } catch (const Error& e) {
        check_message(e, false);
        return 0;
    }
    check_file(*file, data, size);
    swiglu::WeightSelector selector;
    load(*file, selector);  // exactly one block, any scheme
    selector.layer = 0;
    load(*file, selector);
    selector.layer = 1;
    load(*file, selector);
    selector.layer = -1;
    selector.prefix = "model.layers.0.mlp.";
    load(*file, selector);
    selector.layer = 3;  // both: refused
    load(*file, selector);
    selector.prefix.clear();
    selector.layer = 0;
    selector.expert = 1;  // a Mixture-of-Experts expert
    load(*file, selector);
    list(*file);
    return 0;
}
