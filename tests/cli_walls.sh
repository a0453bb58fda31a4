# cli_walls.sh: scripts/check_walls.sh passes on src/ and fails on each kind
# of violation planted in a copy of it.
. "$(dirname "$0")/cli_lib.sh"
WALLS="$(cd "$(dirname "$0")/.." && pwd)/scripts/check_walls.sh"
SRC="$(cd "$(dirname "$0")/.." && pwd)/src"

walls_ok() { bash "$WALLS" "$1" >"$T/walls.out" 2>&1; }
check "src/ keeps its walls" walls_ok "$SRC"

# plant NAME FILE LINE PATTERN: appends LINE to FILE in a fresh copy of src/;
# the check must fail and name FILE and PATTERN in its report.
plant() {
    local name=$1 file=$2 line=$3 pattern=$4
    rm -rf "$T/src"
    cp -r "$SRC" "$T/src"
    mkdir -p "$(dirname "$T/src/$file")"
    printf '%s\n' "$line" >>"$T/src/$file"
    if bash "$WALLS" "$T/src" >"$T/walls.out" 2>&1; then
        cli_fail "$name: check_walls.sh passed"
    elif ! grep -q "src/$file:.*$pattern" "$T/walls.out"; then
        cli_fail "$name: report does not name $file ($pattern): $(head -c 300 "$T/walls.out")"
    else
        cli_ok
    fi
}
plant "a kernel includes the model" nn/attention.c '#include "model/model.h"' 'includes "model/model.h"'
plant "the base includes training" base/err.c '#include "train/train.h"' 'includes "train/train.h"'
plant "a kernel includes the CLI" nn/ops.c '#include "cli/cmds.h"' 'includes "cli/cmds.h"'
plant "nn and text stay apart" text/bpe.c '#include "nn/layers.h"' 'includes "nn/layers.h"'
plant "the model includes decoding" model/model.c '#include "decode/decoder.h"' 'includes "decode/decoder.h"'
plant "the model includes the pipeline" model/ckpt.h '#include "decode/pipeline.h"' 'includes "decode/pipeline.h"'
plant "decoding includes the server" decode/pipeline.c '#include "serve/batcher.h"' 'includes "serve/batcher.h"'
plant "decoding includes training" decode/step.c '#include "train/trainer.h"' 'includes "train/trainer.h"'
plant "decoding includes the CLI" decode/decoder.h '#include "cli/cmds.h"' 'includes "cli/cmds.h"'
plant "an include without its folder" model/model.c '#include "layers.h"' 'does not name its folder'
plant "the base includes cJSON" base/text.c '#include <cJSON.h>' 'includes cJSON'
plant "a kernel includes cJSON" nn/loss.c '#include <cjson/cJSON.h>' 'includes cJSON'
plant "cblas.h outside the wrapper" decode/decoder.c '#include <cblas.h>' 'includes <cblas.h>'
plant "exit outside main.c" train/train.c 'static void f(void) { exit(1); }' 'ends or re-executes'
plant "_exit outside main.c" cli/cmd_train.c 'static void f(void) { _exit(1); }' 'ends or re-executes'
plant "abort outside main.c" model/ckpt.c 'static void f(void) { abort(); }' 'ends or re-executes'
plant "re-exec outside main.c" nn/blas.c 'static void f(char **a) { execv("/proc/self/exe", a); }' 'ends or re-executes'
plant "a file outside the folders" stray.c 'int stray;' 'outside the layer folders'

# decode/ sits on model/, nn/, text/ and base/; serve/, train/ and cli/ sit on it.
rm -rf "$T/src"; cp -r "$SRC" "$T/src"
printf '%s\n' '#include "model/model.h"' '#include "nn/layers.h"' '#include "text/bpe.h"' \
    '#include "base/err.h"' >>"$T/src/decode/step.c"
printf '%s\n' '#include "decode/step.h"' >>"$T/src/serve/reply.c"
printf '%s\n' '#include "decode/search.h"' >>"$T/src/train/evaluate.c"
printf '%s\n' '#include "decode/decoder.h"' >>"$T/src/cli/cmd_info.c"
check "decode/ may include the layers below it, and be included from above" walls_ok "$T/src"

# Comments may name what the code may not do; atomic_abort() is not abort().
rm -rf "$T/src"; cp -r "$SRC" "$T/src"
printf '%s\n' '/* never exit(1) here */' '// nor abort()' 'static void f(void) { atomic_abort(0); }' \
    >>"$T/src/train/train.c"
check "comments and look-alike names pass" walls_ok "$T/src"
cli_summary
