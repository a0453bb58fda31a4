/* page: the HTML page GET / serves (one file, no framework, nothing
 * fetched from elsewhere): a text box, a Translate button, the translation
 * and the time it took. */
#ifndef TFM_SERVE_PAGE_H
#define TFM_SERVE_PAGE_H

#include <stddef.h>

extern const char serve_page[];
extern const size_t serve_page_len;

#endif
