/* fuzz_spm: the SentencePiece model reader (spm_from_bytes), then what a
 * loaded model must do: encode a hostile line into pieces of its vocabulary
 * that cover the normalized line, and decode them again. */
#include "fuzz_util.h"
#include "text/spm.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    Spm *m = NULL;
    TfmErr err;
    if (spm_from_bytes(&m, data, size, "fuzz", &err) != TFM_OK) return 0;
    static const char line[] = "  Ein Mann l\xc3\xa4uft \xef\xac\x81 \xff\xc3 <s> \xe2\x96\x81\t3 "
                               "\xf0\x9f\x98\x80\x00x  ";
    SpmWork w = {0};
    if (spm_encode(m, &w, line, sizeof line - 1, &err) == TFM_OK) {
        for (size_t i = 0; i < w.n_tok; i++)
            if (w.tok[i].id < 0 || w.tok[i].id >= spm_vocab_size(m) || w.tok[i].len == 0) abort();
        char *out = NULL;
        size_t len = 0, cap = 0;
        if (spm_decode(m, w.tok, w.n_tok, &out, &len, &cap, &err) != TFM_OK && err.status != TFM_ERR_NOMEM)
            abort();
        free(out);
    }
    spm_work_free(&w);
    spm_free(m);
    return 0;
}
