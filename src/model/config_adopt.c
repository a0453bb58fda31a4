/* config_adopt: what a run that starts from a trained model (train.init)
 * takes from that model's config: its architecture (the F_ARCH keys, those
 * config_arch_diff checks on a resume), which the run's config may repeat
 * but not change. */
#include "model/config_schema.h"

#include <string.h>

static size_t field_size(KeyType t)
{
    switch (t) {
    case K_INT: case K_ENUM: return sizeof(int);
    case K_LONG: return sizeof(long);
    case K_FLOAT: return sizeof(float);
    case K_DOUBLE: return sizeof(double);
    case K_BOOL: return sizeof(bool);
    default: return 0;      /* no architecture key is a string or a list */
    }
}

TfmStatus config_adopt_model(TfmConfig *cfg, const TfmConfig *from, const char *from_name,
                             TfmErr *err)
{
    for (int i = 0; i < config_n_keys; i++) {
        const KeySpec *k = &config_schema[i];
        const size_t size = field_size(k->type);
        if (!(k->flags & F_ARCH) || size == 0) continue;
        void *dst = (char *)cfg + k->offset;
        const void *src = (const char *)from + k->offset;
        if (memcmp(dst, src, size) == 0) continue;
        if (cfg->given[i]) {
            char mine[64], theirs[64];
            config_value_text(mine, sizeof mine, cfg, k);
            config_value_text(theirs, sizeof theirs, from, k);
            return err_set(err, TFM_ERR_CONFIG, "%s: %s, the model of train.init %s has %s (a "
                           "model keeps its architecture: leave the key out)", k->path, mine,
                           from_name, theirs);
        }
        memcpy(dst, src, size);
    }
    cfg->model.max_len = config_positions(cfg->data.max_len);
    return TFM_OK;
}
