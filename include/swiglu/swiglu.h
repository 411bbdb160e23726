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
 * names the block's prefix itself ("model.layers.3.mlp." or the module's name
 * "model.layers.3.mlp") and excludes the other two. Start from
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

/* ---- Mixture of experts (C++: <swiglu/moe.hpp>; docs/api.md) --------- */

/* How a router turns a token's E logits into scores. */
typedef enum swiglu_router_score {
    SWIGLU_ROUTER_SOFTMAX = 0, /* Mixtral, Qwen-MoE, OLMoE, DeepSeek-V2 */
    SWIGLU_ROUTER_SIGMOID = 1  /* DeepSeek-V3 */
} swiglu_router_score;

/* A group's score, for group-limited routing: its largest expert score
 * (DeepSeek-V2) or the sum of its two largest (DeepSeek-V3). */
typedef enum swiglu_group_score {
    SWIGLU_GROUP_MAX = 0,
    SWIGLU_GROUP_TOP2_SUM = 1
} swiglu_group_score;

/* A router's rule, as swiglu::RouterRule. Start from
 * SWIGLU_ROUTER_RULE_DEFAULT (top_k 1, softmax, no normalizing, one group,
 * scaling 1) and set fields: a zeroed struct is no rule at all (top_k,
 * groups, top_groups 0), and swiglu_route refuses it, as it refuses a
 * scaling of 0 (which would zero every weight, and is what a zeroed struct
 * leaves there).
 *   Mixtral:     top_k 2, normalize 1
 *   Qwen3-MoE:   top_k 8, normalize 1 (norm_topk_prob)
 *   DeepSeek-V3: top_k 8, SWIGLU_ROUTER_SIGMOID, normalize 1, groups 8,
 *                top_groups 4, SWIGLU_GROUP_TOP2_SUM, scaling 2.5, and the
 *                bias e_score_correction_bias */
typedef struct swiglu_router_rule {
    int64_t top_k; /* k, 1 <= k <= E */
    swiglu_router_score score;
    int normalize;      /* != 0: the k weights divided by their sum, before scaling */
    int64_t groups;     /* E in `groups` equal groups of consecutive ids ... */
    int64_t top_groups; /* ... of which only the `top_groups` best may be chosen */
    swiglu_group_score group_score;
    float scaling; /* every weight multiplied by it last (routed_scaling_factor) */
} swiglu_router_rule;
#define SWIGLU_ROUTER_RULE_DEFAULT \
    { 1, SWIGLU_ROUTER_SOFTMAX, 0, 1, 1, SWIGLU_GROUP_MAX, 1.0f }

/* For `tokens` rows of `experts` router logits (row-major, tokens x E):
 * each token's top_k experts by score (+ bias[e] where bias, E floats, is
 * not NULL: used to choose, never in the weights), best first, ties to the
 * lower id, into ids (tokens x top_k), and their weights (the scores,
 * normalized and scaled as the rule says) into weights (tokens x top_k).
 * Scores are computed in double, each weight rounded to float once. SWIGLU_INVALID_ARGUMENT,
 * writing nothing, for a NULL or bad rule (checked even when tokens = 0), a NULL pointer,
 * overlapping buffers, or a non-finite logit or bias (the message names token and expert). tokens =
 * 0 does nothing else. */
SWIGLU_C_API swiglu_status swiglu_route(const float* logits, int64_t tokens, int64_t experts,
                                        const swiglu_router_rule* rule, const float* bias,
                                        int32_t* ids, float* weights);

typedef struct swiglu_experts swiglu_experts; /* opaque: E SwiGLU blocks of one shape */

/* Builds E >= 1 experts from three stacked arrays, each expert's matrices
 * one after another. SWIGLU_LAYOUT_OUT_IN (PyTorch's stacked experts):
 * gate, up (E, f, d), down (E, d, f); SWIGLU_LAYOUT_IN_OUT: gate, up
 * (E, d, f), down (E, f, d). Each expert is packed as swiglu_ffn_create
 * packs a block (options may be NULL); the arrays may be freed afterwards.
 * On failure *out is set to NULL. */
SWIGLU_C_API swiglu_status swiglu_experts_create_stacked(const float* gate, const float* up,
                                                         const float* down, int64_t experts,
                                                         int64_t d, int64_t f, swiglu_layout layout,
                                                         const swiglu_options* options,
                                                         swiglu_experts** out);

/* y[t] = sum over j < k of weights[t, j] * expert_{ids[t, j]}(x[t]) for
 * `tokens` rows: x, y (tokens, d) f32, ids and weights (tokens, k), as
 * swiglu_route writes them. Each chosen expert's weights are read once per
 * call; y is bit-identical for any thread count. y may equal x; other
 * overlaps are refused. SWIGLU_INVALID_ARGUMENT, writing nothing, for an id
 * outside [0, E), a non-finite weight, k < 1, a NULL pointer or an
 * overflowing size. tokens = 0 does nothing. Safe to call from several
 * threads at once on one handle. */
SWIGLU_C_API swiglu_status swiglu_experts_forward(const swiglu_experts* experts, const float* x,
                                                  float* y, int64_t tokens, const int32_t* ids,
                                                  const float* weights, int64_t k);

/* The expert count E and the widths d, f. Any of the three may be NULL. */
SWIGLU_C_API swiglu_status swiglu_experts_dims(const swiglu_experts* experts, int64_t* count,
                                               int64_t* d, int64_t* f);

/* Releases the handle; NULL is a no-op. */
SWIGLU_C_API void swiglu_experts_destroy(swiglu_experts* experts);

typedef struct swiglu_moe_layer swiglu_moe_layer; /* opaque: router, experts, shared block */

/* Loads Mixture-of-Experts layer `layer` (>= 0) of the checkpoint at path:
 * Hugging Face safetensors (a file, a sharded index or their folder) with
 * the rule from the config.json beside it (Mixtral, Qwen2/3-MoE, OLMoE,
 * DeepSeek-V2/V3), or GGUF with the rule from its metadata; each expert and
 * the shared block packed from the mapped file as swiglu_ffn_create_from_checkpoint
 * packs a block (options may be NULL). docs/checkpoints.md lists the names
 * and keys. On failure *out is set to NULL and the message names the file
 * and the tensor or key. */
SWIGLU_C_API swiglu_status swiglu_moe_layer_create_from_checkpoint(const char* path, int64_t layer,
                                                                   const swiglu_options* options,
                                                                   swiglu_moe_layer** out);

/* A layer's shared block (Qwen2-MoE's shared_expert, DeepSeek's
 * shared_experts as one block of n_shared * f), as swiglu_ffn_create takes
 * it (its own f), and its gate: expert_gate, d floats, scales the block's
 * output by sigmoid(x . expert_gate) per token (Qwen2-MoE's
 * shared_expert_gate); NULL for none (DeepSeek). */
typedef struct swiglu_moe_shared {
    swiglu_weight gate;
    swiglu_weight up;
    swiglu_weight down;
    const float* expert_gate;
} swiglu_moe_shared;

/* Builds a layer from arrays in memory (C++: the MoeLayer constructor):
 * router E x d (SWIGLU_LAYOUT_OUT_IN, as Hugging Face's gate.weight) or
 * d x E (SWIGLU_LAYOUT_IN_OUT), f32; rule as swiglu_route takes it (start
 * from SWIGLU_ROUTER_RULE_DEFAULT); bias E floats (DeepSeek-V3's
 * e_score_correction_bias, used to choose only) or NULL; the E routed
 * experts stacked as swiglu_experts_create_stacked takes them (gate, up,
 * down, experts, d, f, layout); shared NULL for none. Everything is copied
 * (the arrays may be freed afterwards); each expert and the shared block
 * are packed as options say (may be NULL). SWIGLU_INVALID_ARGUMENT naming
 * what does not fit (a NULL or zeroed rule, shapes, a non-finite bias),
 * *out set to NULL. */
SWIGLU_C_API swiglu_status swiglu_moe_layer_create(
    const swiglu_weight* router, const swiglu_router_rule* rule, const float* bias,
    const float* gate, const float* up, const float* down, int64_t experts, int64_t d, int64_t f,
    swiglu_layout layout, const swiglu_moe_shared* shared, const swiglu_options* options,
    swiglu_moe_layer** out);

/* y = the layer's output for `tokens` rows: the router, each token's top_k
 * experts, and the shared block. x, y (tokens, d) f32; y may equal x, other
 * overlaps are refused. Bit-identical for any thread count; safe to call
 * from several threads at once on one handle; writes nothing on failure
 * (a non-finite router logit, a NULL pointer, an overflowing size).
 * tokens = 0 does nothing. */
SWIGLU_C_API swiglu_status swiglu_moe_layer_forward(const swiglu_moe_layer* layer, const float* x,
                                                    float* y, int64_t tokens);

/* What the router chose: ids and weights (tokens, top_k) each, as
 * swiglu_route writes them for the layer's logits x @ router^T. */
SWIGLU_C_API swiglu_status swiglu_moe_layer_route(const swiglu_moe_layer* layer, const float* x,
                                                  int64_t tokens, int32_t* ids, float* weights);

/* The routed expert count E, top_k, the widths d and f (of one expert), and
 * whether the layer has a shared block (1) or not (0). Any may be NULL. */
SWIGLU_C_API swiglu_status swiglu_moe_layer_dims(const swiglu_moe_layer* layer, int64_t* experts,
                                                 int64_t* top_k, int64_t* d, int64_t* f,
                                                 int* has_shared);

/* Releases the handle; NULL is a no-op. */
SWIGLU_C_API void swiglu_moe_layer_destroy(swiglu_moe_layer* layer);

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
