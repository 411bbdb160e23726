#include "help_text.hpp"

#include "formats/format_table.hpp"

namespace swiglu::cli::help {

const char* const program_description =
    "swiglu: the SwiGLU feed-forward block of LLaMA-style transformers, on the CPU.\n"
    "\n"
    "  gate = x @ W_gate,  up = x @ W_up          (d -> f)\n"
    "  y    = (SiLU(gate) * up) @ W_down          (f -> d),  SiLU(z) = z * sigmoid(z)\n"
    "\n"
    "d is the model width, f the hidden width. The weights come from a checkpoint\n"
    "(safetensors, sharded or not, or GGUF), x and y are float32 .npy files.";

const char* const program_footer =
    "Examples:\n"
    "  swiglu info\n"
    "  swiglu info --weights model.safetensors --layer 0\n"
    "  swiglu run --weights model.safetensors --layer 0 --input x.npy --output y.npy\n"
    "\n"
    "Run 'swiglu COMMAND --help' for a command's options.\n"
    "Exit status: 0 success; 2 bad arguments or bad input (the message names the\n"
    "file and what was expected); 1 internal error or out of memory.";

std::string run_description() {
    return "y = block(x): x from a .npy file, the weights from a checkpoint (safetensors, GGUF)\n"
           "\n"
           "Computes y = block(x) for every row of x and writes y, float32, in x's shape.\n"
           "x is a float32 C-order .npy array of shape (M, d) or (B, T, d), where d is the\n"
           "block's model width, e.g. np.save('x.npy', x.astype(np.float32)).\n"
           "y is written to a temporary file in its directory and renamed into place, so a\n"
           "failed run leaves no partial file and an existing y untouched.\n"
           "\n"
           "Blocks are found under any prefix by the names after it (weights in " +
           detail::format_names(detail::FormatSet::safetensors) + ", in GGUF also " +
           detail::format_names(detail::FormatSet::gguf_only) +
           ", read exactly):\n"
           "  {gate,up,down}_proj.weight     hf-llama (model.layers.N.mlp.), hf-moe-expert\n"
           "                                 (...mlp.experts.E.: Qwen-MoE, DeepSeek), bare\n"
           "  gate_up_proj.weight + down_proj.weight\n"
           "                                 phi3-merged (2f x d: gate rows, then up rows)\n"
           "  {gate,val,out}_proj.weight     cyberslm: the seed's nn.Linear gate_proj, val_proj\n"
           "                                 (up), out_proj (down); also without .weight\n"
           "  W1, W3, W2                     glassllm (gate, up, down), stored (in, out)\n"
           "  w1.weight, w3.weight, w2.weight\n"
           "                                 meta (layers.N.feed_forward.: Meta, Mistral),\n"
           "                                 mixtral-expert (...block_sparse_moe.experts.E.)\n"
           "  ffn_{gate,up,down}.weight      gguf (blk.N.: llama.cpp's GGUF files)\n"
           "  ffn_{gate,up,down}_exps.weight gguf-expert: a GGUF layer's experts stacked\n"
           "                                 (E, out, in); one block per expert\n"
           "All but glassllm are stored (out, in), as nn.Linear keeps them. A block's layer\n"
           "is the number after layers., blocks. or blk. in its prefix, its expert the one\n"
           "after experts. With several blocks, choose one with --layer N (and --expert E\n"
           "in a Mixture-of-Experts layer) or name it with --block P; the error says which\n"
           "tells them apart, and 'swiglu info --weights FILE' lists every block found.\n"
           "A sharded checkpoint is named by its model.safetensors.index.json or its folder;\n"
           "only the shards that hold the chosen block are read.\n"
           "\n"
           "A Mixture-of-Experts layer runs whole with --layer N (or with no selector in a\n"
           "file of that one layer): its router picks each token's experts by the model's\n"
           "rule, read from the config.json beside the weights (model_type mixtral,\n"
           "qwen2_moe, qwen3_moe, olmoe, deepseek_v2, deepseek_v3) or from a GGUF file's\n"
           "metadata (llama, qwen2moe, qwen3moe, olmoe, deepseek2), and its shared experts\n"
           "run for every token; --expert E runs one expert alone (no config needed), and\n"
           "'swiglu info --weights FILE --layer N' shows the layer's rule.\n"
           "\n"
           "--dtype stored, the default for a GGUF file, runs each weight in the format the\n"
           "file stores it where a block runs that format (a Q4_K_M file's Q4_K gate and up\n"
           "and Q6_K down, packed unchanged), f32 for the others; any other --dtype converts\n"
           "all three from their exact values (the default for safetensors: f32).";
}

const char* const run_footer =
    "Examples:\n"
    "  swiglu run --weights model.safetensors --layer 3 --input x.npy --output y.npy\n"
    "  swiglu run --weights block.safetensors --input x.npy --output y.npy --threads 8\n"
    "  swiglu run --weights mixtral/ --layer 3 --input x.npy --output y.npy\n"
    "  swiglu run --weights mixtral/ --layer 3 --expert 5 --input x.npy --output y.npy\n"
    "  swiglu run --weights model-Q4_K_M.gguf --layer 3 --input x.npy --output y.npy\n"
    "  swiglu run --weights model.safetensors --layer 3 --dtype q4_k --input x.npy \\\n"
    "             --output y.npy\n"
    "  swiglu run --weights model.safetensors --block model.layers.3.mlp. \\\n"
    "             --input x.npy --output y.npy --trace trace/\n"
    "\n"
    "With --trace DIR the intermediates are also written to DIR (created if missing):\n"
    "gate.npy, up.npy and act.npy (..., f) and down.npy (..., d, equal to y).";

const char* const info_description =
    "version, CPU features and kernels chosen; with --weights, what a checkpoint holds\n"
    "\n"
    "Prints the library version, the CPU's SIMD features, the SiLU(gate)*up kernel\n"
    "(xsimd) and the matmul implementation (oneDNN) the block runs on, and the thread\n"
    "count. Without --weights the kernels are those of a small probe block\n"
    "(d = 64, f = 128). With --weights, every block the checkpoint holds is listed\n"
    "(prefix, scheme, layer, expert, d, f, dtype, or why it would not load); then,\n"
    "when there is one or --layer, --expert or --block chooses one, that block's\n"
    "tensor names, each weight's stored format and the one it runs in under --dtype,\n"
    "its parameter count, and the kernels it runs on. A Mixture-of-Experts layer\n"
    "(--layer N alone) shows its router, its routing rule and where it was read\n"
    "(config.json, GGUF metadata), its experts, its shared block and their kernels.";

const char* const info_footer =
    "Examples:\n"
    "  swiglu info\n"
    "  swiglu info --threads 4\n"
    "  swiglu info --weights model.safetensors\n"
    "  swiglu info --weights model.safetensors --layer 0\n"
    "  swiglu info --weights mixtral/ --layer 3";

const char* const mpi_program_description =
    "swiglu-mpi: 'swiglu run' with the block sharded over the ranks of mpirun.\n"
    "\n"
    "Rank r of P holds hidden columns [f r / P, f (r + 1) / P) of W_gate and W_up and\n"
    "the matching rows of W_down, and reads only those bytes of the checkpoint; one\n"
    "collective per call sums the partial outputs in rank order (the same bits for\n"
    "any thread counts).";

const char* const mpi_program_footer =
    "Examples:\n"
    "  mpirun -n 2 swiglu-mpi run --weights model.safetensors --layer 0 \\\n"
    "         --input x.npy --output y.npy --threads 1\n"
    "  mpirun -n 4 --hostfile hosts --map-by node --bind-to none swiglu-mpi run \\\n"
    "         --weights /models/llama/model.safetensors.index.json --layer 3 \\\n"
    "         --input x.npy --output y.npy\n"
    "\n"
    "Run 'swiglu-mpi run --help' for the options.\n"
    "Exit status (every rank's, so mpirun's): 0 success; 2 bad arguments or bad\n"
    "input on any rank; 1 internal error or out of memory. Rank 0 prints the one\n"
    "error line, naming the rank that failed.";

const char* const mpi_run_description =
    "y = block(x), the block sharded over the ranks: 'swiglu run' under mpirun\n"
    "\n"
    "The options are those of 'swiglu run' (but --trace), with the same meaning.\n"
    "Rank 0 reads x (--input) and writes y (--output, atomically, last); the other\n"
    "ranks receive x from it. Every rank opens --weights itself (on several\n"
    "machines, each needs the checkpoint at that path) and maps only its columns;\n"
    "a Mixture-of-Experts layer (--layer N, no --expert) is sharded by experts: each\n"
    "rank routes every token and runs its range of experts, rank 0 the shared block.\n"
    "A failure on any rank (a missing or damaged file, another block) fails every\n"
    "rank before y is written. --threads is per rank; mpirun binds 2 ranks to a core\n"
    "each and more to a socket unless told '--bind-to none'.";

const char* const mpi_run_footer =
    "Examples:\n"
    "  mpirun -n 2 swiglu-mpi run --weights model.gguf --layer 0 --dtype q4_0 \\\n"
    "         --input x.npy --output y.npy";

}  // namespace swiglu::cli::help
