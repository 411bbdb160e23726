#include "help_text.hpp"

namespace swiglu::cli::help {

const char* const program_description =
    "swiglu: the SwiGLU feed-forward block of LLaMA-style transformers, on the CPU.\n"
    "\n"
    "  gate = x @ W_gate,  up = x @ W_up          (d -> f)\n"
    "  y    = (SiLU(gate) * up) @ W_down          (f -> d),  SiLU(z) = z * sigmoid(z)\n"
    "\n"
    "d is the model width, f the hidden width. The weights come from a safetensors\n"
    "checkpoint, x and y are float32 .npy files.";

const char* const program_footer =
    "Examples:\n"
    "  swiglu info\n"
    "  swiglu info --weights model.safetensors --layer 0\n"
    "  swiglu run --weights model.safetensors --layer 0 --input x.npy --output y.npy\n"
    "\n"
    "Run 'swiglu COMMAND --help' for a command's options.\n"
    "Exit status: 0 success; 2 bad arguments or bad input (the message names the\n"
    "file and what was expected); 1 internal error or out of memory.";

const char* const run_description =
    "y = block(x): x from a .npy file, the weights from a safetensors checkpoint\n"
    "\n"
    "Computes y = block(x) for every row of x and writes y, float32, in x's shape.\n"
    "x is a float32 C-order .npy array of shape (M, d) or (B, T, d), where d is the\n"
    "block's model width, e.g. np.save('x.npy', x.astype(np.float32)).\n"
    "y is written to a temporary file in its directory and renamed into place, so a\n"
    "failed run leaves no partial file and an existing y untouched.\n"
    "\n"
    "Weight names recognised in the checkpoint (F32, BF16 or F16; converted to f32):\n"
    "  hf-llama     model.layers.N.mlp.{gate,up,down}_proj.weight, stored (out, in) as\n"
    "               nn.Linear keeps them; choose N with --layer\n"
    "  phi3-merged  model.layers.N.mlp.gate_up_proj.weight (2f x d: the gate rows, then\n"
    "               the up rows) and model.layers.N.mlp.down_proj.weight\n"
    "  bare         gate_proj.weight, up_proj.weight, down_proj.weight\n"
    "  cyberslm     gate_proj.weight, val_proj.weight (up), out_proj.weight (down), stored\n"
    "               (out, in): the seed's nn.Linear layers (also without .weight)\n"
    "  glassllm     W1 (gate), W3 (up), W2 (down), stored (in, out)\n"
    "--prefix P puts P in front of the names of any scheme (e.g. 'model.layers.3.mlp.'\n"
    "or 'blocks.0.ffn.'). Without --layer or --prefix the checkpoint must hold exactly\n"
    "one block; 'swiglu info --weights FILE' shows what it found.";

const char* const run_footer =
    "Examples:\n"
    "  swiglu run --weights model.safetensors --layer 3 --input x.npy --output y.npy\n"
    "  swiglu run --weights block.safetensors --input x.npy --output y.npy --threads 8\n"
    "  swiglu run --weights model.safetensors --prefix model.layers.3.mlp. \\\n"
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
    "(d = 64, f = 128); with --weights, of that checkpoint's block, and the checkpoint's\n"
    "naming scheme, tensor names, dtype, d, f and parameter count are printed too.";

const char* const info_footer =
    "Examples:\n"
    "  swiglu info\n"
    "  swiglu info --threads 4\n"
    "  swiglu info --weights model.safetensors --layer 0";

}  // namespace swiglu::cli::help
