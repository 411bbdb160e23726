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
    if (swiglu_ffn_forward(ffn, &x, &y, 1) != SWIGLU_OK) {
        fprintf(stderr, "forward: %s\n", swiglu_last_error());
        return 1;
    }
    swiglu_ffn_destroy(ffn);
    printf("swiglu %s: y = %.6f\n", swiglu_version(), y);
    return (y > 2.38634f && y < 2.38636f) ? 0 : 1;
}
