#!/usr/bin/env bash
# check_walls.sh: the walls between the folders of src/ (docs/architecture.md, "Source
# map"), checked from the text of the files, so that every crossing is one
# greppable line.
#   usage: scripts/check_walls.sh [SRC_DIR]      (default: src)
# Prints one line per violation, then "walls: ok" or "walls: N violations";
# exits 1 on any violation. Rules:
#   1. A file in src/F includes "G/x.h" only for G = F or a lower layer:
#        base < nn, text, dist < model < decode < train, serve < cli
#      (nn, text and dist are side by side: none includes another; so are
#      train and serve), and every
#      quoted include names its folder. Every file is in one of the folders.
#   2. base/, nn/ and text/ do not include cJSON (only configs, --json and
#      the logs, above them, speak JSON).
#   3. A vendor library is included by its wrapper only: <cblas.h> by
#      nn/blas.c, <dnnl.h> by nn/gemm_bf16.c, <mpi.h> by dist/dist_mpi.c,
#      <microhttpd.h> by serve/http.c.
#   4. Only cli/main.c ends or replaces the process: no exit, _exit, _Exit,
#      quick_exit, abort or exec* anywhere else.
# Comments are skipped, so a comment may name what the code may not do.
set -u
SRC=${1:-src}
RANKS="base=0 nn=1 text=1 dist=1 model=2 decode=3 train=4 serve=4 cli=5"
WRAPPERS="cblas.h=nn/blas.c dnnl.h=nn/gemm_bf16.c mpi.h=dist/dist_mpi.c microhttpd.h=serve/http.c"        # header=the one file that may include it
NO_JSON="base nn text"
PROCESS_OWNER=cli/main.c

[ -d "$SRC" ] || { echo "walls: no folder $SRC"; exit 1; }
files=$(cd "$SRC" && find . -name '*.[ch]' | sed 's|^\./||' | sort)
[ -n "$files" ] || { echo "walls: no sources in $SRC"; exit 1; }
cd "$SRC" || exit 1
# shellcheck disable=SC2086
awk -v src="$SRC" -v ranks="$RANKS" -v wrappers="$WRAPPERS" -v nojson="$NO_JSON" \
    -v owner="$PROCESS_OWNER" '
function violation(msg) { print "walls: " src "/" FILENAME ":" FNR ": " msg; bad++ }
BEGIN {
    n = split(ranks, r, " ")
    for (i = 1; i <= n; i++) { split(r[i], kv, "="); rank[kv[1]] = kv[2]; names = names " " kv[1] }
    n = split(wrappers, w, " ")
    for (i = 1; i <= n; i++) { split(w[i], kv, "="); wrapper[kv[1]] = kv[2] }
    n = split(nojson, j, " ")
    for (i = 1; i <= n; i++) no_json[j[i]] = 1
}
FNR == 1 {
    incomment = 0
    folder = FILENAME; sub(/\/.*/, "", folder)
    skip = 0
    if (folder == FILENAME) {
        violation("outside the layer folders (" substr(names, 2) ")"); skip = 1
    } else if (!(folder in rank)) {
        violation("unknown folder " folder "/ (give it a rank in scripts/check_walls.sh and a row in the map of docs/architecture.md)")
        skip = 1
    }
}
skip { next }
{
    # the line without its comments (a /* */ block may span lines)
    line = $0; code = ""
    while (length(line) > 0) {
        if (incomment) {
            e = index(line, "*/")
            if (e == 0) { line = ""; break }
            line = substr(line, e + 2); incomment = 0
        } else {
            s = index(line, "/*"); d = index(line, "//")
            if (d > 0 && (s == 0 || d < s)) { code = code substr(line, 1, d - 1); break }
            if (s == 0) { code = code line; break }
            code = code substr(line, 1, s - 1); line = substr(line, s + 2); incomment = 1
        }
    }
    if (code ~ /^[ \t]*#[ \t]*include/) {
        if (match(code, /"[^"]+"/)) {
            inc = substr(code, RSTART + 1, RLENGTH - 2)
            target = inc; sub(/\/.*/, "", target)
            if (target == inc) violation("#include \"" inc "\" does not name its folder")
            else if (!(target in rank)) violation("#include \"" inc "\": no folder " target "/")
            else if (target != folder && rank[target] >= rank[folder])
                violation(folder "/ includes \"" inc "\" (a layer at or above its own)")
        }
        if ((folder in no_json) && code ~ /cJSON/) violation(folder "/ includes cJSON")
        for (h in wrapper) {
            if (FILENAME != wrapper[h] && (index(code, "<" h ">") || index(code, "\"" h "\"")))
                violation("includes <" h "> (only " wrapper[h] " may)")
        }
    }
    if (FILENAME != owner && code ~ /(^|[^A-Za-z0-9_])(exit|_exit|_Exit|quick_exit|abort|exec[lv]p?e?|fexecve)[ \t]*\(/)
        violation("ends or re-executes the process (only " owner " may)")
}
END {
    if (bad) { print "walls: " bad " violations"; exit 1 }
    print "walls: ok"
}' $files
