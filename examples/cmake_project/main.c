/* The installed C ABI: print the library version and load a model. */
#include <genie/genie.h>
#include <stdio.h>

int main(int argc, char **argv) {
    genie_model *model = NULL;
    genie_model_options options = GENIE_MODEL_OPTIONS_INIT;
    printf("libgenie %s (ABI %d)\n", genie_version(), genie_abi_version());
    if (argc < 2) return 0;
    if (genie_model_load(&model, argv[1], &options) != GENIE_OK) {
        fprintf(stderr, "%s\n", genie_last_error());
        return 1;
    }
    genie_model_free(model);
    return 0;
}
