/* config_override: loading a config file, with `tfm train --set KEY=VALUE`
 * overrides put into its JSON tree before config.c's checks, and the error
 * prefixed with what it belongs to: the file, or the --set it names. It
 * calls config.c, never the other way. */
#include "model/config_schema.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/path.h"
#include "base/text.h"
#include "model/json_strict.h"

enum { CONFIG_MAX_FILE = 1 << 20 };    /* a config is text */

/* ---- command-line overrides ---- */

/* The JSON value of one `--set KEY=VALUE`: VALUE as JSON when it parses
 * (3, true, null, "x"), else as a string; string keys take VALUE as it is
 * unless it is null or quoted. Input paths are made absolute here, since on
 * the command line they are relative to the current folder, not the
 * config's. */
static cJSON *override_value(const KeySpec *k, const char *value, TfmErr *err)
{
    cJSON *v = NULL;
    bool str_key = k->type == K_STR || k->type == K_STR_NULL || k->type == K_PATHS;
    if (!str_key || strcmp(value, "null") == 0 || value[0] == '"' ||
        (k->type == K_PATHS && value[0] == '[')) {
        TfmErr ignored = {0};
        if (json_strict_parse(value, strlen(value), &v, &ignored) != TFM_OK) v = NULL;
    }
    /* a list of paths: each relative one is relative to the current folder */
    if (v && cJSON_IsArray(v) && (k->flags & F_INPUT)) {
        char cwd[4096];
        if (!getcwd(cwd, sizeof cwd)) {
            cJSON_Delete(v);
            err_set(err, TFM_ERR_IO, "cannot read the current folder: %s", strerror(errno));
            return NULL;
        }
        for (cJSON *e = v->child; e; e = e->next) {
            if (!cJSON_IsString(e) || !e->valuestring[0] || e->valuestring[0] == '/') continue;
            char *abs = path_join(cwd, e->valuestring, err);
            if (!abs || !cJSON_SetValuestring(e, abs)) {
                free(abs);
                cJSON_Delete(v);
                if (err->status == TFM_OK) err_set(err, TFM_ERR_NOMEM, "out of memory");
                return NULL;
            }
            free(abs);
        }
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
 * checked (in cfg, a scratch copy). Errors start "--set KEY: ". */
static TfmStatus apply_overrides(TfmConfig *cfg, cJSON *root, const char *const *sets, int n_sets,
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


/* The length of the key of a --set ("train.lr.peak=0.1": 13). */
static size_t set_key_len(const char *set)
{
    const char *eq = strchr(set, '=');
    return eq ? (size_t)(eq - set) : strlen(set);
}

/* The last --set of key (the one in effect), or NULL. */
static const char *set_of(const char *key, const char *const *sets, int n_sets)
{
    for (int i = n_sets - 1; i >= 0; i--) {
        const size_t n = set_key_len(sets[i]);
        if (n == strlen(key) && strncmp(sets[i], key, n) == 0) return sets[i];
    }
    return NULL;
}

/* Prefixes an error of the file's checks with what it belongs to, by the
 * keys it names (err->keys, never its wording): "--set " when the key it
 * is about came from the command line; "FILE with --set K=V: " when it is
 * about keys together and one of the others did; else "FILE: ". */
static void blame(TfmErr *err, const char *path, const char *const *sets, int n_sets)
{
    if (err->n_keys > 0 && set_of(err->keys[0], sets, n_sets)) {
        err_prefix(err, "--set ");
        return;
    }
    for (int i = 1; i < err->n_keys; i++) {
        const char *other = set_of(err->keys[i], sets, n_sets);
        if (other) {
            err_prefix(err, "%s with --set %s: ", path, other);
            return;
        }
    }
    err_prefix(err, "%s: ", path);
}

TfmStatus config_load(TfmConfig *cfg, const char *path, TfmErr *err)
{
    return config_load_overrides(cfg, path, NULL, 0, err);
}

TfmStatus config_load_overrides(TfmConfig *cfg, const char *path, const char *const *sets,
                                int n_sets, TfmErr *err)
{
    char *text = NULL, *dir = NULL;
    size_t len = 0;
    cJSON *root = NULL;
    TfmStatus st;
    memset(cfg, 0, sizeof *cfg);   /* the contract: nothing to free on error */
    /* errors of reading name the file already */
    if ((st = text_read_file(path, CONFIG_MAX_FILE, "a config", NULL, &text, &len, err)) != TFM_OK)
        goto done;
    /* Data paths are relative to the config's folder; "x.json" has none. */
    const char *slash = strrchr(path, '/');
    if (slash) {
        size_t n = slash == path ? 1 : (size_t)(slash - path);
        if (!(dir = xmalloc(n + 1, err))) { st = TFM_ERR_NOMEM; goto done; }
        memcpy(dir, path, n);
        dir[n] = '\0';
    }
    if ((st = json_strict_parse(text, len, &root, err)) != TFM_OK) {
        err_prefix(err, "%s: ", path);
        goto done;
    }
    /* an error in a --set is the command line's: it says so itself */
    if (n_sets > 0) {
        TfmConfig scratch;
        config_defaults(&scratch);
        st = apply_overrides(&scratch, root, sets, n_sets, err);
        config_free(&scratch);
        if (st != TFM_OK) goto done;
    }
    st = config_parse_tree(cfg, root, dir, true, err);
    if (st == TFM_OK && (st = config_check_decode(cfg, err)) != TFM_OK) config_free(cfg);
    if (st != TFM_OK) blame(err, path, sets, n_sets);
done:
    cJSON_Delete(root);
    free(text);
    free(dir);
    return st;
}
