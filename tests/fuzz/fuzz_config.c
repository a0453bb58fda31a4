/* fuzz_config: the JSON config parser and checker (config_parse), and the
 * round trip of what it accepts: config_to_json, parsed again, must give
 * the same JSON. */
#include "fuzz_util.h"
#include "model/config.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char *json = fuzz_as_string(data, size);
    TfmConfig cfg;
    TfmErr err;
    if (config_parse(&cfg, json, NULL, false, &err) == TFM_OK) {
        char *out = config_to_json(&cfg);
        TfmConfig again;
        if (out && config_parse(&again, out, NULL, false, &err) == TFM_OK) {
            char *out2 = config_to_json(&again);
            if (out2 && strcmp(out, out2) != 0) abort();   /* the round trip must hold */
            free(out2);
            config_free(&again);
        } else if (out) {
            abort();                                         /* its own output must parse */
        }
        free(out);
        config_free(&cfg);
    }
    free(json);
    return 0;
}
