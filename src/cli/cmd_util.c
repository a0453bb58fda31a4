/* cmd_util: small helpers shared by the cmd_* modules. */
#include <ctype.h>
#include <stdio.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/atomic_file.h"
#include "base/text.h"
#include "model/ckpt.h"
#include "cli/cmds.h"

int cmd_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) return 0;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) return 1;
    }
    return 0;
}

bool cmd_parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi) return false;
    *out = v;
    return true;
}

bool cmd_parse_double(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v) || v < lo || v > hi) return false;
    *out = v;
    return true;
}

/* The name of an option word: no leading dashes, no "=value", '_' as '-'. */
static size_t option_word(const char *arg, char *name, size_t size)
{
    arg += strspn(arg, "-");
    size_t n = strcspn(arg, "=");
    if (n >= size) return 0;
    for (size_t i = 0; i < n; i++) name[i] = arg[i] == '_' ? '-' : arg[i];
    name[n] = '\0';
    return n;
}

TfmStatus cmd_unknown_option(const char *cmd, const char *arg, const struct option *longopts,
                             const OptionAlias *aliases, TfmErr *err)
{
    char name[64];
    size_t n = option_word(arg, name, sizeof name);
    const char *hint = NULL;
    for (const OptionAlias *a = aliases; n && a && a->theirs && !hint; a++)
        if (strcmp(a->theirs, name) == 0) hint = a->ours;
    char ours[72];
    if (n && !hint) {
        TextNearest near;
        size_t edits = text_typo_edits(n) > 2 ? text_typo_edits(n) : 2;
        text_nearest_start(&near, name, n, n > 2 ? edits : 0);
        for (const struct option *o = longopts; o->name; o++) {
            if (strcmp(o->name, "help") == 0) continue;
            text_nearest_offer(&near, o->name, strlen(o->name));
        }
        if (near.best) {
            snprintf(ours, sizeof ours, "--%.*s", (int)near.best_len, near.best);
            hint = ours;
        }
    }
    if (hint)
        return err_set(err, TFM_ERR_USAGE, "%s: unknown option '%s' (did you mean %s?)", cmd, arg,
                       hint);
    return err_set(err, TFM_ERR_USAGE, "%s: unknown option '%s' (see tfm %.*s --help)", cmd, arg,
                   (int)strcspn(cmd, " "), cmd);
}

/* Does option word arg (as on the command line) take its value from the
 * next word? */
static bool takes_next_word(const char *arg, const char *optstring, const struct option *longopts)
{
    if (arg[0] != '-' || !arg[1]) return false;
    if (arg[1] == '-') {
        size_t n = strcspn(arg + 2, "=");
        if (arg[2 + n] == '=') return false;
        for (const struct option *o = longopts; o->name; o++)
            if (strlen(o->name) == n && strncmp(o->name, arg + 2, n) == 0)
                return o->has_arg == required_argument;
        return false;
    }
    const char *c = strchr(optstring, arg[1]);
    return c && arg[1] != ':' && c[1] == ':' && !arg[2];
}

TfmStatus cmd_check_single_dash(const char *cmd, int argc, char **argv, const char *optstring,
                                const struct option *longopts, const OptionAlias *aliases,
                                TfmErr *err)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0) break;
        if (takes_next_word(arg, optstring, longopts)) {
            i++;
            continue;
        }
        if (arg[0] != '-' || !isalpha((unsigned char)arg[1]) || !arg[2]) continue;
        char name[64];
        if (!option_word(arg, name, sizeof name)) continue;
        bool refuse = !strchr(optstring, arg[1]);
        for (const struct option *o = longopts; !refuse && o->name; o++)
            refuse = strcmp(o->name, name) == 0;
        for (const OptionAlias *a = aliases; !refuse && a && a->theirs; a++)
            refuse = strcmp(a->theirs, name) == 0;
        if (refuse) return cmd_unknown_option(cmd, arg, longopts, aliases, err);
    }
    return TFM_OK;
}

CmdGetopt cmd_getopt_start(const char *cmd, int argc, char **argv, const char *optstring,
                           const struct option *longopts, const OptionAlias *aliases)
{
    optind = 0;         /* glibc: full re-initialisation (a parser may have run before) */
    opterr = 0;
    return (CmdGetopt){.cmd = cmd, .argc = argc, .argv = argv, .optstring = optstring,
                       .longopts = longopts, .aliases = aliases};
}

int cmd_getopt_next(CmdGetopt *g, TfmErr *err)
{
    int longindex = -1;
    int c = getopt_long(g->argc, g->argv, g->optstring, g->longopts, &longindex);
    if (c == -1) return CMD_GETOPT_END;
    /* argv[optind - 1] is the value when it came as a separate argument */
    if (longindex >= 0) snprintf(g->opt, sizeof g->opt, "--%s", g->longopts[longindex].name);
    else snprintf(g->opt, sizeof g->opt, "-%c", c);
    if (c == ':') {
        err_set(err, TFM_ERR_USAGE, "%s: option '%s' needs a value", g->cmd, g->argv[optind - 1]);
        return CMD_GETOPT_ERROR;
    }
    if (c == '?') {
        const char *arg = g->argv[optind - 1];
        if (g->unknown) g->unknown(arg, g->longopts, err);
        else cmd_unknown_option(g->cmd, arg, g->longopts, g->aliases, err);
        return CMD_GETOPT_ERROR;
    }
    return c;
}

TfmStatus cmd_model_writer_args(const char *cmd, int argc, char **argv, int min_models,
                                const char **out, int *first, int *n, bool *help, TfmErr *err)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *out = NULL;
    *help = false;
    CmdGetopt g = cmd_getopt_start(cmd, argc, argv, ":o:h", longopts, NULL);
    int c;
    while ((c = cmd_getopt_next(&g, err)) >= 0) {
        if (c == 'o') *out = optarg;
        if (c == 'h') {
            *help = true;
            return TFM_OK;
        }
    }
    if (c == CMD_GETOPT_ERROR) return err->status;
    if (!*out) return err_set(err, TFM_ERR_USAGE, "%s: missing -o OUT (see tfm %s --help)", cmd, cmd);
    *first = optind;
    *n = argc - optind;
    if (min_models == 1 && *n != 1)
        return err_set(err, TFM_ERR_USAGE, "%s: expected one MODEL (see tfm %s --help)", cmd, cmd);
    if (*n < min_models)
        return err_set(err, TFM_ERR_USAGE, "%s: expected at least %d models, got %d", cmd,
                       min_models, *n);
    for (int k = 0; k < *n; k++)
        if (atomic_same_file(*out, argv[optind + k]))
            return err_set(err, TFM_ERR_USAGE, "%s: -o '%s' is also an input model; it would "
                           "be overwritten", cmd, *out);
    return ckpt_check_replaceable(*out, err);
}
