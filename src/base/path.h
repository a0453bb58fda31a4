/* path: joining file names. Only string work: nothing here touches the file
 * system. */
#ifndef TFM_PATH_H
#define TFM_PATH_H

#include "base/err.h"

/* dir/name as a malloc'd string (caller frees): name itself when it is
 * absolute or dir is NULL or empty, no doubled '/' when dir ends with one.
 * NULL with TFM_ERR_NOMEM set on failure. */
char *path_join(const char *dir, const char *name, TfmErr *err);

#endif
