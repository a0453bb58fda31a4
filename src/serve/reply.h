/* reply: the JSON bodies the server answers with. */
#ifndef TFM_SERVE_REPLY_H
#define TFM_SERVE_REPLY_H

#include "serve/batcher.h"
#include "base/buf.h"
#include "serve/request.h"

/* {"error": "msg"} */
void reply_error(Buf *o, const char *msg);

/* A finished job's translations, in the request's form: tfm's
 * {"translations": [...]} (a list, also for one string in), with "nbest"
 * when asked; LibreTranslate's {"translatedText": ...} in the shape of its
 * "q" (and "alternatives" when asked, empty lists for HTML, and
 * "detectedLanguage" for "source": "auto"). Both get "warnings" when a line was
 * cut to the model's length. */
void reply_translations(Buf *o, const Request *r, const ServeJob *job);

/* POST /detect as LibreTranslate answers it, [{"confidence": 100.0,
 * "language": source}]: nothing is detected, the model reads one language
 * (without --source-lang: "und", confidence 0.0). */
void reply_detect(Buf *o, const char *source);

/* GET /languages as LibreTranslate answers it: each language with the
 * codes it translates to (the server's one pair; [] when not given). */
void reply_languages(Buf *o, const char *source, const char *target);

#endif
