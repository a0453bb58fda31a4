/* fuzz_bpe: encode then decode arbitrary bytes with a vocabulary learned
 * once from tests/data/mini (FUZZ_DATA overrides the folder): encoding is
 * lossless for any input, so decode(encode(x)) must be x byte for byte. */
#include "fuzz_util.h"
#include "text/bpe.h"

static Bpe *vocab;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    const char *dir = getenv("FUZZ_DATA") ? getenv("FUZZ_DATA") : "tests/data/mini";
    char de[512], en[512];
    snprintf(de, sizeof de, "%s/train.de", dir);
    snprintf(en, sizeof en, "%s/train.en", dir);
    const char *paths[] = {de, en};
    TfmErr err;
    if (bpe_learn(&vocab, paths, 2, 600, &err) != TFM_OK) {
        fprintf(stderr, "fuzz_bpe: cannot learn a vocabulary from %s: %s\n", dir, err.msg);
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    static int *ids;
    static int ids_cap;
    static char *out;
    static size_t out_cap;
    if (memchr(data, '\n', size)) return 0;        /* one line, as encoding takes it */
    int n = 0;
    size_t len = 0;
    TfmErr err;
    if (bpe_encode(vocab, (const char *)data, size, &ids, &n, &ids_cap, &err) != TFM_OK) abort();
    if (bpe_decode(vocab, ids, n, &out, &len, &out_cap, &err) != TFM_OK) abort();
    if (len != size || memcmp(out, data, size) != 0) abort();
    return 0;
}
