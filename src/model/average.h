/* average: the element-wise mean of the parameters of checkpoints of one run
 * (the paper averages the last 5 or 20; it smooths the noise of the last
 * updates). One owner for `tfm average` and train.average_last. */
#ifndef TFM_AVERAGE_H
#define TFM_AVERAGE_H

#include "model/ckpt.h"

/* Loads the n >= 1 model files at paths and leaves their mean in out (the
 * first file's config and vocabulary; no optimizer or trainer state), which
 * the caller frees with ckpt_free. The models must agree in tensor shapes,
 * vocabulary, heads, norm and max_len. Errors: those of ckpt_load;
 * TFM_ERR_FORMAT "PATH: model shape|vocabulary|model.heads|... differs from
 * FIRST's"; TFM_ERR_NOMEM. */
TfmStatus average_models(const char *const *paths, int n, ModelFile *out, TfmErr *err);

#endif
