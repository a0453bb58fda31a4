/* path: joining file names. */
#include "base/path.h"

#include <stdbool.h>
#include <string.h>

char *path_join(const char *dir, const char *name, TfmErr *err)
{
    if (!dir || !dir[0] || name[0] == '/') return xstrdup(name, err);
    size_t dl = strlen(dir), nl = strlen(name);
    bool slash = dir[dl - 1] == '/';
    char *s = xmalloc(dl + !slash + nl + 1, err);
    if (!s) return NULL;
    memcpy(s, dir, dl);
    if (!slash) s[dl++] = '/';
    memcpy(s + dl, name, nl + 1);
    return s;
}
