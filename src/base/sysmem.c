/* sysmem: available memory from /proc/meminfo and cgroup v2, sysconf otherwise. */
#include "base/sysmem.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The first number in a small file, or -1 (missing, or "max"). */
static double read_number(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    double v;
    int ok = fscanf(f, "%lf", &v) == 1;
    fclose(f);
    return ok ? v : -1;
}

static double meminfo_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return -1;
    char line[256];
    double kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
    fclose(f);
    return kb >= 0 ? kb * 1024 : -1;
}

double sysmem_resident(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    double kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %lf kB", &kb) == 1) break;
    fclose(f);
    return kb * 1024;
}

double sysmem_available(void)
{
    /* MemAvailable, not the total: memory other processes hold is not ours */
    double have = meminfo_available();
    if (have < 0) have = (double)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE);
    /* a container's limit is lower than what the host reports */
    double max = read_number("/sys/fs/cgroup/memory.max"),
           cur = read_number("/sys/fs/cgroup/memory.current");
    if (max >= 0 && cur >= 0 && (have <= 0 || max - cur < have)) have = max > cur ? max - cur : 0;
    return have > 0 ? have : 0;
}

TfmStatus sysmem_check(double need, const char *what, const char *hint, TfmErr *err)
{
    double have = sysmem_available();
    /* 80%: leave room for what the estimate leaves out (libraries, stacks) */
    if (have > 0 && !(need <= 0.8 * have))
        return err_set(err, TFM_ERR_NOMEM, "%s needs about %.1f GB of memory, this machine has "
                       "%.1f GB available (%s)", what, need / 1e9, have / 1e9, hint);
    return TFM_OK;
}
