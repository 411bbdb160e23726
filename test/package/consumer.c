/* A C program built against the installed package through pkg-config. */
#include <stdio.h>
#include <swiglu/swiglu.h>

int main(void) {
    /* d = 1, f = 3: gate = [-1, 0, 1], up = [2, 3, 4], down = ones -> 2.386351 */
    const float gate[3] = {-1, 0, 1}, up[3] = {2, 3, 4}, down[3] = {1, 1, 1};
    const swiglu_weight g = {gate, 1, 3, SWIGLU_LAYOUT_IN_OUT};
    const swiglu_weight u = {up, 1, 3, SWIGLU_LAYOUT_IN_OUT};
    const swiglu_weight dn = {down, 3, 1, SWIGLU_LAYOUT_IN_OUT};
    swiglu_ffn* ffn = NULL;
    /* The checkpoint loader's selector initialises in C99 too; a file that
     * is not there is refused with the library's message. */
    swiglu_block_selector any = SWIGLU_BLOCK_SELECTOR_ANY;
    if (swiglu_ffn_create_from_checkpoint("/nonexistent.safetensors", &any, NULL, &ffn) !=
            SWIGLU_INVALID_ARGUMENT ||
        ffn != NULL) {
        fprintf(stderr, "create_from_checkpoint of a missing file did not fail\n");
        return 1;
    }
    if (swiglu_ffn_create(&g, &u, &dn, NULL, &ffn) != SWIGLU_OK) {
        fprintf(stderr, "create: %s\n", swiglu_last_error());
        return 1;
    }
    const float x = 1.0f;
    float y = 0.0f;
    /* Destroyed on every path (users copy this file): a failed call still
     * leaves the object to free. */
    const swiglu_status forward = swiglu_ffn_forward(ffn, &x, &y, 1);
    if (forward != SWIGLU_OK) fprintf(stderr, "forward: %s\n", swiglu_last_error());
    swiglu_ffn_destroy(ffn);
    if (forward != SWIGLU_OK) return 1;
    printf("swiglu %s: y = %.6f\n", swiglu_version(), y);
    if (!(y > 2.38634f && y < 2.38636f)) return 1;

    /* Two experts stacked (in_out: gate, up (E, d, f), down (E, f, d)): the
     * block above, and the same with down doubled; the router's logits
     * [0, 1] choose expert 1 with weight 1 (top 1, normalized). */
    {
        const float gates[6] = {-1, 0, 1, -1, 0, 1}, ups[6] = {2, 3, 4, 2, 3, 4};
        const float downs[6] = {1, 1, 1, 2, 2, 2}, logits[2] = {0, 1};
        swiglu_router_rule rule = SWIGLU_ROUTER_RULE_DEFAULT;
        swiglu_experts* experts = NULL;
        int32_t id = -1;
        float weight = 0.0f, moe_y = 0.0f;
        rule.normalize = 1;
        const int moe_ok =
            swiglu_route(logits, 1, 2, &rule, NULL, &id, &weight) == SWIGLU_OK &&
            swiglu_experts_create_stacked(gates, ups, downs, 2, 1, 3, SWIGLU_LAYOUT_IN_OUT, NULL,
                                          &experts) == SWIGLU_OK &&
            swiglu_experts_forward(experts, &x, &moe_y, 1, &id, &weight, 1) == SWIGLU_OK;
        if (!moe_ok) fprintf(stderr, "moe: %s\n", swiglu_last_error());
        swiglu_experts_destroy(experts); /* NULL if create failed: a no-op */
        if (!moe_ok) return 1;
        printf("swiglu moe: expert %d, weight %.6f, y = %.6f\n", (int)id, weight, moe_y);
        if (!(id == 1 && weight == 1.0f && moe_y > 4.77268f && moe_y < 4.77272f)) return 1;

        /* The same as a whole layer from arrays: a router (d x E, in_out)
         * whose logits for x = 1 are [0, 1], so expert 1 again. */
        {
            const float router_w[2] = {0, 1};
            const swiglu_weight router = {router_w, 1, 2, SWIGLU_LAYOUT_IN_OUT};
            swiglu_moe_layer* layer = NULL;
            int64_t count = 0, top_k = 0, d = 0, f = 0;
            int shared = -1;
            float layer_y = 0.0f;
            id = -1;
            weight = 0.0f;
            const int layer_ok =
                swiglu_moe_layer_create(&router, &rule, NULL, gates, ups, downs, 2, 1, 3,
                                        SWIGLU_LAYOUT_IN_OUT, NULL, NULL, &layer) == SWIGLU_OK &&
                swiglu_moe_layer_forward(layer, &x, &layer_y, 1) == SWIGLU_OK &&
                swiglu_moe_layer_route(layer, &x, 1, &id, &weight) == SWIGLU_OK &&
                swiglu_moe_layer_dims(layer, &count, &top_k, &d, &f, &shared) == SWIGLU_OK;
            if (!layer_ok) fprintf(stderr, "moe layer: %s\n", swiglu_last_error());
            swiglu_moe_layer_destroy(layer); /* NULL if create failed: a no-op */
            if (!layer_ok) return 1;
            printf("swiglu moe layer: %d experts, top %d, expert %d, y = %.6f\n", (int)count,
                   (int)top_k, (int)id, layer_y);
            return (count == 2 && top_k == 1 && d == 1 && f == 3 && shared == 0 && id == 1 &&
                    weight == 1.0f && layer_y == moe_y)
                       ? 0
                       : 1;
        }
    }
}
