/* data_print: a fingerprint of a run's data files (each file's real path,
 * size and a hash of samples of its bytes), kept in its checkpoints so that
 * a resumed run can tell that it would read other data than the run it
 * continues (which has no meaning for its data position, and made its best
 * model on another validation set). */
#ifndef TFM_DATA_PRINT_H
#define TFM_DATA_PRINT_H

#include "base/err.h"
#include "model/config.h"

/* The fingerprint of cfg's training and validation files, one line per file
 * (docs/model-format.md, DATA); malloc'd. Errors: TFM_ERR_IO naming the
 * file, TFM_ERR_NOMEM. */
char *data_print_make(const TfmConfig *cfg, TfmErr *err);

/* TFM_OK when `now` (this run's fingerprint) is `saved` (the checkpoint's at
 * ckpt_path); else TFM_ERR_CONFIG, one line naming the first file that
 * differs, how, and the ways out (train.init, --restart). */
TfmStatus data_print_compare(const char *saved, const char *now, const char *ckpt_path,
                             TfmErr *err);

#endif
