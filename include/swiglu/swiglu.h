/* swiglu C API (C99): the SwiGLU feed-forward block of transformer LLMs.
 *
 *   y = (SiLU(x @ W_gate) * (x @ W_up)) @ W_down
 *
 * Usable from C, Rust, Python ctypes. Every function returns a status code;
 * on failure swiglu_last_error() describes it (thread-local, valid until the
 * next call on that thread). No C++ exception crosses this API. */
#ifndef SWIGLU_H
#define SWIGLU_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SWIGLU_C_API __attribute__((visibility("default")))

typedef enum swiglu_status {
    SWIGLU_OK = 0,
    SWIGLU_INVALID_ARGUMENT = 1, /* bad shape, null pointer, overflow, malformed file */
    SWIGLU_OUT_OF_MEMORY = 2,
    SWIGLU_UNSUPPORTED = 3, /* e.g. a dtype this build cannot convert */
    SWIGLU_INTERNAL = 4
} swiglu_status;

/* How a weight matrix is stored, row-major. */
typedef enum swiglu_layout {
    SWIGLU_LAYOUT_OUT_IN = 0, /* (out_features, in_features): PyTorch, Hugging Face */
    SWIGLU_LAYOUT_IN_OUT = 1  /* (in_features, out_features): X @ W */
} swiglu_layout;

/* A view of one f32 weight matrix; the library copies it at creation. */
typedef struct swiglu_weight {
    const float* data;
    int64_t rows;
    int64_t cols;
    swiglu_layout layout;
} swiglu_weight;

/* Precision of the packed weights and the matmuls; x and y stay f32. */
typedef enum swiglu_dtype {
    SWIGLU_DTYPE_F32 = 0,
    SWIGLU_DTYPE_BF16 = 1, /* bf16 weights and matmul inputs, f32 accumulation */
    SWIGLU_DTYPE_INT8 = 2, /* s8 weights (per-channel scales), s8 activations (per token) */
    SWIGLU_DTYPE_Q8_0 = 3, /* GGUF Q8_0: blocks of 32 s8 weights with an f16 scale */
    SWIGLU_DTYPE_Q4_0 = 4, /* GGUF Q4_0: blocks of 32 4-bit weights with an f16 scale */
    SWIGLU_DTYPE_Q4_K = 5, /* GGUF Q4_K: super-blocks of 256, 4.5 bits per weight */
    SWIGLU_DTYPE_Q5_K = 6, /* GGUF Q5_K: super-blocks of 256, 5.5 bits per weight */
    SWIGLU_DTYPE_Q6_K = 7  /* GGUF Q6_K: super-blocks of 256, 6.5625 bits per weight */
} swiglu_dtype;

/* Options for creating a block; pass NULL for the defaults (all zero). Zero
 * the whole struct ({0} or memset) before setting fields: fields added later
 * are zero for the old behaviour. */
typedef struct swiglu_options {
    int threads;        /* 0 = all cores this process may use; blocks with the
                           same count share one pool of workers */
    swiglu_dtype dtype; /* SWIGLU_DTYPE_F32 by default; of gate and up only
                           where has_down_dtype != 0 */
    /* has_down_dtype != 0: down runs in down_dtype, which may differ from
     * dtype among the block formats (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K): a Q4_K_M
     * file's blocks hold gate and up in Q4_K and down in Q6_K. */
    int has_down_dtype;
    swiglu_dtype down_dtype;
    /* keep_stored != 0 (checkpoints only): each weight in the format the
     * file stores it where a block runs that format, packed from the stored
     * blocks unchanged; dtype (down: down_dtype) for the others (F16) and for
     * all three where the stored formats cannot share a block. */
    int keep_stored;
} swiglu_options;

typedef struct swiglu_ffn swiglu_ffn; /* opaque */

/* Builds a block from three host weights: gate and up map d -> f, down f -> d.
 * options may be NULL. On success *out owns a handle to release with
 * swiglu_ffn_destroy; on failure *out is set to NULL. SWIGLU_UNSUPPORTED:
 * the dtype cannot run on this CPU (int8 needs AVX512-VNNI). */
SWIGLU_C_API swiglu_status swiglu_ffn_create(const swiglu_weight* gate, const swiglu_weight* up,
                                             const swiglu_weight* down,
                                             const swiglu_options* options, swiglu_ffn** out);

/* swiglu_ffn_create_from_checkpoint with a layer (>= 0, or -1 for any) and a
 * block prefix (NULL for none), kept for callers of earlier versions. */
SWIGLU_C_API swiglu_status swiglu_ffn_create_from_safetensors(const char* path, int64_t layer,
                                                              const char* prefix,
                                                              const swiglu_options* options,
                                                              swiglu_ffn** out);

/* Which block of a checkpoint: layer and expert >= 0 keep the blocks of that
 * layer and expert (the numbers after "layers."/"blocks."/"blk." and after
 * "experts." in the block's prefix), -1 keeps any; block (not NULL, not "")
 * names the block's prefix itself and excludes the other two. Start from
 * SWIGLU_BLOCK_SELECTOR_ANY: zero would mean layer 0, expert 0. */
typedef struct swiglu_block_selector {
    int64_t layer;
    int64_t expert;
    const char* block;
} swiglu_block_selector;
#define SWIGLU_BLOCK_SELECTOR_ANY \
    { -1, -1, NULL }

/* Builds a block from a safetensors checkpoint, found under any prefix in
 * the schemes docs/checkpoints.md lists (Hugging Face, Meta/Mistral, Mixtral and
 * Qwen-MoE experts, the seeds' modules). selector NULL: the file must hold
 * exactly one block. When none or several match, the error says what the
 * file holds and which selector tells the blocks apart. */
SWIGLU_C_API swiglu_status swiglu_ffn_create_from_checkpoint(const char* path,
                                                             const swiglu_block_selector* selector,
                                                             const swiglu_options* options,
                                                             swiglu_ffn** out);

/* y = block(x): x and y row-major (tokens, d) f32; y may equal x. Safe to call
 * from several threads at once on one handle. */
SWIGLU_C_API swiglu_status swiglu_ffn_forward(const swiglu_ffn* ffn, const float* x, float* y,
                                              int64_t tokens);

/* ---- The backward pass (f32 blocks; docs/backward.md) ---------------- */

/* Weight gradients for swiglu_ffn_backward: each d * f floats, laid out as
 * that weight was given (its swiglu_weight's layout, or the checkpoint's).
 * NULL: not computed. accumulate != 0 adds into the buffers (gradient
 * accumulation over micro-batches) instead of overwriting them. */
typedef struct swiglu_gradients {
    float* gate;
    float* up;
    float* down;
    int accumulate;
} swiglu_gradients;

/* For dy = dL/dy (tokens, d): dx = dL/dx (tokens, d) and, with grads (may be
 * NULL), the weight gradients. saved: gate then up (tokens, f each) from
 * swiglu_ffn_forward_for_backward on the same x, or NULL to recompute them.
 * dx may be x or dy itself; other overlaps are rejected. SWIGLU_UNSUPPORTED
 * for a dtype other than f32. */
SWIGLU_C_API swiglu_status swiglu_ffn_backward(const swiglu_ffn* ffn, const float* x,
                                               const float* dy, float* dx, int64_t tokens,
                                               const swiglu_gradients* grads, const float* saved);

/* swiglu_ffn_forward that also writes gate then up into saved
 * (2 * tokens * f floats) for swiglu_ffn_backward. */
SWIGLU_C_API swiglu_status swiglu_ffn_forward_for_backward(const swiglu_ffn* ffn, const float* x,
                                                           float* y, float* saved, int64_t tokens);

/* The block's widths: d (model) and f (hidden). Either pointer may be NULL. */
SWIGLU_C_API swiglu_status swiglu_ffn_dims(const swiglu_ffn* ffn, int64_t* d, int64_t* f);

/* Releases the handle; NULL is a no-op. */
SWIGLU_C_API void swiglu_ffn_destroy(swiglu_ffn* ffn);

/* The message of this thread's last failed call ("" if none). */
SWIGLU_C_API const char* swiglu_last_error(void);

/* A constant name for a status code, e.g. "SWIGLU_INVALID_ARGUMENT". */
SWIGLU_C_API const char* swiglu_status_name(swiglu_status status);

/* The library version, "major.minor.patch". */
SWIGLU_C_API const char* swiglu_version(void);

#ifdef __cplusplus
}
#endif

#endif /* SWIGLU_H */
