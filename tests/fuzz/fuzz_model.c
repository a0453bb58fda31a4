/* fuzz_model: the model/checkpoint reader (ckpt_load) on arbitrary bytes,
 * with the optimizer state. Built with FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION,
 * ckpt.c takes any checksum, so mutations reach the parser behind it. */
#include "fuzz_util.h"
#include "model/ckpt.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    const char *path = fuzz_as_file(data, size);
    ModelFile mf;
    TfmErr err;
    if (ckpt_load(path, &mf, true, &err) == TFM_OK) ckpt_free(&mf);
    return 0;
}
