/* fuzz_reader: the line reader behind every text input (training data,
 * tfm translate's input, bleu's files): plain or gzip (by its magic bytes),
 * with the UTF-8 and NUL checks, on arbitrary bytes. Lines must come back
 * as the bytes of the file (for plain input). */
#include "fuzz_util.h"
#include "base/text.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    const char *path = fuzz_as_file(data, size);
    LineReader r = {0};
    TfmErr err;
    if (text_reader_open(&r, path, &err) != TFM_OK) return 0;
    char *line;
    size_t len, total = 0;
    int got;
    while ((got = text_read_line(&r, &line, &len, &err)) > 0) {
        if (memchr(line, 0, len)) abort();                 /* NULs are refused */
        if (!text_utf8_valid(line, len, NULL)) abort();    /* so is bad UTF-8 */
        total += len + 1;
    }
    (void)total;
    text_reader_close(&r);
    return 0;
}
