/* config_override: `tfm train --set KEY=VALUE` and the "did you mean"
 * hints for unknown keys; both work on config.c's schema table. */
#include "model/config_schema.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/path.h"
#include "base/text.h"
#include "model/json_strict.h"

/* ---- "did you mean" ---- */

const char *config_suggest_key(const char *path)
{
    const char *leaf = strrchr(path, '.');
    leaf = leaf ? leaf + 1 : path;
    const char *best = NULL;
    size_t best_d = 1 + strlen(leaf) / 4;   /* a typo or two, not a new word */
    for (int i = 0; i < config_n_keys; i++) {
        const char *kl = strrchr(config_schema[i].path, '.');
        kl = kl ? kl + 1 : config_schema[i].path;
        if (strcmp(kl, leaf) == 0) return config_schema[i].path;   /* the right key, another section */
        size_t d = text_edit_distance(path, strlen(path), config_schema[i].path, strlen(config_schema[i].path));
        if (d <= best_d && (!best || d < best_d)) {
            best = config_schema[i].path;
            best_d = d;
        }
    }
    return best;
}

TfmStatus config_unknown_key(const char *shown, const char *path, TfmErr *err)
{
    const char *hint = config_suggest_key(path);
    if (hint) return err_set(err, TFM_ERR_CONFIG, "%s: unknown key (did you mean %s?)", shown, hint);
    return err_set(err, TFM_ERR_CONFIG, "%s: unknown key", shown);
}

/* ---- command-line overrides ---- */

/* The JSON value of one `--set KEY=VALUE`: VALUE as JSON when it parses
 * (3, true, null, "x"), else as a string; string keys take VALUE as it is
 * unless it is null or quoted. Input paths are made absolute here, since on
 * the command line they are relative to the current folder, not the
 * config's. */
static cJSON *override_value(const KeySpec *k, const char *value, TfmErr *err)
{
    cJSON *v = NULL;
    bool str_key = k->type == K_STR || k->type == K_STR_NULL;
    if (!str_key || strcmp(value, "null") == 0 || value[0] == '"') {
        TfmErr ignored = {0};
        if (json_strict_parse(value, strlen(value), &v, &ignored) != TFM_OK) v = NULL;
    }
    if (!v && (k->flags & F_INPUT) && value[0] && value[0] != '/') {
        char cwd[4096];
        if (!getcwd(cwd, sizeof cwd)) {
            err_set(err, TFM_ERR_IO, "cannot read the current folder: %s", strerror(errno));
            return NULL;
        }
        char *abs = path_join(cwd, value, err);
        if (!abs) return NULL;
        v = cJSON_CreateString(abs);
        free(abs);
    } else if (!v) {
        v = cJSON_CreateString(value);
    }
    if (!v) err_set(err, TFM_ERR_NOMEM, "out of memory");
    return v;
}

/* Puts each "KEY=VALUE" of sets into the JSON tree (creating sections as
 * needed), after checking the key and the value as the file's would be
 * checked. Errors start "--set KEY: ". */
TfmStatus config_apply_overrides(TfmConfig *cfg, cJSON *root, const char *const *sets, int n_sets,
                                 TfmErr *err)
{
    for (int s = 0; s < n_sets; s++) {
        const char *eq = strchr(sets[s], '=');
        char key[192];
        size_t kn = eq ? (size_t)(eq - sets[s]) : strlen(sets[s]);
        if (!eq || kn == 0 || kn >= sizeof key)
            return err_set(err, TFM_ERR_USAGE, "--set: expected KEY=VALUE, got '%s'", sets[s]);
        memcpy(key, sets[s], kn);
        key[kn] = '\0';
        for (size_t j = 0; j < kn; j++)
            if (!(key[j] == '.' || key[j] == '_' || (key[j] >= 'a' && key[j] <= 'z') ||
                  (key[j] >= 'A' && key[j] <= 'Z') || (key[j] >= '0' && key[j] <= '9')))
                return err_set(err, TFM_ERR_USAGE, "--set: KEY must be a config key such as "
                               "train.max_steps, got a key with character 0x%02X",
                               (unsigned char)key[j]);
        int i = config_spec_find(key);
        if (i < 0) {
            char shown[200];
            snprintf(shown, sizeof shown, "--set %s", key);
            if (config_is_section(key))
                return err_set(err, TFM_ERR_CONFIG, "%s: is a section; set one of its keys", shown);
            return config_unknown_key(shown, key, err);
        }
        cJSON *v = override_value(&config_schema[i], eq + 1, err);
        if (!v) return err->status;
        TfmStatus st = config_set_value(cfg, &config_schema[i], v, err);
        if (st != TFM_OK) {
            cJSON_Delete(v);
            err_prefix(err, "--set ");
            return st;
        }
        /* walk down the sections, making the missing ones */
        cJSON *obj = root;
        char part[192];
        const char *p = key;
        for (const char *dot; (dot = strchr(p, '.')); p = dot + 1) {
            memcpy(part, p, (size_t)(dot - p));
            part[dot - p] = '\0';
            cJSON *child = cJSON_GetObjectItemCaseSensitive(obj, part);
            if (!child) child = cJSON_AddObjectToObject(obj, part);
            if (!child || !cJSON_IsObject(child)) { obj = NULL; break; }
            obj = child;
        }
        if (!obj) {   /* a section that is not an object: walk reports it */
            cJSON_Delete(v);
            continue;
        }
        if (cJSON_GetObjectItemCaseSensitive(obj, p)) cJSON_ReplaceItemInObjectCaseSensitive(obj, p, v);
        else cJSON_AddItemToObject(obj, p, v);
    }
    return TFM_OK;
}

