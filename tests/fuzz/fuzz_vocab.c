/* fuzz_vocab: the vocabulary reader (bpe_deserialize), then what a loaded
 * vocabulary must do: serialize to what reads back the same, and encode and
 * decode a line losslessly. */
#include "fuzz_util.h"
#include "text/bpe.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    Bpe *bpe = NULL;
    TfmErr err;
    if (bpe_deserialize(&bpe, (const char *)data, size, "fuzz", &err) != TFM_OK) return 0;
    size_t len = 0;
    char *text = bpe_serialize(bpe, &len);
    Bpe *again = NULL;
    if (!text || bpe_deserialize(&again, text, len, "fuzz", &err) != TFM_OK) abort();
    size_t len2 = 0;
    char *text2 = bpe_serialize(again, &len2);
    if (!text2 || len2 != len || memcmp(text, text2, len) != 0) abort();
    static const char line[] = "Ein Mann läuft über die Straße, 3 Hunde \xf0\x9f\x98\x80 <s> \\";
    int *ids = NULL, n = 0;
    int ids_cap = 0;
    if (bpe_encode(bpe, line, sizeof line - 1, &ids, &n, &ids_cap, &err) == TFM_OK) {
        char *out = NULL;
        size_t out_len = 0, out_cap = 0;
        if (bpe_decode(bpe, ids, n, &out, &out_len, &out_cap, &err) != TFM_OK ||
            out_len != sizeof line - 1 || memcmp(out, line, out_len) != 0)
            abort();                                 /* encoding is lossless */
        free(out);
    }
    free(ids);
    free(text), free(text2);
    bpe_free(bpe);
    bpe_free(again);
    return 0;
}
